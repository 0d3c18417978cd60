"""PodGroup status.resourcesStatus: requested, allocated (fractions as received), non-preemptible share."""

from __future__ import annotations

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, bind_request, node, pod, podgroup

ZERO = {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}


def cluster(*objects: JSON) -> tuple[MemoryStore, PodGroupStatusController]:
    store = MemoryStore(ManualClock(NOW))
    store.add_many([*(pc.to_dict() for pc in priorityclass.shipped()), node("n1"), *objects])
    return store, PodGroupStatusController(store)


def status(store: MemoryStore, name: str) -> JSON:
    out: JSON = store.get("podgroups", name, NAMESPACE)["status"]["resourcesStatus"]
    return out


def test_requested_counts_every_live_pod_and_allocated_the_bound_ones() -> None:
    store, ctl = cluster(
        podgroup("train", priority_class="train"),
        pod("a", group="train", gpus=1, cpu="2", memory="4Gi", node="n1"),
        pod("b", group="train", gpus=1, cpu="2", memory="4Gi"),
        pod("done", group="train", gpus=1, node="n1", phase="Succeeded"),
        pod("leaving", group="train", gpus=1, node="n1", deleted_at=NOW + 30),
    )
    assert ctl.reconcile() == [f"{NAMESPACE}/train"]
    assert status(store, "train") == {
        "requested": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"},
        "allocated": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
        "allocatedNonPreemptible": ZERO,
    }


def test_a_non_preemptible_group_counts_its_allocation_as_non_preemptible() -> None:
    store, ctl = cluster(
        podgroup("serve", priority_class="inference"),
        podgroup("forced", priority_class="inference", preemptibility=constants.PREEMPTIBLE),
        pod("s", group="serve", gpus=2, cpu="1", memory="1Gi", node="n1"),
        pod("f", group="forced", gpus=2, cpu="1", memory="1Gi", node="n1"),
    )
    ctl.reconcile()
    assert status(store, "serve")["allocatedNonPreemptible"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}
    assert status(store, "forced")["allocatedNonPreemptible"] == ZERO


def test_fractions_count_what_was_received() -> None:
    half = pod(
        "half",
        group="share",
        fraction=0.5,
        node="n1",
        annotations={constants.ANNOTATION_RECEIVED_RESOURCE_TYPE: "Fraction"},
    )
    by_memory = pod(
        "mem",
        group="share",
        node="n1",
        annotations={constants.ANNOTATION_GPU_MEMORY: "20000", constants.ANNOTATION_RECEIVED_RESOURCE_TYPE: "Fraction"},
    )
    br = bind_request("mem", "n1")
    br["spec"].update(receivedResourceType="Fraction", receivedGPU={"count": 1, "portion": "0.25"})
    waiting = pod("wait", group="share", fraction=0.3)
    store, ctl = cluster(podgroup("share"), half, by_memory, br, waiting)
    ctl.reconcile()
    assert status(store, "share")["allocated"]["nvidia.com/gpu"] == "0.75"
    assert status(store, "share")["requested"]["nvidia.com/gpu"] == "1.05"


def test_status_is_written_only_when_it_changes() -> None:
    store, ctl = cluster(podgroup("a"), podgroup("b"), pod("a-0", group="a", gpus=1), pod("b-0", group="b", gpus=1))
    assert ctl.reconcile() == [f"{NAMESPACE}/a", f"{NAMESPACE}/b"]
    _, version = store.list("podgroups")
    assert ctl.reconcile() == []
    assert store.list("podgroups")[1] == version
    store.bind(NAMESPACE, "b-0", "n1")
    assert ctl.reconcile() == [f"{NAMESPACE}/b"]
    assert status(store, "b")["allocated"]["nvidia.com/gpu"] == "1"
    store.delete("pods", "b-0", NAMESPACE, grace_period_seconds=0)
    assert ctl.reconcile() == [f"{NAMESPACE}/b"]
    assert status(store, "b") == {"requested": ZERO, "allocated": ZERO, "allocatedNonPreemptible": ZERO}


def test_an_extended_resource_that_goes_away_is_removed() -> None:
    mig = pod("m", group="g", node="n1")
    mig["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/mig-1g.10gb"] = "1"
    store, ctl = cluster(podgroup("g"), mig)
    ctl.reconcile()
    assert status(store, "g")["allocated"]["nvidia.com/mig-1g.10gb"] == "1"
    store.delete("pods", "m", NAMESPACE, grace_period_seconds=0)
    ctl.reconcile()
    assert status(store, "g")["allocated"] == ZERO


def test_a_priority_class_change_reclassifies_the_groups() -> None:
    store, ctl = cluster(podgroup("g", priority_class="custom"), pod("p", group="g", gpus=1, node="n1"))
    ctl.reconcile()
    assert status(store, "g")["allocatedNonPreemptible"] == ZERO  # no such class: priority 50
    store.create(
        {
            "apiVersion": constants.PRIORITYCLASS_API_VERSION,
            "kind": "PriorityClass",
            "metadata": {"name": "custom"},
            "value": 1000,
        }
    )
    ctl.reconcile()
    assert status(store, "g")["allocatedNonPreemptible"]["nvidia.com/gpu"] == "1"


def test_mig_instances_count_their_compute_slices_as_gpus() -> None:
    """As the scheduler charges queues (docs/mig.md): a 3g.40gb instance is 3 GPUs, a 1g.10gb one 1."""
    big = {"nvidia.com/mig-3g.40gb": "1"}
    store, ctl = cluster(
        podgroup("mig"),
        pod("a", group="mig", gpus=0, cpu="1", memory="1Gi", node="n1", extended=big),
        pod("b", group="mig", gpus=0, cpu="1", memory="1Gi", extended={"nvidia.com/mig-1g.10gb": "1"}),
    )
    ctl.reconcile()
    assert status(store, "mig")["allocated"]["nvidia.com/gpu"] == "3"
    assert status(store, "mig")["requested"]["nvidia.com/gpu"] == "4"
