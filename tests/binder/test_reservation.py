"""Reservation pods (§6, §8.1): one per GPU group, created or reused before a fractional pod binds, collected
when the group has no pods and no in-flight BindRequest; the binder waits for the GPU index, up to a timeout."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder import reservation
from kai_scheduler.binder.binder import Binder
from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]
NS = constants.RESERVATION_NAMESPACE


def _fraction_request(pod: str, node: str, groups: list[str]) -> JSON:
    out = b.bind_request(pod, node)
    out["spec"].update(
        {
            "receivedResourceType": "Fraction",
            "receivedGPU": {"count": len(groups), "portion": "0.50"},
            "selectedGPUGroups": groups,
        }
    )
    return out


def _cluster(*objects: JSON, assign: bool = True) -> tuple[MemoryStore, ManualClock, Binder]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4), *objects])
    return store, clock, Binder(store, clock, reservation.ReservationConfig(assign_indices=assign))


def _reservations(store: MemoryStore) -> list[JSON]:
    pods, _ = store.list("pods", NS)
    return pods


def test_a_fractional_bind_creates_the_groups_reservation_pod() -> None:
    tolerate = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod = b.pod("p", fraction=0.5)
    pod["spec"]["tolerations"] = tolerate
    store, _, binder = _cluster(pod, _fraction_request("p", "n1", ["g1"]))
    assert binder.reconcile().bound == ["ns/p"]
    [made] = _reservations(store)
    meta, spec = made["metadata"], made["spec"]
    assert meta["name"] == reservation.Reservations(store, ManualClock()).pod_name("n1", "g1")
    assert meta["name"].startswith("gpu-reservation-")
    assert meta["labels"] == {"app": "kai-resource-reservation", "runai-gpu-group": "g1"}
    assert meta["annotations"][reservation.ANNOTATION_DO_NOT_DISRUPT] == "true"
    assert meta["annotations"][reservation.ANNOTATION_GPU_INDEX] == "0"
    assert spec["nodeName"] == "n1" and "runtimeClassName" not in spec  # KAI's default: the node's runtime
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    # KAI's reservation image reads and patches its own pod, as the ServiceAccount the install makes for it
    assert spec["serviceAccountName"] == "kai-resource-reservation"
    assert spec["containers"][0]["env"] == [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
    assert spec["tolerations"] == tolerate
    labels = store.get("pods", "p", b.NAMESPACE)["metadata"]["labels"]
    assert labels["runai-gpu-group"] == "g1"


def test_the_reservation_pods_runtime_class_image_are_the_binders_settings() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4), b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"])])
    config = reservation.ReservationConfig(
        runtime_class="nvidia", image="registry.local/reserve:1", assign_indices=True, service_account=""
    )
    assert Binder(store, clock, config).reconcile().bound == ["ns/p"]
    [made] = _reservations(store)
    assert made["spec"]["runtimeClassName"] == "nvidia"
    assert "serviceAccountName" not in made["spec"]  # "" = the namespace's default
    assert made["spec"]["containers"][0]["image"] == "registry.local/reserve:1"


def test_a_second_sharer_reuses_the_reservation_pod() -> None:
    store, _, binder = _cluster(
        b.pod("p", fraction=0.5),
        b.pod("q", fraction=0.25),
        _fraction_request("p", "n1", ["g1"]),
        _fraction_request("q", "n1", ["g1"]),
    )
    assert sorted(binder.reconcile().bound) == ["ns/p", "ns/q"]
    assert len(_reservations(store)) == 1


def test_each_group_gets_its_own_device_index() -> None:
    store, _, binder = _cluster(
        b.pod("p", fraction=0.5, annotations={"gpu-fraction-num-devices": "2"}),
        _fraction_request("p", "n1", ["g1", "g2"]),
    )
    binder.reconcile()
    index = reservation.ANNOTATION_GPU_INDEX
    indices = {
        p["metadata"]["labels"]["runai-gpu-group"]: p["metadata"]["annotations"][index] for p in _reservations(store)
    }
    assert indices == {"g1": "0", "g2": "1"}
    labels = store.get("pods", "p", b.NAMESPACE)["metadata"]["labels"]
    assert labels["runai-gpu-group"] == "g1" and labels["runai-gpu-group/g2"] == "g2"


def test_reservations_of_groups_without_pods_are_collected() -> None:
    store, _, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]))
    binder.reconcile()
    assert len(_reservations(store)) == 1
    binder.reconcile()
    assert len(_reservations(store)) == 1, "the group still has its pod"
    store.delete("pods", "p", b.NAMESPACE, grace_period_seconds=0)
    binder.reconcile()
    assert _reservations(store) == []


def test_an_in_flight_bind_request_keeps_the_reservation() -> None:
    store, _, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]), assign=False)
    binder.reconcile()  # created, waiting for the device plugin's index
    assert len(_reservations(store)) == 1
    binder.reconcile()
    assert len(_reservations(store)) == 1 and store.get("pods", "p", b.NAMESPACE)["spec"].get("nodeName") is None


def test_the_binder_waits_for_the_gpu_index_then_binds() -> None:
    store, _, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]), assign=False)
    outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    [made] = _reservations(store)
    store.patch(
        "pods", made["metadata"]["name"], NS, {"metadata": {"annotations": {reservation.ANNOTATION_GPU_INDEX: "3"}}}
    )
    assert binder.reconcile().bound == ["ns/p"]


def test_a_reservation_that_never_reports_its_index_fails_the_bind() -> None:
    store, clock, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]), assign=False)
    binder.reconcile()
    clock.advance(reservation.DEFAULT_ALLOCATION_TIMEOUT + 1)
    outcome = binder.reconcile()
    [(key, reason)] = outcome.failed
    assert key == "ns/p" and "did not report its GPU index within 40s" in reason
    status = store.get("bindrequests", "p", b.NAMESPACE)["status"]
    assert status["phase"] == "Failed"


@pytest.mark.parametrize(
    "phase, kept",
    [
        pytest.param("Succeeded", False, id="a succeeded request no longer holds the group"),
        pytest.param("", True, id="a pending request holds the group"),
    ],
)
def test_bind_requests_hold_groups_until_they_succeed(phase: str, kept: bool) -> None:
    """The group's reservation pod exists and no pod holds the group: only a request still in flight keeps it."""
    request = _fraction_request("gone", "n1", ["g1"])
    if phase:
        request["status"] = {"phase": phase}
    store, _, binder = _cluster(request)
    binder.reservations.reserve(BindRequest.from_dict(_fraction_request("gone", "n1", ["g1"])), b.pod("gone"))
    binder.reconcile()
    assert (len(_reservations(store)) == 1) is kept


