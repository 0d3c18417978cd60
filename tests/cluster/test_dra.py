"""DRA in the model and the dynamicresources plugin: where a pod's claims can be allocated, what it says when
they cannot, and how a session takes and gives back devices."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kai_scheduler.api.bindrequest import ClaimAllocation
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework.session import Session
from tests import builders as b

JSON = dict[str, Any]
TEMPLATE_POD = {"gpu": "template:one-gpu"}


def _session(*objects: JSON) -> Session:
    return b.session(b.snapshot([b.queue("q"), *objects]))


def _pod_with_claim(name: str, claim_name: str, **kwargs: Any) -> JSON:
    """A pod whose claim `gpu` was made from template one-gpu as `claim_name`."""
    return b.pod(name, claims=TEMPLATE_POD, claim_statuses={"gpu": claim_name}, **kwargs)


def _reject(ssn: Session, task: PodInfo) -> str:
    reject = ssn.pre_predicate(task, ssn.job(task.job_uid))
    return reject.message if reject is not None else ""


def test_dra_gpus_count_as_nvidia_gpus_on_nodes_and_pods() -> None:
    snap = b.snapshot(
        [
            b.node("n1", gpus=0),
            b.resource_slice("n1", gpus=4),
            b.device_class(),
            b.claim("p-gpu", count=2, for_pod="p"),
            b.podgroup("p"),
            _pod_with_claim("p", "p-gpu"),
        ]
    )
    assert snap.nodes[0].allocatable()[2] == 4
    task = b.task(snap, "p")
    assert task.gpu.whole == 2 and task.queue_request()[2] == 2


def test_a_claim_goes_where_its_selector_matches_a_free_device() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.node("b", gpus=0),
        b.resource_slice("a", [b.device("gpu-0", productName="A100")]),
        b.resource_slice("b", [b.device("gpu-0", productName="H100")]),
        b.device_class(),
        b.claim("p-gpu", for_pod="p", selectors=['device.attributes["gpu.nvidia.com"].productName == "H100"']),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
    )
    mask, report = ssn.feasible_nodes(b.task(ssn, "p"))
    assert mask.tolist() == [False, True]
    assert "claim ns/p-gpu" in report.message()


@pytest.mark.parametrize(
    ("extra", "selector", "expected"),
    [
        ((), "device.driver ==", "claim ns/p-gpu: request devices: CEL expression 'device.driver ==' does not compile"),
        ((), 'device.attributes["gpu.nvidia.com"].missing == 1', "failed on device gpu-0: no such member"),
        ((), "1", "gave IntType(1) on device gpu-0, not a bool"),
    ],
)
def test_a_bad_selector_is_one_line_naming_the_claim(extra: tuple[JSON, ...], selector: str, expected: str) -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("p-gpu", for_pod="p", selectors=[selector]),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
        *extra,
    )
    message = _reject(ssn, b.task(ssn, "p"))
    assert expected in message and message.startswith("pod ns/p: claim ns/p-gpu")
    assert "\n" not in message


def test_an_unknown_device_class_is_named() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.claim("p-gpu", for_pod="p", device_class_name="tpu.example.com"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
    )
    assert _reject(ssn, b.task(ssn, "p")) == (
        "pod ns/p: claim ns/p-gpu: request devices: DeviceClass 'tpu.example.com' not found"
    )


def test_a_claim_not_made_yet_or_missing_or_another_pods_is_named() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("other-gpu", for_pod="other"),
        b.podgroup("waits"),
        b.pod("waits", claims=TEMPLATE_POD),
        b.podgroup("missing"),
        b.pod("missing", claims={"gpu": "nope"}),
        b.podgroup("stolen"),
        _pod_with_claim("stolen", "other-gpu"),
    )
    assert "waiting for its ResourceClaim to be made from template one-gpu" in _reject(ssn, b.task(ssn, "waits"))
    assert _reject(ssn, b.task(ssn, "missing")) == "pod ns/missing: claim ns/nope: ResourceClaim not found"
    assert _reject(ssn, b.task(ssn, "stolen")) == "pod ns/stolen: claim ns/other-gpu: made for another pod"


def test_a_shared_gpu_claim_must_carry_the_jobs_queue() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("shared", labels={"kai.scheduler/queue": "other"}),
        b.podgroup("p"),
        b.pod("p", claims={"gpu": "shared"}),
    )
    assert "a shared GPU claim must carry label kai.scheduler/queue=q" in _reject(ssn, b.task(ssn, "p"))


def test_devices_are_taken_on_allocate_and_given_back_on_rollback() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("p-gpu", for_pod="p"),
        b.claim("r-gpu", for_pod="r"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
        b.podgroup("r"),
        _pod_with_claim("r", "r-gpu"),
    )
    p, r = b.task(ssn, "p"), b.task(ssn, "r")
    stmt = ssn.statement()
    stmt.allocate(p, "a")
    assert ssn.snapshot.dra_state().allocations(p, "a") == (ClaimAllocation("gpu", _alloc("a", "gpu-0")),)
    assert not ssn.feasible_nodes(r)[0].any()
    stmt.discard()
    assert ssn.feasible_nodes(r)[0].all()
    assert ssn.snapshot.dra_state().allocations(p, "a") == ()


def _alloc(node: str, device: str) -> Any:
    from kai_scheduler.api import dra

    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return dra.Allocation((dra.DeviceResult("devices", "gpu.nvidia.com", node, device),), selector)


def test_an_evicted_pods_devices_are_free_for_its_preemptor() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("v-gpu", for_pod="v", allocated=[("a", "gpu-0")], reserved_for=["v"]),
        b.claim("p-gpu", for_pod="p"),
        b.podgroup("v"),
        _pod_with_claim("v", "v-gpu", node="a"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
    )
    victim, preemptor = b.task(ssn, "v"), b.task(ssn, "p")
    assert not ssn.feasible_nodes(preemptor)[0].any()
    from kai_scheduler.framework.statement import Eviction

    stmt = ssn.statement()
    stmt.evict(victim, Eviction("reclaim", "ns/p", "test"))
    assert ssn.feasible_nodes(preemptor)[0].all()
    stmt.discard()  # the victim takes its device back
    assert not ssn.feasible_nodes(preemptor)[0].any()


def test_network_attached_devices_reach_only_selected_nodes() -> None:
    selector = b.term(b.expr("rack", "In", "r2"))
    ssn = _session(
        b.node("a", gpus=0, labels={"rack": "r1"}),
        b.node("b", gpus=0, labels={"rack": "r2"}),
        b.resource_slice(
            devices=[b.device("nic-0")], driver="nic.example.com", pool="fabric", node_selector=[selector]
        ),
        b.device_class("nic.example.com"),
        b.claim("p-nic", for_pod="p", device_class_name="nic.example.com"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-nic"),
    )
    p = b.task(ssn, "p")
    assert ssn.feasible_nodes(p)[0].tolist() == [False, True]
    ssn.statement().allocate(p, "b")
    [made] = ssn.snapshot.dra_state().allocations(p, "b")
    assert made.allocation.node_selector == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}]
    }


def test_all_mode_needs_every_matching_device_free() -> None:
    ssn = _session(
        b.node("a", gpus=0),
        b.node("b", gpus=0),
        b.resource_slice("a", gpus=2),
        b.resource_slice("b", gpus=2),
        b.device_class(),
        b.claim("h-gpu", for_pod="h", allocated=[("a", "gpu-1")], reserved_for=["h"]),
        b.claim("p-gpu", for_pod="p", count=None),
        b.podgroup("h"),
        _pod_with_claim("h", "h-gpu", node="a"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
    )
    p = b.task(ssn, "p")
    assert ssn.feasible_nodes(p)[0].tolist() == [False, True]
    ssn.statement().allocate(p, "b")
    assert len(ssn.snapshot.dra_state().allocs["ns/p-gpu"].devices) == 2


def test_an_in_flight_bind_request_holds_its_devices() -> None:
    br = b.bind_request("p", "a")
    br["spec"]["resourceClaimAllocations"] = [ClaimAllocation("gpu", _alloc("a", "gpu-0")).to_dict()]
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("p-gpu", for_pod="p"),
        b.claim("r-gpu", for_pod="r"),
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
        br,
        b.podgroup("r"),
        _pod_with_claim("r", "r-gpu"),
    )
    assert not ssn.feasible_nodes(b.task(ssn, "r"))[0].any()
    assert np.array_equal(ssn.snapshot.dra_state().free, [False])


def test_the_allocation_carries_the_class_and_claim_configuration() -> None:
    """As Kubernetes' allocator writes it: the class's configs for the requests of that class, then the claim's."""
    sharing = {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"sharing": {"strategy": "TimeSlicing"}}}}
    mps = {"requests": ["devices"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"strategy": "MPS"}}}
    device_class = b.device_class()
    device_class["spec"]["config"] = [sharing]
    claim = b.claim("p-gpu", for_pod="p")
    claim["spec"]["devices"]["config"] = [mps]
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        device_class,
        claim,
        b.podgroup("p"),
        _pod_with_claim("p", "p-gpu"),
    )
    p = b.task(ssn, "p")
    ssn.statement().allocate(p, "a")
    (made,) = ssn.snapshot.dra_state().allocations(p, "a")
    assert made.to_dict()["allocation"]["devices"]["config"] == [
        {"source": "FromClass", "requests": ["devices"], **sharing},
        {"source": "FromClaim", **mps},
    ]


