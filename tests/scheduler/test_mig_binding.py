"""A MIG pod goes through the scheduler and the binder as KAI's MigInstance type (§1.3, §2)."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import Binder
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

MIG = {"nvidia.com/mig-1g.10gb": "1"}


def test_a_mig_pod_gets_a_mig_instance_bind_request_and_the_binder_marks_the_pod() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    node = b.node("n1", gpus=0, labels={"nvidia.com/mig.strategy": "mixed"}, extended={"nvidia.com/mig-1g.10gb": "2"})
    store.add_many([b.queue("q"), node, b.podgroup("m"), b.pod("m-0", group="m", extended=MIG)])
    assert Scheduler(store, load_config(None), clock).run_once().binds == 1
    request = store.get("bindrequests", "m-0", b.NAMESPACE)
    spec = request["spec"]
    assert spec["receivedResourceType"] == "MigInstance"
    assert request["metadata"]["annotations"]["kai.scheduler/mig-instances"] == "1g.10gb/0"
    assert spec["selectedNode"] == "n1" and "selectedGPUGroups" not in spec
    assert Binder(store, clock).reconcile().bound == [f"{b.NAMESPACE}/m-0"]
    pod = store.get("pods", "m-0", b.NAMESPACE)
    assert pod["spec"]["nodeName"] == "n1"
    assert pod["metadata"]["annotations"][constants.ANNOTATION_RECEIVED_RESOURCE_TYPE] == "MigInstance"
    assert pod["metadata"]["annotations"]["kai.scheduler/mig-instances"] == "1g.10gb/0"


def test_a_pod_keeps_the_instance_recorded_for_it_when_the_snapshot_is_rebuilt() -> None:
    """n1 has three 1g.10gb instances; the pod that sorts last holds instance 0 by its record, the other
    running pod instance 2: a rebuild gives them those, and a new pod instance 1 (not 0, which is taken)."""
    node = b.node("n1", gpus=0, labels={"nvidia.com/mig.strategy": "mixed"}, extended={"nvidia.com/mig-1g.10gb": "3"})
    zz = b.pod("zz", extended=MIG, node="n1", phase="Running", annotations={"kai.scheduler/mig-instances": "1g.10gb/0"})
    yy = b.pod("yy", extended=MIG, node="n1", phase="Running", annotations={"kai.scheduler/mig-instances": "1g.10gb/2"})
    snap = b.snapshot([b.queue("q"), node, zz, yy, b.pod("aa", extended=MIG, node="n1", phase="Running")])
    held = {t.name: t.mig_held for t in snap.tasks.values()}
    assert held == {"zz": (("1g.10gb", 0),), "yy": (("1g.10gb", 2),), "aa": (("1g.10gb", 1),)}


def test_a_regular_pod_is_not_marked() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1"), b.pod("p", gpus=1), b.bind_request("p", "n1")])
    Binder(store, clock).reconcile()
    annotations = store.get("pods", "p", b.NAMESPACE)["metadata"].get("annotations", {})
    assert constants.ANNOTATION_RECEIVED_RESOURCE_TYPE not in annotations


def test_a_pod_with_an_unknown_profile_is_told_why_and_the_cycle_goes_on() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    node = b.node("n1", gpus=0, labels={"nvidia.com/mig.strategy": "mixed"}, extended={"nvidia.com/mig-1g.10gb": "2"})
    bad = b.pod("bad-0", group="bad", extended={"nvidia.com/mig-huge": "1"})
    store.add_many([b.queue("q"), node, b.podgroup("bad"), bad, b.podgroup("m"), b.pod("m-0", group="m", extended=MIG)])
    assert Scheduler(store, load_config(None), clock).run_once().binds == 1
    events, _ = store.list("events")
    why = "spec.containers.resources.nvidia.com/mig-huge: unknown MIG profile 'huge'"
    assert any(e["involvedObject"]["name"] == "bad-0" and why in e["message"] for e in events)
    condition = store.get("podgroups", "bad", b.NAMESPACE)["status"]["schedulingConditions"][0]
    assert why in condition["reasons"][0]["message"]