def test_a_group_is_collected_once_its_last_pod_ends() -> None:
    """The pods' watch, not a LIST: the group stays while one of its two pods runs, and goes with the last."""
    store, _, binder = _cluster(
        b.pod("a", fraction=0.5),
        b.pod("b", fraction=0.5),
        _fraction_request("a", "n1", ["g1"]),
        _fraction_request("b", "n1", ["g1"]),
    )
    assert binder.reconcile().bound == ["ns/a", "ns/b"]
    assert len(_reservations(store)) == 1
    store.patch("pods", "a", b.NAMESPACE, {"status": {"phase": "Succeeded"}}, "status")
    binder.reconcile()
    assert len(_reservations(store)) == 1
    store.delete("pods", "b", b.NAMESPACE, grace_period_seconds=0)
    binder.reconcile()
    assert _reservations(store) == []


def test_the_shared_gpu_configmaps_the_webhook_named_are_filled_before_the_bind() -> None:
    """The webhook annotated the pod with its ConfigMap prefix; the binder writes the GPU indices of both
    groups (in the request's order) and the portion, owned by the pod."""
    pod = b.pod("p", fraction=0.5, annotations={"runai/shared-gpu-configmap": "p-bcdfghj"})
    store, _, binder = _cluster(pod, _fraction_request("p", "n1", ["g1", "g2"]))
    assert binder.reconcile().bound == ["ns/p"]
    capabilities = store.get("configmaps", "p-bcdfghj-shared-gpu-0", b.NAMESPACE)
    assert capabilities["data"] == {"NVIDIA_VISIBLE_DEVICES": "0,1", "RUNAI_NUM_OF_GPUS": "0.5"}
    assert [r["uid"] for r in capabilities["metadata"]["ownerReferences"]] == [f"pod-{b.NAMESPACE}-p"]
    assert store.get("configmaps", "p-bcdfghj-shared-gpu-0-evar", b.NAMESPACE)["data"] == {}


