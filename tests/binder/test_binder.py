"""The binder (§8.1): BindRequest → `pods/binding`, the outcome in the BindRequest status, retries with backoff."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kai_scheduler.api import constants, mig
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import Binder
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]


def _cluster(*objects: JSON) -> tuple[MemoryStore, ManualClock, Binder]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(list(objects))
    return store, clock, Binder(store, clock)


def _status(store: MemoryStore, name: str = "p") -> JSON:
    status: JSON = store.get("bindrequests", name, b.NAMESPACE).get("status", {})
    return status


def _node_name(store: MemoryStore, name: str = "p") -> str:
    return str(store.get("pods", name, b.NAMESPACE)["spec"].get("nodeName", ""))


def _version(store: MemoryStore, name: str = "p") -> str:
    return str(store.get("bindrequests", name, b.NAMESPACE)["metadata"]["resourceVersion"])


def test_a_successful_bind_sets_the_node_and_succeeds_the_request() -> None:
    store, _, binder = _cluster(b.node("n1"), b.pod("p", gpus=1), b.bind_request("p", "n1"))
    outcome = binder.reconcile()
    assert outcome.bound == ["ns/p"] and outcome.failed == []
    assert _node_name(store) == "n1"
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 0}
    conditions = store.get("pods", "p", b.NAMESPACE)["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [("PodScheduled", "True")]


def test_a_succeeded_request_is_not_processed_again() -> None:
    store, _, binder = _cluster(b.node("n1"), b.pod("p"), b.bind_request("p", "n1"))
    binder.reconcile()
    version = _version(store)
    assert binder.reconcile().bound == []
    assert _version(store) == version


def test_requests_are_watched_not_listed_and_settled_ones_cost_no_reads() -> None:
    """Against an API server every request counts: after the first sync the binder only drains its watch, binds
    a whole-GPU pod without reading it first, and leaves a request whose pod is already bound alone."""
    clock = ManualClock(b.NOW)
    store = CountingStore(clock)
    store.add_many(
        [b.node("n1"), b.pod("p"), b.bind_request("p", "n1"), b.pod("q", node="n1"), b.bind_request("q", "n1")]
    )
    binder = Binder(store, clock, collect_every=60)
    assert binder.reconcile().bound == ["ns/p"]
    store.calls.clear()
    for _ in range(3):
        clock.advance(1)
        assert binder.reconcile().bound == []
    assert store.calls == []
    store.create(b.pod("r"))
    store.create(b.bind_request("r", "n1"))
    store.calls.clear()
    assert binder.reconcile().bound == ["ns/r"]
    assert store.calls == []


class CountingStore(MemoryStore):
    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.calls: list[tuple[str, str]] = []

    def list(
        self, resource: str, namespace: str | None = None, selector: Any = None, **kw: Any
    ) -> tuple[list[JSON], str]:
        self.calls.append(("list", resource))
        return super().list(resource, namespace, selector, **kw)

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        self.calls.append(("get", resource))
        return super().get(resource, name, namespace)


def test_a_missing_node_fails_the_request_with_the_reason() -> None:
    store, _, binder = _cluster(b.pod("p"), b.bind_request("p", "ghost"))
    outcome = binder.reconcile()
    assert outcome.bound == [] and [key for key, _ in outcome.failed] == ["ns/p"]
    status = _status(store)
    assert status["phase"] == "Failed" and status["failedAttempts"] == 1
    assert "ghost" in status["reason"] and "\n" not in status["reason"]
    assert _node_name(store) == ""


def test_without_a_backoff_limit_a_failure_is_final() -> None:
    """The scheduler sets no backoffLimit: one failure, then the scheduler deletes the request and re-places."""
    store, clock, binder = _cluster(b.pod("p"), b.bind_request("p", "ghost"))
    binder.reconcile()
    version = _version(store)
    store.create(b.node("ghost"))
    for _ in range(3):
        clock.advance(60)
        assert binder.reconcile().bound == []
    assert _version(store) == version and _status(store)["failedAttempts"] == 1


def test_a_failed_request_is_retried_after_a_doubling_backoff() -> None:
    store, clock, binder = _cluster(b.pod("p"), b.bind_request("p", "ghost", backoff_limit=3))
    timeline = []
    for step in range(8):  # half-second steps: 0, 0.5, … 3.5 s
        outcome = binder.reconcile()
        if outcome.failed:
            timeline.append((step / 2, _status(store)["failedAttempts"]))
        clock.advance(0.5)
    assert timeline == [
        (0.0, 1),  # first attempt fails
        (1.0, 2),  # retried after 2^0 = 1 s
        (3.0, 3),  # retried after 2^1 = 2 s; 3 attempts reach the backoff limit of 3
    ]
    clock.advance(60)
    assert binder.reconcile().failed == [], "no attempt past the backoff limit"


def test_the_backoff_stops_doubling_at_a_minute() -> None:
    """controller-runtime's per-item rate limiter as KAI's binder sets it: 1 s doubling, at most 60 s."""
    _, clock, binder = _cluster(b.pod("p"), b.bind_request("p", "ghost", backoff_limit=20))
    failed_at = []
    for second in range(190):
        if binder.reconcile().failed:
            failed_at.append(second)
        clock.advance(1)
    assert failed_at == [0, 1, 3, 7, 15, 31, 63, 123, 183]


def test_a_request_made_anew_after_failures_is_bound_at_once() -> None:
    """The backoff is the request's: the scheduler deleting it and writing a new one of the same name (its pod to be
    placed again) starts over, the new one bound at its first pass, not after the old one's backoff."""
    store, clock, binder = _cluster(b.pod("p"), b.bind_request("p", "n1", backoff_limit=5))
    assert binder.reconcile().failed
    clock.advance(1)
    assert binder.reconcile().failed  # the second failure: 2 s of backoff
    store.delete("bindrequests", "p", b.NAMESPACE)
    store.create(b.node("n1"))
    store.create(b.bind_request("p", "n1", backoff_limit=5))
    assert binder.reconcile().bound == ["ns/p"]
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 0}


