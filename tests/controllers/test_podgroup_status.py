"""PodGroup status.resourcesStatus: requested, allocated (fractions as received), non-preemptible share."""

from __future__ import annotations

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.memory import MemoryStore
from tests.builders import (
    NAMESPACE,
    NOW,
    bind_request,
    claim,
    claim_template,
    device,
    node,
    pod,
    podgroup,
    resource_slice,
)

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


def test_a_bind_request_of_an_earlier_pod_of_the_same_name_is_not_the_new_pods() -> None:
    """A half-GPU pod bound, deleted and made again under its name as a gpu-memory pod before the garbage
    collector took its BindRequest: the new pod has received nothing yet, so its PodGroup asks no GPU."""
    store, ctl = cluster(podgroup("again"))
    earlier = store.create(pod("p", group="again", fraction=0.5, node="n1"))
    br = bind_request("p", "n1", phase="Succeeded")
    br["spec"].update(receivedResourceType="Fraction", receivedGPU={"count": 1, "portion": "0.50"})
    br["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": earlier["metadata"]["uid"], "controller": False}
    ]
    store.delete("pods", "p", NAMESPACE, grace_period_seconds=0)
    store.create(br)  # after the deletion: this store collects what a deleted pod owns, as a garbage collector
    again = pod("p", group="again", annotations={constants.ANNOTATION_GPU_MEMORY: "2000"})
    again["metadata"]["uid"] = "uid-of-the-new-pod"
    store.create(again)
    ctl.reconcile()
    assert status(store, "again")["requested"]["nvidia.com/gpu"] == "0"


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


def test_dra_gpus_count_as_the_scheduler_counts_them() -> None:
    """Per-pod claims: their ExactCount GPUs (requested; allocated once bound) and the devices an All request
    got; a shared claim once, to the group of its first bound user; devices that are not GPUs do not count."""
    store, ctl = cluster(
        resource_slice("n1", gpus=4, devices=[device("mig-0", type="mig")]),
        podgroup("train"),
        podgroup("other"),
        claim_template("two", count=2),
        pod("bound", group="train", node="n1", claims={"gpu": "template:two"}),
        pod("waiting", group="train", claims={"gpu": "template:two"}),
        claim("whole", for_pod="all", count=None, allocated=[("n1", "gpu-0"), ("n1", "gpu-1"), ("n1", "mig-0")]),
        pod("all", group="train", node="n1", claims={"gpu": "whole"}),
        claim("pair", labels={constants.LABEL_QUEUE: "q"}, count=2, allocated=[("n1", "gpu-2"), ("n1", "gpu-3")]),
        pod("share-0", group="other", claims={"gpu": "pair"}),
        pod("share-1", group="train", node="n1", claims={"gpu": "pair"}),
        pod("share-2", group="other", node="n1", claims={"gpu": "pair"}),
    )
    ctl.reconcile()
    train, other = status(store, "train"), status(store, "other")
    # bound 2 + waiting 2 + All 2 (the MIG slice is not a GPU) + the shared pair, charged to share-1's group
    assert (train["requested"]["nvidia.com/gpu"], train["allocated"]["nvidia.com/gpu"]) == ("8", "6")
    assert (other["requested"]["nvidia.com/gpu"], other["allocated"]["nvidia.com/gpu"]) == ("0", "0")


def test_a_shared_claim_not_allocated_yet_is_asked_once() -> None:
    store, ctl = cluster(
        podgroup("g"),
        claim("pair", labels={constants.LABEL_QUEUE: "q"}, count=2),
        pod("a", group="g", claims={"gpu": "pair"}),
        pod("b", group="g", claims={"gpu": "pair"}),
    )
    ctl.reconcile()
    assert status(store, "g")["requested"]["nvidia.com/gpu"] == "2"
    assert status(store, "g")["allocated"]["nvidia.com/gpu"] == "0"


def test_a_claim_change_rewrites_the_groups_it_reaches() -> None:
    """The binder allocating a claim (and the pod bound) is seen without a change to the PodGroup."""
    made = claim("p-gpu", for_pod="p", count=None)
    store, ctl = cluster(
        resource_slice("n1", gpus=2), podgroup("g"), made, pod("p", group="g", claims={"gpu": "p-gpu"})
    )
    ctl.reconcile()
    assert status(store, "g")["requested"]["nvidia.com/gpu"] == "0"  # an All request is sized by its devices
    allocated = claim("p-gpu", for_pod="p", count=None, allocated=[("n1", "gpu-0"), ("n1", "gpu-1")])
    store.update_status(allocated)
    store.bind(NAMESPACE, "p", "n1")
    assert ctl.reconcile() == [f"{NAMESPACE}/g"]
    assert status(store, "g")["allocated"]["nvidia.com/gpu"] == "2"


def test_a_cluster_without_dra_reads_as_none() -> None:
    store, ctl = cluster(podgroup("g"), pod("p", group="g", gpus=1))

    def unserved(resource: str, *args: object, **kwargs: object) -> object:
        if resource.startswith("resource"):
            raise NotFound(f"{resource} not served")
        return original(resource, *args, **kwargs)

    original = store.list
    store.list = unserved  # type: ignore[method-assign]
    ctl.reconcile()
    assert status(store, "g")["requested"]["nvidia.com/gpu"] == "1"
