"""End to end on a cluster: the components and `kai fake-nodes` as processes over an API server.

4 fake nodes × 8 GPUs. Each test submits its own objects (label e2e=true, namespace kai-e2e) and cleans up.
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.checks import at_most, hold, never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, queue, suspended_job

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)


def test_a_job_is_grouped_placed_bound_and_run(clean: Cluster) -> None:
    job = clean.create(suspended_job("train-job", "default-queue"))
    for i in range(2):
        clean.create(pod(f"train-job-{i}", owner=job, labels={"app": "train-job"}))
    clean.wait(
        "both pods Running",
        lambda: [p.get("status", {}).get("phase") for p in clean.pods("app=train-job")] == ["Running", "Running"],
    )
    groups, _ = clean.store.list("podgroups", NAMESPACE)
    names = {g["metadata"]["name"] for g in groups}
    assert f"pg-train-job-{job['metadata']['uid']}" in names
    requests, _ = clean.store.list("bindrequests", NAMESPACE)
    assert {r.get("status", {}).get("phase") for r in requests if r["spec"]["podName"].startswith("train-job")} == {
        "Succeeded"
    }

    # The Scheduled events carry the time kubectl shows as LAST SEEN (written in the background, so waited for).
    def scheduled() -> list[dict[str, object]]:
        events, _ = clean.store.list("events", NAMESPACE)
        return [
            e
            for e in events
            if e.get("reason") == "Scheduled" and str(e["involvedObject"]["name"]).startswith("train-job-")
        ]

    clean.wait("the Scheduled events of both pods", lambda: len(scheduled()) == 2, timeout=30)
    for event in scheduled():
        assert event.get("lastTimestamp") and event.get("firstTimestamp") and event.get("count") == 1, event


def test_a_bound_pod_has_the_binders_bound_event_after_the_schedulers_scheduled(clean: Cluster) -> None:
    """`kubectl describe pod` of a placed pod, as a KAI user reads it: the scheduler's `Scheduled` and the binder's
    `Normal Bound` (KAI's binder, §8.1), both of the pod's uid; the binder creates it as its own ServiceAccount
    (a missing `events` create in its ClusterRole fails the test through the `clean` fixture)."""
    made = clean.create(pod("bound-event", labels={"app": "bound-event"}))
    uid = made["metadata"]["uid"]

    def reasons() -> dict[str, dict[str, object]]:
        events, _ = clean.store.list("events", NAMESPACE)
        mine = [e for e in events if e["involvedObject"].get("uid") == uid]
        return {str(e["reason"]): e for e in mine}

    clean.wait("the Scheduled and Bound events of the pod", lambda: {"Scheduled", "Bound"} <= set(reasons()))
    bound = reasons()["Bound"]
    assert bound["type"] == "Normal" and bound["source"] == {"component": "binder"}, bound
    node = clean.bound("app=bound-event")[0]["spec"]["nodeName"]
    assert bound["message"] == f"Pod {NAMESPACE}/bound-event bound to node {node}", bound


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
    hold(3, lambda: at_most(clean, "app=big-gang", 0))
    clean.store.delete("pods", "big-gang-4", NAMESPACE, grace_period_seconds=0)
    clean.store.patch("podgroups", "big-gang", NAMESPACE, {"spec": {"minMember": 4}})
    clean.wait("the four gang pods bound", lambda: len(clean.bound("app=big-gang")) == 4)
    never_over_committed(clean)


def test_two_24_pod_gangs_on_32_gpus_one_binds_whole_the_other_waits(clean: Cluster) -> None:
    """Submitted interleaved, two gangs of 24 one-GPU pods cannot both fit on 32 GPUs: one binds 24 and the other
    none (no 16 + 16 deadlock); when the first finishes, the second binds 24."""
    for gang in ("gang-x", "gang-y"):
        clean.create(podgroup(gang, min_member=24, queue="default-queue"))
    for i in range(24):
        for gang in ("gang-x", "gang-y"):
            clean.create(pod(f"{gang}-{i}", group=gang, labels={"app": gang}))

    def counts() -> list[int]:
        return sorted(len(clean.bound(f"app={g}")) for g in ("gang-x", "gang-y"))

    clean.wait("one gang bound whole", lambda: counts()[1] == 24)
    hold(3, lambda: _assert_equal(counts(), [0, 24]))
    never_over_committed(clean)
    first = "gang-x" if len(clean.bound("app=gang-x")) == 24 else "gang-y"
    second = "gang-y" if first == "gang-x" else "gang-x"
    for p in clean.pods(f"app={first}"):
        clean.store.delete("pods", p["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
    clean.wait("the second gang bound whole", lambda: len(clean.bound(f"app={second}")) == 24)
    never_over_committed(clean)


def test_a_queue_limit_holds(clean: Cluster) -> None:
    clean.create(queue("e2e-limited", gpu_quota=0, gpu_limit=8))
    for i in range(3):
        clean.create(pod(f"limited-{i}", gpus=4, queue="e2e-limited", labels={"app": "limited"}))
    clean.wait("two pods bound", lambda: len(clean.bound("app=limited")) == 2)
    hold(3, lambda: at_most(clean, "app=limited", 2))


def test_reclaim_gives_a_team_its_quota_back(clean: Cluster) -> None:
    """team-b fills all 32 GPUs (over its quota of 16); team-a's 16-pod gang reclaims 16 of them."""
    clean.create(queue("e2e-a", gpu_quota=16))
    clean.create(queue("e2e-b", gpu_quota=16))
    for i in range(32):
        clean.create(pod(f"b-{i}", queue="e2e-b", labels={"app": "team-b"}))
    clean.wait("team-b on all 32 GPUs", lambda: len(clean.bound("app=team-b")) == 32)
    clean.create(podgroup("a-gang", min_member=16, queue="e2e-a"))
    for i in range(16):
        clean.create(pod(f"a-{i}", group="a-gang", queue="e2e-a", labels={"app": "team-a"}))
    clean.wait("team-a's gang bound", lambda: len(clean.bound("app=team-a")) == 16, timeout=120)
    assert len(clean.bound("app=team-b")) == 16
    never_over_committed(clean)


def test_a_higher_priority_pod_preempts_a_preemptible_one(clean: Cluster) -> None:
    """Four 8-GPU `train` (preemptible) pods fill the cluster; an 8-GPU `inference` pod of the same queue evicts
    one of them and takes its node. (The queue deserves the 32 GPUs: a non-preemptible job may use only its
    queue's deserved share.)"""
    clean.create(queue("e2e-p", gpu_quota=32))
    for i in range(4):
        clean.create(pod(f"low-{i}", gpus=8, queue="e2e-p", priority_class="train", labels={"app": "low"}))
    clean.wait("the four train pods bound", lambda: len(clean.bound("app=low")) == 4)
    clean.create(pod("high", gpus=8, queue="e2e-p", priority_class="inference", labels={"app": "high"}))
    clean.wait("the inference pod bound", lambda: len(clean.bound("app=high")) == 1, timeout=120)
    assert len(clean.bound("app=low")) == 3
    never_over_committed(clean)


def test_a_stale_gang_is_evicted_after_its_grace_period(clean: Cluster) -> None:
    """A running gang of two that loses a pod is below its minimum: after its 2 s staleness grace period the
    scheduler evicts the pod left, so the gang stops holding a GPU it cannot use."""
    clean.create(podgroup("stale", min_member=2, queue="default-queue", staleness_grace="2s"))
    for i in range(2):
        clean.create(pod(f"stale-{i}", group="stale", labels={"app": "stale"}))
    clean.wait(
        "the gang Running",
        lambda: [p.get("status", {}).get("phase") for p in clean.pods("app=stale")] == ["Running", "Running"],
    )
    clean.store.delete("pods", "stale-1", NAMESPACE, grace_period_seconds=0)
    clean.wait("the gang's last pod evicted", lambda: not clean.pods("app=stale"), timeout=60)


def _assert_equal(got: list[int], want: list[int]) -> None:
    assert got == want, f"bound per gang {got}, expected {want}"


def test_the_binders_controller_metrics_count_the_bind_and_its_lines_start_with_the_time(clean: Cluster) -> None:
    """What an SRE's controller-runtime dashboard reads from the binder: a bind is one successful reconcile of the
    `bindrequest` controller, its requests are counted by code and method; its text log lines start with the
    time (a process run outside a container runtime has nothing else adding it)."""
    port = clean.processes.ports["binder"]

    def sample(name: str, labels: dict[str, str]) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    success = {"controller": "bindrequest", "result": "success"}
    before = sample("controller_runtime_reconcile_total", success)
    clean.create(pod("metrics-bind", labels={"app": "metrics-bind"}))
    clean.wait("the pod bound", lambda: len(clean.bound("app=metrics-bind")) == 1)
    clean.wait("the bind counted", lambda: sample("controller_runtime_reconcile_total", success) >= before + 1)
    assert sample("rest_client_requests_total", {"code": "200", "method": "GET"}) > 0
    assert sample("workqueue_adds_total", {"name": "bindrequest"}) >= 1
    first = clean.processes.log_of("binder").splitlines()[0]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO|WARNING|ERROR|DEBUG) ", first), first