def test_a_bind_that_raises_what_no_step_expects_is_tried_again_after_the_backoff() -> None:
    _, clock, binder = _cluster(b.node("n1"), b.pod("p"), b.bind_request("p", "n1"))
    real = binder.binding.bind

    def bug(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    binder.binding.bind = bug  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        binder.reconcile()
    binder.binding.bind = real  # type: ignore[method-assign]
    clock.advance(1)
    assert binder.reconcile().bound == ["ns/p"]


def test_a_retry_binds_once_the_node_exists() -> None:
    store, clock, binder = _cluster(b.pod("p"), b.bind_request("p", "n1", backoff_limit=3))
    assert binder.reconcile().failed
    store.create(b.node("n1"))
    assert binder.reconcile().bound == [], "still within the backoff"
    clock.advance(1)
    assert binder.reconcile().bound == ["ns/p"]
    assert _node_name(store) == "n1"
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 1}


def test_a_pod_already_bound_is_left_alone() -> None:
    store, _, binder = _cluster(
        b.node("n1"), b.node("n2"), b.pod("p", node="n2", phase="Pending"), b.bind_request("p", "n1")
    )
    version = _version(store)
    assert binder.reconcile().bound == []
    assert _node_name(store) == "n2" and _version(store) == version


def test_a_request_for_a_deleted_pod_is_left_alone() -> None:
    store, _, binder = _cluster(b.node("n1"), b.bind_request("p", "n1"))
    outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    assert _status(store) == {}


def test_a_malformed_request_is_skipped_and_the_others_bound() -> None:
    bad = b.bind_request("a", "n1")
    bad["spec"]["receivedResourceType"] = "Whole"
    store, _, binder = _cluster(b.node("n1"), b.pod("a"), b.pod("z"), bad, b.bind_request("z", "n1"))
    assert binder.reconcile().bound == ["ns/z"]
    assert _node_name(store, "a") == ""


def test_requests_are_processed_in_name_order() -> None:
    names = ["c", "a", "b"]
    _, _, binder = _cluster(b.node("n1"), *(b.pod(n) for n in names), *(b.bind_request(n, "n1") for n in names))
    assert binder.reconcile().bound == ["ns/a", "ns/b", "ns/c"]


