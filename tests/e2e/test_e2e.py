"""End to end on a cluster: the components and `kai fake-nodes` as processes over a real API server.

4 fake nodes × 8 GPUs. Each test submits its own objects (label e2e=true, namespace kai-e2e) and cleans up.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.e2e.harness import GPU, NAMESPACE, Cluster, gpus_by_node, pod, podgroup, queue, suspended_job

CAPACITY = 8.0


def _never_over_committed(cluster: Cluster) -> None:
    used = gpus_by_node(cluster.pods())
    assert all(v <= CAPACITY for v in used.values()), f"a node holds more GPUs than it has: {used}"


def _hold(cluster: Cluster, seconds: float, check: Callable[[], None]) -> None:
    """Run an assertion repeatedly for a while: for what must not happen, however long one waits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        check()
        time.sleep(0.5)


def test_a_job_is_grouped_placed_bound_and_run(clean: Cluster) -> None:
    job = clean.create(suspended_job("train-job", "default-queue"))
    for i in range(2):
        clean.create(pod(f"train-job-{i}", owner=job, labels={"app": "train-job"}))
    clean.wait("both pods Running", lambda: [p.get("status", {}).get("phase") for p in clean.pods("app=train-job")]
               == ["Running", "Running"])
    groups, _ = clean.store.list("podgroups", NAMESPACE)
    names = {g["metadata"]["name"] for g in groups}
    assert f"pg-train-job-{job['metadata']['uid']}" in names
    requests, _ = clean.store.list("bindrequests", NAMESPACE)
    assert {r.get("status", {}).get("phase") for r in requests if r["spec"]["podName"].startswith("train-job")} == {
        "Succeeded"}


def test_a_gang_is_placed_whole_or_not_at_all(clean: Cluster) -> None:
    """A gang of five 8-GPU pods on four 8-GPU nodes: none is bound, and the PodGroup says why; with
    minMember lowered to four the four are bound together."""
    clean.create(podgroup("big-gang", min_member=5, queue="default-queue"))
    for i in range(5):
        clean.create(pod(f"big-gang-{i}", gpus=8, group="big-gang", labels={"app": "big-gang"}))

    def unschedulable() -> bool:
        status = clean.store.get("podgroups", "big-gang", NAMESPACE).get("status", {})
        return bool(status.get("schedulingConditions"))

    clean.wait("the gang's unschedulable condition", unschedulable)
    _hold(clean, 3, lambda: _assert_at_most(clean, "app=big-gang", 0))
    clean.store.delete("pods", "big-gang-4", NAMESPACE, grace_period_seconds=0)
    clean.store.patch("podgroups", "big-gang", NAMESPACE, {"spec": {"minMember": 4}})
    clean.wait("the four gang pods bound", lambda: len(clean.bound("app=big-gang")) == 4)
    _never_over_committed(clean)


def test_a_queue_limit_holds(clean: Cluster) -> None:
    clean.create(queue("e2e-limited", gpu_quota=0, gpu_limit=8))
    try:
        for i in range(3):
            clean.create(pod(f"limited-{i}", gpus=4, queue="e2e-limited", labels={"app": "limited"}))
        clean.wait("two pods bound", lambda: len(clean.bound("app=limited")) == 2)
        _hold(clean, 3, lambda: _assert_at_most(clean, "app=limited", 2))
    finally:
        clean.store.delete("queues", "e2e-limited")


def test_reclaim_gives_a_team_its_quota_back(clean: Cluster) -> None:
    """team-b fills all 32 GPUs (over its quota of 16); team-a's 16-pod gang reclaims 16 of them."""
    clean.create(queue("e2e-a", gpu_quota=16))
    clean.create(queue("e2e-b", gpu_quota=16))
    try:
        for i in range(32):
            clean.create(pod(f"b-{i}", queue="e2e-b", labels={"app": "team-b"}))
        clean.wait("team-b on all 32 GPUs", lambda: len(clean.bound("app=team-b")) == 32)
        clean.create(podgroup("a-gang", min_member=16, queue="e2e-a"))
        for i in range(16):
            clean.create(pod(f"a-{i}", group="a-gang", queue="e2e-a", labels={"app": "team-a"}))
        clean.wait("team-a's gang bound", lambda: len(clean.bound("app=team-a")) == 16, timeout=120)
        assert len(clean.bound("app=team-b")) == 16
        _never_over_committed(clean)
    finally:
        clean.delete_everything_submitted()
        for name in ("e2e-a", "e2e-b"):
            clean.store.delete("queues", name)


def test_a_scheduler_killed_mid_work_double_books_nothing_and_loses_nothing(clean: Cluster) -> None:
    for i in range(24):
        clean.create(pod(f"restart-{i}", gpus=1, labels={"app": "restart"}))
    time.sleep(1.0)
    clean.processes.kill("scheduler")
    _never_over_committed(clean)
    clean.processes.start_component("scheduler")
    clean.wait("all 24 pods bound", lambda: len(clean.bound("app=restart")) == 24)
    _never_over_committed(clean)
    requests, _ = clean.store.list("bindrequests", NAMESPACE)
    per_pod: dict[str, int] = {}
    for r in requests:
        if r["spec"]["podName"].startswith("restart-") and r.get("status", {}).get("phase") == "Succeeded":
            per_pod[r["spec"]["podName"]] = per_pod.get(r["spec"]["podName"], 0) + 1
    assert sorted(per_pod.values()) == [1] * 24


def _assert_at_most(cluster: Cluster, selector: str, count: int) -> None:
    bound = cluster.bound(selector)
    assert len(bound) <= count, f"{len(bound)} bound, the limit allows {count}"


__all__ = ["GPU"]
