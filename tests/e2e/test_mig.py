"""End to end with MIG: a fake node of the mixed strategy, pods asking for `nvidia.com/mig-1g.10gb` instances.

The node comes from a second `kai fake-nodes` started by the test (`--mig 1g.10gb=2`, no whole GPUs) and is
deleted when it stops, so the other tests' four GPU nodes are untouched.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import pytest

from kai_scheduler.store.interface import NotFound
from tests.e2e.checks import hold
from tests.e2e.harness import NAMESPACE, Cluster, pod

MIG_NODE_PREFIX = "kai-e2e-mig"
MIG_NODE = f"{MIG_NODE_PREFIX}-0"
INSTANCE = "nvidia.com/mig-1g.10gb"


@pytest.fixture
def mig_node(clean: Cluster) -> Iterator[Cluster]:
    name = "fake-mig-nodes"
    clean.processes.start(
        name,
        "fake-nodes",
        "--count",
        "1",
        "--gpus",
        "0",
        "--mig",
        "1g.10gb=2",
        "--prefix",
        MIG_NODE_PREFIX,
        "--heartbeat-period",
        "5s",
        "--delete-on-exit",
    )
    try:
        clean.wait("the MIG node Ready", lambda: _ready(clean), timeout=60)
        yield clean
    finally:
        proc = clean.processes.running.pop(name)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        with contextlib.suppress(NotFound):
            clean.store.delete("nodes", MIG_NODE)


def _ready(cluster: Cluster) -> bool:
    try:
        node = cluster.store.get("nodes", MIG_NODE)
    except NotFound:
        return False
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _mig_pod(name: str) -> dict[str, object]:
    out = pod(name, gpus=0, labels={"app": "mig"})
    out["spec"]["containers"][0]["resources"]["limits"] = {INSTANCE: "1"}  # type: ignore[index]
    return out


def test_mig_pods_are_bound_to_instances_as_mig_instance(mig_node: Cluster) -> None:
    """Three pods asking one 1g.10gb instance each on a node with two: two are bound there, through a
    MigInstance BindRequest and with the pod annotated as KAI's binder does, each with an instance of its own,
    and run; the third waits."""
    node = mig_node.store.get("nodes", MIG_NODE)
    assert node["status"]["allocatable"][INSTANCE] == "2"
    assert node["metadata"]["labels"]["nvidia.com/mig.strategy"] == "mixed"
    for i in range(3):
        mig_node.create(_mig_pod(f"mig-{i}"))
    mig_node.wait("two MIG pods bound", lambda: len(mig_node.bound("app=mig")) == 2)
    hold(3, lambda: _assert_bound(mig_node, 2))
    instances = sorted(p["metadata"]["annotations"]["kai.scheduler/mig-instances"] for p in mig_node.bound("app=mig"))
    assert instances == ["1g.10gb/0", "1g.10gb/1"], "each bound pod has an instance of its own"
    for p in mig_node.bound("app=mig"):
        name = p["metadata"]["name"]
        assert p["spec"]["nodeName"] == MIG_NODE
        assert p["metadata"]["annotations"]["received-resource-type"] == "MigInstance"
        request = mig_node.store.get("bindrequests", name, NAMESPACE)
        assert request["spec"]["receivedResourceType"] == "MigInstance"
        assert request["status"]["phase"] == "Succeeded"
    mig_node.wait(
        "the bound MIG pods Running",
        lambda: [p.get("status", {}).get("phase") for p in mig_node.bound("app=mig")] == ["Running", "Running"],
    )


def _assert_bound(cluster: Cluster, count: int) -> None:
    bound = cluster.bound("app=mig")
    assert len(bound) == count, f"{len(bound)} MIG pods bound, expected {count}"