def test_whole_gpu_requests_are_bound_concurrently_and_reported_in_order() -> None:
    """`--max-concurrent-reconciles`: against an API server a bind is a round trip, so several go at once;
    the outcome is the same as one at a time, in name order."""
    clock = ManualClock(b.NOW)
    store = SlowBindStore(clock)
    pods = [f"p{i:02d}" for i in range(12)]
    store.add_many([b.node("n1", gpus=16), *(b.pod(p, gpus=1) for p in pods), *(b.bind_request(p, "n1") for p in pods)])
    outcome = Binder(store, clock, concurrency=4).reconcile()
    assert outcome.bound == [f"ns/{p}" for p in pods]
    assert all(_node_name(store, p) == "n1" for p in pods)
    assert store.most_at_once > 1


def test_concurrency_below_one_is_refused() -> None:
    clock = ManualClock(b.NOW)
    with pytest.raises(ValueError, match="--max-concurrent-reconciles: must be at least 1"):
        Binder(MemoryStore(clock), clock, concurrency=0)


class SlowBindStore(MemoryStore):
    """A store whose binding takes a moment, as a round trip to an API server does; counts binds in flight."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self._lock = threading.Lock()
        self._in_flight = 0
        self.most_at_once = 0

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        with self._lock:
            self._in_flight += 1
            self.most_at_once = max(self.most_at_once, self._in_flight)
        time.sleep(0.02)
        try:
            super().bind(namespace, pod_name, node_name, uid)
        finally:
            with self._lock:
                self._in_flight -= 1


class _SlowStatusStore(MemoryStore):
    """BindRequest status writes wait until `release` is set; binds are counted."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.release = threading.Event()
        self.binds = 0

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        if resource == "bindrequests" and subresource == "status":
            self.release.wait(10)
        return super().patch(resource, name, namespace, patch, subresource, strategic=strategic)

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.binds += 1
        super().bind(namespace, pod_name, node_name, uid)


def test_with_concurrency_a_bind_does_not_wait_for_its_status_nor_is_taken_up_again() -> None:
    """The Succeeded status is written in the background: the binder goes on once the pod is bound, and a
    request whose status is still on its way is not bound a second time when it changes meanwhile."""
    clock = ManualClock(b.NOW)
    store = _SlowStatusStore(clock)
    pods = ["p0", "p1", "p2"]
    store.add_many([b.node("n1", gpus=8), *(b.pod(p, gpus=1) for p in pods), *(b.bind_request(p, "n1") for p in pods)])
    binder = Binder(store, clock, concurrency=2)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (binder.reconcile(), done.set()), daemon=True)
    worker.start()
    finished = done.wait(5)
    try:
        assert finished, "the binder waited for the statuses"
        assert all(_node_name(store, p) == "n1" for p in pods)
        store.patch("bindrequests", "p0", b.NAMESPACE, {"metadata": {"labels": {"touched": "yes"}}})
        assert binder.reconcile().bound == [] and store.binds == 3
    finally:
        store.release.set()
        worker.join(10)
    deadline = time.monotonic() + 10
    while any(_status(store, p).get("phase") != "Succeeded" for p in pods) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [_status(store, p).get("phase") for p in pods] == ["Succeeded"] * 3
    assert binder.reconcile().bound == [] and store.binds == 3


def test_a_request_whose_pod_is_already_on_its_node_is_finished_as_succeeded() -> None:
    """A binder killed between the binding and the status write finds the pod bound where the request says on
    restart: the request is recorded Succeeded (not left open for ever), and nothing is bound again."""
    store, _, binder = _cluster(b.node("n1"), b.pod("p", node="n1", phase="Pending"), b.bind_request("p", "n1"))
    assert binder.reconcile().bound == []
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 0}
    version = _version(store)
    assert binder.reconcile().bound == []
    assert _version(store) == version


class _NoAnswerStore(MemoryStore):
    """Each binding goes without an answer (the API server killed as it answers): made when `made`, else never
    arrived; with `unreadable`, reading a pod fails too (the server still down)."""

    def __init__(self, clock: ManualClock, *, made: bool) -> None:
        super().__init__(clock)
        self.made = made
        self.answers = False
        self.unreadable = False

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        if self.answers:
            return super().bind(namespace, pod_name, node_name, uid)
        if self.made:
            super().bind(namespace, pod_name, node_name, uid)
        raise StoreError(f"bind Pod {namespace}/{pod_name} to node {node_name}: connection reset by peer")

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        if resource == "pods" and self.unreadable:
            raise StoreError(f"get Pod {namespace}/{name}: connection refused")
        return super().get(resource, name, namespace)