def test_a_pod_the_webhook_did_not_mutate_is_bound_without_configmaps() -> None:
    store, _, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]))
    assert binder.reconcile().bound == ["ns/p"]
    assert store.list("configmaps")[0] == []


def test_a_collection_reads_the_pods_watch_not_a_list() -> None:
    """A sync lists pods and BindRequests once, then follows their watches: its cost follows what changed,
    not how many shared-GPU pods there are."""
    store, _, binder = _cluster(b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"]))
    binder.reconcile()
    listed: list[str] = []
    real_list = store.list

    def counting_list(resource: str, *args: object, **kwargs: object) -> tuple[list[JSON], str]:
        listed.append(resource)
        return real_list(resource, *args, **kwargs)  # type: ignore[arg-type]

    store.list = counting_list  # type: ignore[method-assign]
    for _ in range(3):
        binder.reconcile()
    assert listed == []


class _NoReservationNamespace(MemoryStore):
    """A cluster whose reservation namespace does not exist: the API server answers NotFound to a pod created there."""

    def create(self, obj: JSON, *, shared: bool = False) -> JSON:
        if obj.get("kind") == "Pod" and obj["metadata"].get("namespace") == NS:
            raise NotFound(f'create Pod {NS}/{obj["metadata"]["name"]}: namespaces "{NS}" not found')
        return super().create(obj, shared=shared)


def test_a_missing_reservation_namespace_fails_the_bind_with_the_reason_and_is_retried() -> None:
    """Not the silence of a pod gone: the request says why it is stuck, and binds once the namespace exists."""
    clock = ManualClock(b.NOW)
    store = _NoReservationNamespace(clock)
    request = _fraction_request("p", "n1", ["g1"])
    request["spec"]["backoffLimit"] = 3
    store.add_many([b.node("n1", gpus=4), b.pod("p", fraction=0.5), request])
    binder = Binder(store, clock, reservation.ReservationConfig(assign_indices=True))
    outcome = binder.reconcile()
    assert [key for key, _ in outcome.failed] == ["ns/p"]
    status = store.get("bindrequests", "p", b.NAMESPACE)["status"]
    assert status["phase"] == "Failed" and f'namespaces "{NS}" not found' in status["reason"]
    store.__class__ = MemoryStore  # the namespace is created
    clock.advance(1)
    assert binder.reconcile().bound == ["ns/p"]


def test_a_fractional_request_of_an_earlier_pod_of_the_same_name_leaves_the_new_pod_untouched() -> None:
    request = _fraction_request("p", "n1", ["g1"])
    request["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "earlier-uid"}]
    store, _, binder = _cluster(b.pod("p", fraction=0.5), request)
    outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    got = store.get("pods", "p", b.NAMESPACE)
    assert "nodeName" not in got["spec"]
    assert "runai-gpu-group" not in (got["metadata"].get("labels") or {})  # nothing written on the new pod
    assert _reservations(store) == []


def test_the_reservation_pods_take_the_resources_and_security_contexts_given() -> None:
    """KAI's --resource-reservation-pod-resources and -security-context flags: CPU and memory beside the one GPU,
    which stays the binder's whatever the setting says."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4), b.pod("p", fraction=0.5), _fraction_request("p", "n1", ["g1"])])
    config = reservation.ReservationConfig(
        assign_indices=True,
        resources={"requests": {"cpu": "10m"}, "limits": {"memory": "64Mi"}},
        pod_security_context={"runAsNonRoot": True},
        container_security_context={"allowPrivilegeEscalation": False},
    )
    assert Binder(store, clock, config).reconcile().bound == ["ns/p"]
    [made] = _reservations(store)
    container = made["spec"]["containers"][0]
    assert container["resources"] == {
        "requests": {"cpu": "10m", "nvidia.com/gpu": "1"},
        "limits": {"memory": "64Mi", "nvidia.com/gpu": "1"},
    }
    assert container["securityContext"] == {"allowPrivilegeEscalation": False}
    assert made["spec"]["securityContext"] == {"runAsNonRoot": True}
