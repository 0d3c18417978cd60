"""DRA through the embedded cluster: the resourceclaim controller makes claims from templates, the scheduler
writes the chosen devices into the BindRequest, the binder allocates and reserves the claim before binding
(and undoes it when the binding fails), and a claim nobody holds is released."""

from __future__ import annotations

from typing import Any

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import Binder
from kai_scheduler.controllers.resourceclaims import ResourceClaimController
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]
NS = b.NAMESPACE


def _cluster(*objects: JSON) -> EmbeddedCluster:
    base = [b.node("n1", gpus=0), b.resource_slice("n1", gpus=1), b.device_class(), b.queue("q")]
    return EmbeddedCluster([*base, *objects], load_config(None), now=b.NOW)


def _claim(cluster: EmbeddedCluster | MemoryStore, name: str) -> JSON:
    store = cluster.store if isinstance(cluster, EmbeddedCluster) else cluster
    found: JSON = store.get("resourceclaims", name, NS)
    return found


def test_a_pod_with_a_template_claim_is_placed_and_bound_with_its_claim_allocated_and_reserved() -> None:
    cluster = _cluster(b.claim_template("one-gpu"), b.podgroup("p"), b.pod("p", claims={"gpu": "template:one-gpu"}))
    pod = cluster.store.get("pods", "p", NS)
    [made] = pod["status"]["resourceClaimStatuses"]
    assert made["name"] == "gpu" and made["resourceClaimName"].startswith("p-gpu-")
    assert cluster.cycle().binds == 1
    br = cluster.store.get("bindrequests", "p", NS)
    assert br["spec"]["resourceClaimAllocations"][0]["name"] == "gpu"
    assert br["spec"]["resourceClaimAllocations"][0]["allocation"]["devices"]["results"] == [
        {"request": "devices", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}
    ]
    cluster.between_cycles()
    assert cluster.store.get("pods", "p", NS)["spec"]["nodeName"] == "n1"
    status = _claim(cluster, made["resourceClaimName"])["status"]
    assert status["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert status["reservedFor"] == [{"resource": "pods", "name": "p", "uid": f"pod-{NS}-p"}]


def test_a_second_pod_for_the_same_device_waits_with_a_reason_naming_its_claim_and_the_cycle_goes_on() -> None:
    cluster = _cluster(
        b.node("n2", gpus=2),
        b.claim_template("one-gpu"),
        b.claim_template("bad", selectors=["device.driver =="]),
        b.podgroup("first", created=1),
        b.pod("first", claims={"gpu": "template:one-gpu"}),
        b.podgroup("second", created=2),
        b.pod("second", claims={"gpu": "template:one-gpu"}, node_selector={"kubernetes.io/hostname": "n1"}),
        b.podgroup("broken", created=3),
        b.pod("broken", claims={"gpu": "template:bad"}),
        b.podgroup("plain", created=4),
        b.pod("plain", gpus=1),
    )
    result = cluster.cycle()
    assert sorted(op.task.name for op in result.operations) == ["first", "plain"]
    conditions = {
        name: cluster.store.get("pods", name, NS)["status"]["conditions"][0]["message"] for name in ("second", "broken")
    }
    assert "1 insufficient nvidia.com/gpu for resource claim ns/second-gpu-" in conditions["second"]
    assert conditions["broken"] == (
        "pod ns/broken: claim ns/broken-gpu-pod-n: request devices: CEL expression 'device.driver ==' does not "
        "compile: " + conditions["broken"].split("does not compile: ", 1)[1]
    )
    assert "\n" not in conditions["broken"]


class _FailingBind(MemoryStore):
    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        raise StoreError("the node went away")


def test_a_failed_binding_takes_back_the_claims_allocation_and_reservation() -> None:
    clock = ManualClock(b.NOW)
    store = _FailingBind(clock)
    br = b.bind_request("p", "n1")
    allocation = {
        "devices": {"results": [{"request": "devices", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}
    }
    br["spec"]["resourceClaimAllocations"] = [{"name": "gpu", "allocation": allocation}]
    store.add_many(
        [
            b.node("n1", gpus=0),
            b.claim("p-gpu", for_pod="p"),
            b.claim("shared", allocated=[("n1", "gpu-1")], reserved_for=["other"]),
            b.pod("p", claims={"gpu": "template:one-gpu", "extra": "shared"}, claim_statuses={"gpu": "p-gpu"}),
            br,
        ]
    )
    br["spec"]["resourceClaimAllocations"].append(
        {"name": "extra", "allocation": _claim(store, "shared")["status"]["allocation"]}
    )
    store.update({**store.get("bindrequests", "p", NS), "spec": br["spec"]})
    outcome = Binder(store, clock).reconcile()
    assert outcome.failed and "the node went away" in outcome.failed[0][1]
    assert "status" not in _claim(store, "p-gpu") or not _claim(store, "p-gpu")["status"]
    assert _claim(store, "shared")["status"]["reservedFor"] == [
        {"resource": "pods", "name": "other", "uid": f"pod-{NS}-other"}
    ]
    assert "allocation" in _claim(store, "shared")["status"]


def test_the_controller_releases_claims_of_pods_that_are_gone() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.claim("gone-gpu", for_pod="gone", allocated=[("n1", "gpu-0")], reserved_for=["gone"]),
            b.claim("shared", allocated=[("n1", "gpu-1")], reserved_for=["gone", "here"]),
            b.pod("here", node="n1", claims={"gpu": "shared"}),
        ]
    )
    ResourceClaimController(store).reconcile()
    assert [c["metadata"]["name"] for c in store.list("resourceclaims")[0]] == ["shared"]
    assert _claim(store, "shared")["status"]["reservedFor"] == [
        {"resource": "pods", "name": "here", "uid": f"pod-{NS}-here"}
    ]
    store.delete("pods", "here", NS, grace_period_seconds=0)
    ResourceClaimController(store).reconcile()
    assert "allocation" not in _claim(store, "shared").get("status", {})


def test_a_pod_recreated_under_its_old_name_gets_a_claim_of_its_own() -> None:
    """As a workload controller recreates an evicted pod: the old pod's claim is not the new pod's."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.claim_template("one-gpu"), b.pod("p", claims={"gpu": "template:one-gpu"})])
    controller = ResourceClaimController(store)
    controller.reconcile()
    old = store.get("pods", "p", NS)["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    store.delete("pods", "p", NS, grace_period_seconds=0)
    again = b.pod("p", claims={"gpu": "template:one-gpu"})
    again["metadata"]["uid"] = "recreated"
    store.create(again)
    controller.reconcile()
    new = store.get("pods", "p", NS)["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert new != old
    assert [c["metadata"]["name"] for c in store.list("resourceclaims")[0]] == [new]
    assert _claim(store, new)["metadata"]["ownerReferences"][0]["uid"] == "recreated"


def test_the_claim_gets_the_drivers_configuration_with_its_devices() -> None:
    """The class's and the claim's configurations travel in the BindRequest into the claim's allocation."""
    sharing = {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"sharing": {"strategy": "TimeSlicing"}}}}
    template = b.claim_template("one-gpu")
    template["spec"]["spec"]["devices"]["config"] = [{"requests": ["devices"], **sharing}]
    cluster = _cluster(template, b.podgroup("p"), b.pod("p", claims={"gpu": "template:one-gpu"}))
    assert cluster.cycle().binds == 1
    cluster.between_cycles()
    made = cluster.store.get("pods", "p", NS)["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    config = _claim(cluster, made)["status"]["allocation"]["devices"]["config"]
    assert config == [{"source": "FromClaim", "requests": ["devices"], **sharing}]