def _no_answer(*, made: bool) -> tuple[_NoAnswerStore, ManualClock, Binder]:
    clock = ManualClock(b.NOW)
    store = _NoAnswerStore(clock, made=made)
    store.add_many([b.node("n1"), b.pod("p", gpus=1), b.bind_request("p", "n1")])
    return store, clock, Binder(store, clock)


def test_a_binding_made_though_its_answer_was_lost_succeeds() -> None:
    """The pod, read after the binding went unanswered, is on the request's node: Succeeded. A Failed status (final
    without a backoffLimit) would have the scheduler delete the request and give the pod's GPU to another pod while
    the pod stays bound there."""
    store, _, binder = _no_answer(made=True)
    outcome = binder.reconcile()
    assert outcome.bound == ["ns/p"] and outcome.failed == []
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 0}


def test_a_binding_that_went_unanswered_and_was_not_made_fails_as_before() -> None:
    store, _, binder = _no_answer(made=False)
    assert [key for key, _ in binder.reconcile().failed] == ["ns/p"]
    assert _status(store)["phase"] == "Failed" and _node_name(store) == ""


def test_an_unanswered_binding_of_a_pod_that_cannot_be_read_is_tried_again_without_a_status() -> None:
    """Whether the pod was bound is not known: no Failed status; after the backoff the request is taken up again,
    and the pod, found on its node, finishes it as Succeeded."""
    store, clock, binder = _no_answer(made=True)
    store.unreadable = True
    outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    assert _status(store) == {}
    store.unreadable, store.answers = False, True
    assert binder.reconcile().failed == [] and _status(store) == {}, "still within the backoff"
    clock.advance(1)
    binder.reconcile()
    assert _status(store) == {"phase": "Succeeded", "reason": "", "failedAttempts": 0}
    assert _node_name(store) == "n1"


def _events(store: MemoryStore) -> list[JSON]:
    return sorted(store.list("events", b.NAMESPACE)[0], key=lambda e: str(e["reason"]))


def _owned_by(request: JSON, pod: JSON) -> JSON:
    meta = pod["metadata"]
    request["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": False}
    ]
    return request


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_bound_pod_gets_a_bound_event_of_its_uid(concurrency: int) -> None:
    """As KAI's binder (§8.1): `Normal Bound` on the pod, named by the pod's uid from the BindRequest's owner
    reference (kubectl describe shows only the events of the pod's uid); by the status threads too."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    pods = [b.pod(name) for name in ("p", "q")]
    store.add_many([b.node("n1"), *pods, *(_owned_by(b.bind_request(p["metadata"]["name"], "n1"), p) for p in pods)])
    binder = Binder(store, clock, events=True, concurrency=concurrency)
    assert binder.reconcile().bound == ["ns/p", "ns/q"]
    deadline = time.monotonic() + 5
    while len(_events(store)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # with concurrency the status and the event are written in the background
    events = sorted(_events(store), key=lambda e: str(e["involvedObject"]["name"]))
    assert [(e["type"], e["reason"], e["involvedObject"]["name"]) for e in events] == [
        ("Normal", "Bound", "p"),
        ("Normal", "Bound", "q"),
    ]
    assert events[0]["message"] == "Pod ns/p bound to node n1"
    assert events[0]["involvedObject"]["uid"] == pods[0]["metadata"]["uid"]
    assert events[0]["source"] == {"component": "binder"}


def test_a_failed_bind_is_a_binding_error_event_with_the_reason() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    pod = b.pod("p")
    store.add_many([pod, _owned_by(b.bind_request("p", "ghost"), pod)])
    Binder(store, clock, events=True).reconcile()
    [event] = _events(store)
    assert (event["type"], event["reason"]) == ("Warning", "BindingError")
    assert event["message"].startswith("Failed to bind pod ns/p to node ghost: ")
    assert "ghost" in event["message"][len("Failed to bind pod ns/p to node ghost: ") :]
    assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]


def test_without_events_the_binder_writes_none() -> None:
    """The embedded cluster and the simulator bind without events (each would be one more write per pod)."""
    store, _, binder = _cluster(b.node("n1"), b.pod("p"), b.bind_request("p", "n1"), b.pod("q"))
    store.create(b.bind_request("q", "ghost"))
    binder.reconcile()
    assert _events(store) == []


class _CountingBinds(MemoryStore):
    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.binds: list[str] = []

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.binds.append(uid)
        super().bind(namespace, pod_name, node_name, uid)


def _of_pod(request: JSON, uid: str) -> JSON:
    """The request as the scheduler makes it: owned by the pod it was made for."""
    owner = {"apiVersion": "v1", "kind": "Pod", "name": request["spec"]["podName"], "uid": uid, "controller": False}
    request["metadata"]["ownerReferences"] = [owner]
    return request


def test_the_binding_carries_the_uid_of_the_pod_the_request_was_made_for() -> None:
    clock = ManualClock(b.NOW)
    store = _CountingBinds(clock)
    store.add_many([b.node("n1"), b.pod("p")])
    uid = store.get("pods", "p", b.NAMESPACE)["metadata"]["uid"]
    store.create(_of_pod(b.bind_request("p", "n1"), uid))
    assert Binder(store, clock).reconcile().bound == ["ns/p"]
    assert store.binds == [uid]


def test_a_request_of_an_earlier_pod_of_the_same_name_is_dropped_without_binding_the_new_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The pod was deleted and made again under its name before the scheduler replaced the request: the server
    refuses the binding (the uid), and the binder takes it as the request's pod gone: no retry, no Failed."""
    clock = ManualClock(b.NOW)
    store = _CountingBinds(clock)
    store.add_many([b.node("n1"), b.pod("p"), _of_pod(b.bind_request("p", "n1", backoff_limit=3), "earlier-uid")])
    binder = Binder(store, clock)
    with caplog.at_level("INFO", logger="kai_scheduler.binder.binder"):
        outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    assert _node_name(store) == ""
    assert "status" not in store.get("bindrequests", "p", b.NAMESPACE)  # not Failed: nothing to retry
    assert "pod ns/p was deleted and made again under its name" in caplog.text
    clock.advance(60)
    assert binder.reconcile().bound == []
    assert store.binds == ["earlier-uid"]  # tried once


