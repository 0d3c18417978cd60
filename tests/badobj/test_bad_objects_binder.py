"""The binder with one bad BindRequest among good ones: `reconcile` never raises, the good requests are bound as
without the bad one, and a request the binder cannot read is skipped with a warning naming it and the field, and
told as KAI's binder tells a failed bind (§8.1): phase Failed with the error as its reason, a `Warning
BindingError` event on its pod (on the BindRequest itself when it names no pod), once per message.

A BindRequest's spec is the scheduler's own writing, but any client may write one (its CRD types the fields, so
the values drawn here are those of the right JSON type, and of any type under `status`, which a client writes
through the status subresource, and in files `kai schedule` reads)."""

from __future__ import annotations

import functools
import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder import reservation
from kai_scheduler.binder.binder import Binder
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.badobj import mutations as m

JSON = dict[str, Any]


def _fraction(pod: str, node: str, group: str) -> JSON:
    out = b.bind_request(pod, node)
    out["spec"].update(
        {
            "receivedResourceType": "Fraction",
            "receivedGPU": {"count": 1, "portion": "0.50"},
            "selectedGPUGroups": [group],
        }
    )
    return out


def _requests() -> list[JSON]:
    failed = b.bind_request("retry", "n1", phase="Failed", failed_attempts=1, backoff_limit=3)
    return [b.bind_request("whole", "n1"), _fraction("frac", "n1", "g1"), failed, b.bind_request("lost", "n3")]


PODS = [b.pod("whole", gpus=1), b.pod("frac", fraction=0.5), b.pod("retry", gpus=1), b.pod("lost", gpus=1)]
REQUESTS = _requests()


