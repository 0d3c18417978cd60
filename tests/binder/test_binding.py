"""One bind (`binder.binding`): the pod read only when a plugin has work, the plugins' pre-bind steps in their
order on it, one patch of the pod with what they asked for, the binding; what they reserved taken back when the
patch or the binding fails; a NotFound of theirs a failure, not a pod gone. And which plugins run (`config`)."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder import reservation
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.binding import Binding, Missing
from kai_scheduler.binder.plugins import config
from kai_scheduler.binder.plugins.gpusharing import GPUSharing
from kai_scheduler.binder.plugins.interface import BindingState, PreBindFailed, PreBindPending
from kai_scheduler.store.interface import JSON, NotFound, StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


class Step:
    """A plugin that records its calls in `seen`, asks for a label, and undoes its step into `seen` too."""

    def __init__(self, name: str, seen: list[str], *, relevant: bool = True, error: Exception | None = None) -> None:
        self.name = name
        self.seen = seen
        self.relevant = relevant
        self.error = error

    def is_relevant(self, request: BindRequest) -> bool:
        return self.relevant

    def pre_bind(self, state: BindingState) -> None:
        self.seen.append(f"{self.name} on {state.pod['metadata']['uid']}")
        if self.error is not None:
            raise self.error
        state.labels[self.name] = "yes"
        state.rollbacks.append(lambda: self.seen.append(f"{self.name} undone"))


class Counting(MemoryStore):
    def __init__(self, clock: ManualClock, fail: str = "") -> None:
        super().__init__(clock)
        self.fail = fail
        self.calls: list[str] = []

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        self.calls.append(f"get {resource}")
        return super().get(resource, name, namespace)

    def patch(self, resource: str, name: str, namespace: str, patch: JSON, *args: Any, **kwargs: Any) -> JSON:
        self.calls.append(f"patch {resource}")
        if self.fail == "patch":
            raise StoreError("patch refused")
        return super().patch(resource, name, namespace, patch, *args, **kwargs)

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.calls.append("bind")
        if self.fail == "bind":
            raise StoreError("binding refused")
        super().bind(namespace, pod_name, node_name, uid)


def _store(fail: str = "") -> Counting:
    store = Counting(ManualClock(b.NOW), fail)
    store.add_many([b.node("n1"), b.pod("p", gpus=1), b.bind_request("p", "n1")])
    return store


def _request(store: MemoryStore) -> BindRequest:
    return BindRequest.from_dict(store.get("bindrequests", "p", b.NAMESPACE))


def test_the_steps_run_in_order_on_the_pod_and_their_labels_go_in_one_patch_before_the_binding() -> None:
    store, seen = _store(), []
    br = _request(store)
    store.calls.clear()
    Binding(store, [Step("first", seen), Step("idle", seen, relevant=False), Step("second", seen)]).bind(br, "ns/p")
    assert seen == ["first on pod-ns-p", "second on pod-ns-p"]
    assert store.calls == ["get pods", "patch pods", "bind"]
    pod = store.get("pods", "p", b.NAMESPACE)
    assert pod["metadata"]["labels"]["first"] == pod["metadata"]["labels"]["second"] == "yes"
    assert pod["spec"]["nodeName"] == "n1"


def test_with_no_step_to_run_the_pod_is_neither_read_nor_patched() -> None:
    store = _store()
    br = _request(store)
    store.calls.clear()
    Binding(store, [Step("idle", [], relevant=False)]).bind(br, "ns/p")
    assert store.calls == ["bind"]


@pytest.mark.parametrize("fail", ["patch", "bind"])
def test_a_failed_patch_or_binding_takes_back_what_the_steps_did_in_their_order(fail: str) -> None:
    store, seen = _store(fail), []
    with pytest.raises(StoreError, match="refused"):
        Binding(store, [Step("first", seen), Step("second", seen)]).bind(_request(store), "ns/p")
    assert seen == ["first on pod-ns-p", "second on pod-ns-p", "first undone", "second undone"]


@pytest.mark.parametrize("error", [StoreError("no room"), PreBindFailed("no room"), NotFound("no room")])
def test_a_failed_step_stops_the_bind_and_takes_back_the_earlier_steps_work(error: Exception) -> None:
    """As KAI rolls back every plugin after a failed bind: claims reserved by `dynamicresources` are not left held
    for a pod whose GPU sharing step failed."""
    store, seen = _store(), []
    steps = [Step("first", seen), Step("second", seen, error=error), Step("third", seen)]
    with pytest.raises(type(error) if not isinstance(error, NotFound) else Missing, match="no room"):
        Binding(store, steps).bind(_request(store), "ns/p")
    assert seen == ["first on pod-ns-p", "second on pod-ns-p", "first undone"]
    assert store.calls[-1] == "get pods"  # neither patched nor bound
    assert not store.get("pods", "p", b.NAMESPACE)["spec"].get("nodeName")


def test_a_waiting_step_leaves_the_earlier_steps_work_for_the_next_pass() -> None:
    store, seen = _store(), []
    with pytest.raises(PreBindPending):
        Binding(store, [Step("first", seen), Step("second", seen, error=PreBindPending("reservation pod"))]).bind(
            _request(store), "ns/p"
        )
    assert seen == ["first on pod-ns-p", "second on pod-ns-p"]


def test_an_undo_that_fails_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    store, seen = _store("bind"), []

    class Unlucky(Step):
        def pre_bind(self, state: BindingState) -> None:
            state.rollbacks.append(lambda: (_ for _ in ()).throw(StoreError("claim changed")))

    with pytest.raises(StoreError, match="binding refused"):
        Binding(store, [Unlucky("first", seen), Step("second", seen)]).bind(_request(store), "ns/p")
    assert seen == ["second on pod-ns-p", "second undone"]
    assert "taking back a bind step failed: claim changed" in caplog.text


def test_a_steps_not_found_is_a_failure_of_the_bind_not_a_pod_gone() -> None:
    store = _store()
    with pytest.raises(Missing, match="configmaps x not found") as caught:
        Binding(store, [Step("first", [], error=NotFound("configmaps x not found"))]).bind(_request(store), "ns/p")
    assert caught.value.reason == "NotFound"


def test_the_plugins_in_kais_order_with_hamicore_a_setting() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    reservations = reservation.Reservations(store, ManualClock(b.NOW))
    for hami_core in (False, True):
        plugins = config.build(store, reservations, hami_core=hami_core)
        assert [p.name for p in plugins] == ["dynamicresources", "gpusharing"]
        [sharing] = [p for p in plugins if isinstance(p, GPUSharing)]
        assert (sharing.hami_core is not None) is hami_core


def test_a_pods_claims_are_reserved_before_its_gpu_groups() -> None:
    """`dynamicresources` runs before `gpusharing`: the claim's status is written before the reservation pod."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    br = b.bind_request("p", "n1")
    allocation = {
        "devices": {"results": [{"request": "devices", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}
    }
    br["spec"].update(
        {
            "receivedResourceType": "Fraction",
            "receivedGPU": {"count": 1, "portion": "0.50"},
            "selectedGPUGroups": ["g1"],
            "resourceClaimAllocations": [{"name": "gpu", "allocation": allocation}],
        }
    )
    pod = b.pod("p", fraction=0.5, claims={"gpu": "template:one-gpu"}, claim_statuses={"gpu": "p-gpu"})
    store.add_many([b.node("n1", gpus=4), b.claim("p-gpu", for_pod="p"), pod, br])
    assert Binder(store, clock, reservation.ReservationConfig(assign_indices=True)).reconcile().bound == ["ns/p"]
    claim = store.get("resourceclaims", "p-gpu", b.NAMESPACE)
    [reserved] = store.list("pods", reservation.ReservationConfig().namespace)[0]
    assert int(claim["metadata"]["resourceVersion"]) < int(reserved["metadata"]["resourceVersion"])