def test_the_bind_annotations_of_an_earlier_pod_of_the_same_name_are_not_written_on_the_new_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A MIG request's annotations go out without the pod being read first: the patch names the request's pod's
    uid, the server refuses it for the new pod, and the request is dropped as when the binding is refused."""
    clock = ManualClock(b.NOW)
    store = _CountingBinds(clock)
    request = _of_pod(b.bind_request("p", "n1", backoff_limit=3), "earlier-uid")
    request["spec"]["receivedResourceType"] = "MigInstance"
    request["metadata"]["annotations"] = {mig.ANNOTATION_INSTANCES: "0:1g.10gb"}
    store.add_many([b.node("n1"), b.pod("p"), request])
    binder = Binder(store, clock)
    with caplog.at_level("INFO", logger="kai_scheduler.binder.binder"):
        outcome = binder.reconcile()
    assert outcome.bound == [] and outcome.failed == []
    pod = store.get("pods", "p", b.NAMESPACE)
    assert constants.ANNOTATION_RECEIVED_RESOURCE_TYPE not in (pod["metadata"].get("annotations") or {})
    assert "status" not in store.get("bindrequests", "p", b.NAMESPACE)
    assert "pod ns/p was deleted and made again under its name" in caplog.text
    assert store.binds == []


def test_a_status_written_late_never_lands_on_a_newer_request_of_the_same_name() -> None:
    """The pod deleted and made again under its name: the scheduler puts its new request in place of the first
    (the same name) while the binder's write of the first's status is still to go. That write must not mark the
    new request Succeeded (its pod would never be bound), nor fail for a request of the same object changed."""
    store, _, binder = _cluster(b.node("n1"), b.pod("p"), b.bind_request("p", "n1"))
    first = BindRequest.from_dict(store.get("bindrequests", "p", b.NAMESPACE))
    store.delete("bindrequests", "p", b.NAMESPACE)
    store.create(b.bind_request("p", "n1"))
    binder._status(first, "Succeeded", "", 0)
    assert _status(store) == {}  # the newer request is untouched

    current = BindRequest.from_dict(store.get("bindrequests", "p", b.NAMESPACE))
    store.patch("bindrequests", "p", b.NAMESPACE, {"metadata": {"labels": {"changed": "yes"}}})  # a newer version
    binder._status(current, "Succeeded", "", 0)  # read again on the Conflict: still this request, written
    assert _status(store)["phase"] == "Succeeded"