def test_a_configuration_without_a_driver_is_one_line_naming_the_field() -> None:
    from kai_scheduler.api import dra
    from kai_scheduler.api.errors import ObjectError

    device_class = b.device_class()
    device_class["spec"]["config"] = [{"opaque": {"parameters": {}}}]
    with pytest.raises(ObjectError, match=r"spec\.config\[0\]"):
        dra.DeviceClass.from_dict(device_class)


def _queue_gpus(ssn: Session, queue: str = "q") -> float:
    share = ssn.queue_share(queue)
    assert share is not None
    return float(share.allocated[2])


def test_a_shared_claim_is_charged_once_while_it_holds_its_devices() -> None:
    """Charged when its first user takes it, not again for the second, refunded when the last leaves."""
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=2),
        b.device_class(),
        b.claim("pair", labels={"kai.scheduler/queue": "q"}, count=2),
        b.podgroup("p", min_member=2),
        b.pod("p-0", group="p", claims={"gpu": "pair"}),
        b.pod("p-1", group="p", claims={"gpu": "pair"}),
    )
    first, second = b.task(ssn, "p-0"), b.task(ssn, "p-1")
    stmt = ssn.statement()
    stmt.allocate(first, "a")
    assert _queue_gpus(ssn) == 2
    stmt.allocate(second, "a")
    assert _queue_gpus(ssn) == 2
    checkpoint = stmt.checkpoint()
    stmt.evict(first, None)  # the claim stays held by the second
    assert _queue_gpus(ssn) == 2
    stmt.rollback(checkpoint)
    stmt.discard()
    assert _queue_gpus(ssn) == 0


def test_a_claim_held_for_pods_the_snapshot_does_not_know_is_charged_to_the_one_joining() -> None:
    """`reservedFor` may still name a pod that is gone (the resourceclaim controller has not caught up): the
    claim's devices are held, and the pod that joins it in the session is charged for them, refunded on undo."""
    ssn = _session(
        b.node("a", gpus=0),
        b.resource_slice("a", gpus=1),
        b.device_class(),
        b.claim("pair", labels={"kai.scheduler/queue": "q"}, allocated=[("a", "gpu-0")], reserved_for=["gone"]),
        b.podgroup("p"),
        b.pod("p", claims={"gpu": "pair"}),
    )
    assert _queue_gpus(ssn) == 0
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "p"), "a")
    assert _queue_gpus(ssn) == 1
    stmt.discard()
    assert _queue_gpus(ssn) == 0
