"""End to end with scheduler shards (docs/shards.md): two more scheduler processes, `--partition-label-value a`
and `b`, each over its own fake node (`kai fake-nodes --node-pool`), beside the suite's scheduler of the
unlabelled pool; the suite's podgrouper, binder and controllers serve every pool.

A job in pool a never lands on pool b's node (nor on the suite's unlabelled nodes), even when only those have
room; each queue's GPUs stay in its pool; both pools make progress.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from kai_scheduler.api import constants
from kai_scheduler.store.interface import NotFound
from tests.e2e.checks import hold
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, queue

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY
POOLS = ("a", "b")


def _node(pool: str) -> str:
    return f"kai-e2e-pool-{pool}-0"


@pytest.fixture
def shards(clean: Cluster) -> Iterator[Cluster]:
    started = []
    try:
        for p in POOLS:
            name = f"fake-nodes-{p}"
            clean.processes.start(
                name,
                "fake-nodes",
                "--count=1",
                "--gpus=8",
                f"--prefix=kai-e2e-pool-{p}",
                f"--node-pool={p}",
                "--heartbeat-period=5s",
                "--delete-on-exit",
            )
            started.append(name)
            clean.processes.start_component("scheduler", f"--partition-label-value={p}", name=f"scheduler-{p}")
            started.append(f"scheduler-{p}")
        for p in POOLS:
            q = queue(f"e2e-pool-{p}", gpu_quota=0)
            q["metadata"]["labels"][KEY] = p
            clean.create(q)
        clean.wait("the pools' nodes Ready", lambda: all(_ready(clean, _node(p)) for p in POOLS), timeout=60)
        yield clean
    finally:
        clean.processes.stop(started)
        for p in POOLS:
            with contextlib.suppress(NotFound):
                clean.store.delete("nodes", _node(p))


def _ready(cluster: Cluster, name: str) -> bool:
    try:
        node = cluster.store.get("nodes", name)
    except NotFound:
        return False
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _pool_pod(name: str, pool: str, gpus: int) -> dict[str, object]:
    return pod(name, gpus=gpus, queue=f"e2e-pool-{pool}", labels={KEY: pool, "app": f"pool-{pool}"})


def test_a_job_in_pool_a_never_lands_on_pool_bs_nodes_and_both_pools_progress(shards: Cluster) -> None:
    # Pool a: two 8-GPU pods for one 8-GPU node; pool b: one 4-GPU pod. Pool b's node and the suite's four
    # unlabelled nodes have room for pool a's second pod: it must wait all the same.
    for i in range(2):
        shards.create(_pool_pod(f"pa-{i}", "a", 8))
    # Pool b's job is an external PodGroup labelled b, its pod unlabelled: shard b labels the pod when it places
    # it (with its ServiceAccount's rights on a real server).
    group_b = podgroup("pg-pb", min_member=1, queue="e2e-pool-b")
    group_b["metadata"]["labels"][KEY] = "b"
    shards.create(group_b)
    shards.create(pod("pb-0", gpus=4, queue="e2e-pool-b", group="pg-pb", labels={"app": "pool-b"}))
    shards.wait("one pool-a pod and the pool-b pod bound", lambda: _bound_count(shards) == (1, 1))

    def in_their_pools() -> None:
        assert _bound_count(shards) == (1, 1)
        for p in POOLS:
            for bound in shards.bound(f"app=pool-{p}"):
                assert bound["spec"]["nodeName"] == _node(p), f"{bound['metadata']['name']} left pool {p}"

    hold(5, in_their_pools)
    # The PodGroups took the pods' pool (pool a's from its pod), the BindRequests carry it, the pods too.
    shards.wait(
        "shard b's label on its pod", lambda: shards.pods("app=pool-b")[0]["metadata"]["labels"].get(KEY) == "b"
    )
    for p in POOLS:
        for bound in shards.bound(f"app=pool-{p}"):
            name = bound["metadata"]["name"]
            assert bound["metadata"]["labels"][KEY] == p
            br = shards.store.get("bindrequests", name, NAMESPACE)
            assert br["metadata"]["labels"][KEY] == p
            group = bound["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME]
            assert shards.store.get("podgroups", group, NAMESPACE)["metadata"]["labels"][KEY] == p
    # The waiting pod's PodGroup says why, for pool a only.
    waiting = next(p for p in shards.pods("app=pool-a") if not p["spec"].get("nodeName"))
    group = waiting["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME]

    def told_by_pool_a() -> bool:
        status = shards.store.get("podgroups", group, NAMESPACE).get("status") or {}
        return [c.get("nodePool") for c in status.get("schedulingConditions") or []] == ["a"]

    shards.wait("pool a's condition on the waiting PodGroup", told_by_pool_a, timeout=30)
    # Each queue's GPUs stay in its pool: the queue status controller counts pool a's 8 GPUs in its queue.
    shards.wait("queue e2e-pool-a allocated 8 GPUs", lambda: _allocated_gpus(shards, "e2e-pool-a") == 8, timeout=30)
    # Pool a progresses once its node frees: the bound pod goes, the waiting one takes its place.
    first = shards.bound("app=pool-a")[0]["metadata"]["name"]
    shards.store.delete("pods", first, NAMESPACE, grace_period_seconds=0)
    name = waiting["metadata"]["name"]
    shards.wait(
        f"{name} bound in pool a", lambda: [p["metadata"]["name"] for p in shards.bound("app=pool-a")] == [name]
    )
    assert shards.bound("app=pool-a")[0]["spec"]["nodeName"] == _node("a")


def _bound_count(cluster: Cluster) -> tuple[int, int]:
    return len(cluster.bound("app=pool-a")), len(cluster.bound("app=pool-b"))


def _allocated_gpus(cluster: Cluster, name: str) -> float:
    status = cluster.store.get("queues", name).get("status") or {}
    allocated = status.get("allocated") or {}
    try:
        return float(allocated.get("nvidia.com/gpu", 0))
    except (TypeError, ValueError):
        return -1.0