class CountingStore(MemoryStore):
    """Counts the status writes to BindRequests and the events asked for (an event created twice is one)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.writes: list[tuple[str, str]] = []

    def create(self, obj: JSON) -> JSON:
        if obj.get("kind") == "Event":
            self.writes.append(("event", obj["involvedObject"]["name"]))
        return super().create(obj)

    def patch(self, resource: str, name: str, namespace: str, patch: JSON, *args: Any, **kwargs: Any) -> JSON:
        if resource == "bindrequests":
            self.writes.append(("status", name))
        return super().patch(resource, name, namespace, patch, *args, **kwargs)


def run(requests: list[JSON]) -> tuple[list[str], CountingStore]:
    """Three reconciles, a minute apart (a retry is due in between), over the cluster; the pods bound, sorted."""
    clock = ManualClock(b.NOW)
    store = CountingStore(clock)
    store.add_many([b.node("n1", gpus=4), b.node("n2", gpus=4), *PODS, *requests])
    binder = Binder(store, clock, reservation.ReservationConfig(assign_indices=True), events=True)
    bound = []
    for _ in range(3):
        bound += binder.reconcile().bound
        clock.advance(60)
    return sorted(bound), store


@functools.cache
def without(index: int) -> list[str]:
    return run(REQUESTS[:index] + REQUESTS[index + 1 :])[0]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def check(index: int, mutation: m.Mutation) -> None:
    bad = m.apply(REQUESTS[index], mutation)
    records, logger = Records(), logging.getLogger("kai_scheduler.binder.binder")
    logger.addHandler(records)
    try:
        bound, store = run([*REQUESTS[:index], bad, *REQUESTS[index + 1 :]])
    finally:
        logger.removeHandler(records)
    pod = f"ns/{REQUESTS[index]['metadata']['name']}"
    skipped = [r for r in records.records if r.getMessage() == "bad BindRequest skipped"]
    if skipped:
        reason = str(getattr(skipped[0], "reason", ""))
        assert reason.startswith(f"BindRequest {pod} "), reason
        assert [p for p in bound if p != pod] == [p for p in without(index) if p != pod]
        # Its pod is not bound, unless only its status was bad: written Failed, it is then a failed request that
        # its backoff limit lets the binder retry.
        assert pod not in bound or (
            mutation.path[0] == "status"
            and BindRequest.from_dict(store.get("bindrequests", REQUESTS[index]["metadata"]["name"], b.NAMESPACE)).phase
            in ("Failed", "Succeeded")
        )
        assert len(skipped) == len({r.getMessage() + str(getattr(r, "reason", "")) for r in skipped}), "told once"
        status = _stored_status(store, REQUESTS[index]["metadata"]["name"])
        if pod in bound:
            assert status.get("phase") == "Succeeded", status
        elif _status_of(bad).get("phase") != "Succeeded":
            assert status.get("phase") == "Failed" and status.get("reason"), status


def _stored_status(store: MemoryStore, name: str) -> JSON:
    return _status_of(store.get("bindrequests", name, b.NAMESPACE))


def _status_of(obj: JSON) -> JSON:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


CHANGES = st.integers(0, len(REQUESTS) - 1).flatmap(
    lambda i: st.tuples(st.just(i), st.sampled_from(m.mutations(REQUESTS[i])))
)


@settings(max_examples=80, deadline=None)
@given(change=CHANGES)
def test_one_bad_bind_request_never_stops_the_binder_nor_the_other_binds(change: tuple[int, m.Mutation]) -> None:
    check(*change)


def test_the_good_requests_are_all_bound() -> None:
    assert run(REQUESTS)[0] == ["ns/frac", "ns/retry", "ns/whole"], "lost's node n3 does not exist"


def _events(store: MemoryStore, kind: str, name: str) -> list[JSON]:
    return [
        e
        for e in store.list("events")[0]
        if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name and e["reason"] == "BindingError"
    ]


def test_a_refused_bind_request_fails_as_a_bind_does_with_an_event_on_its_pod_once() -> None:
    bad = b.bind_request("whole", "n1")
    bad["spec"]["receivedResourceType"] = "Whole"
    _, store = run([bad])
    status = _stored_status(store, "whole")
    assert status == {
        "phase": "Failed",
        "reason": "BindRequest ns/whole spec.receivedResourceType: unknown type 'Whole'",
        "failedAttempts": 1,
    }
    (event,) = _events(store, "Pod", "whole")
    assert event["type"] == "Warning"
    assert event["message"] == f"Failed to bind pod ns/whole: {status['reason']}"
    assert store.get("pods", "whole", b.NAMESPACE)["spec"].get("nodeName") is None
    # three reconciles, one status write and one event: the binder does not answer its own status write
    assert store.writes.count(("status", "whole")) == 1 and store.writes.count(("event", "whole")) == 1


def test_a_bind_request_too_broken_to_name_its_pod_gets_the_event_on_itself() -> None:
    bad = b.bind_request("whole", "n1")
    bad["spec"] = "whole on n1"
    _, store = run([bad])
    assert _stored_status(store, "whole")["phase"] == "Failed"
    (event,) = _events(store, "BindRequest", "whole")
    assert event["involvedObject"]["namespace"] == b.NAMESPACE
    assert event["message"] == "Failed to bind: BindRequest ns/whole spec: expected a mapping, got 'whole on n1'"
    assert _events(store, "Pod", "whole") == []


def test_a_refused_bind_request_already_succeeded_is_left_as_it_is() -> None:
    bad = b.bind_request("whole", "n1", phase="Succeeded")
    bad["spec"]["receivedGPU"]["count"] = "one"
    _, store = run([bad])
    assert _stored_status(store, "whole")["phase"] == "Succeeded"
    assert _events(store, "Pod", "whole") == [] and ("status", "whole") not in store.writes


def test_a_refused_status_is_overwritten_and_the_request_is_then_a_failed_one() -> None:
    bad = b.bind_request("whole", "n1", phase="Binding")
    _, store = run([bad])
    status = _stored_status(store, "whole")
    assert status["phase"] == "Failed" and "status.phase: unknown phase 'Binding'" in status["reason"]
    assert store.get("pods", "whole", b.NAMESPACE)["spec"].get("nodeName") is None  # not bound behind its back
    assert store.writes.count(("status", "whole")) == 1
