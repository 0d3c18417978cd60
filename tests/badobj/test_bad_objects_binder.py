"""The binder with one bad BindRequest among good ones: `reconcile` never raises, the good requests are bound as
without the bad one, and a request the binder cannot read is skipped with a warning naming it and the field.

A BindRequest's spec is the scheduler's own writing, but any client may write one (its CRD types the fields, so
the values drawn here are those of the right JSON type, and of any type under `status`, which a client writes
through the status subresource, and in files `kai schedule` reads)."""

from __future__ import annotations

import functools
import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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


def run(requests: list[JSON]) -> tuple[list[str], MemoryStore]:
    """Three reconciles, a minute apart (a retry is due in between), over the cluster; the pods bound, sorted."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4), b.node("n2", gpus=4), *PODS, *requests])
    binder = Binder(store, clock, reservation.ReservationConfig(assign_indices=True))
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
        bound, _ = run([*REQUESTS[:index], bad, *REQUESTS[index + 1 :]])
    finally:
        logger.removeHandler(records)
    pod = f"ns/{REQUESTS[index]['metadata']['name']}"
    skipped = [r for r in records.records if r.getMessage() == "bad BindRequest skipped"]
    if skipped:
        reason = str(getattr(skipped[0], "reason", ""))
        assert reason.startswith(f"BindRequest {pod} "), reason
        assert [p for p in bound if p != pod] == [p for p in without(index) if p != pod] and pod not in bound


CHANGES = st.integers(0, len(REQUESTS) - 1).flatmap(
    lambda i: st.tuples(st.just(i), st.sampled_from(m.mutations(REQUESTS[i])))
)


@settings(max_examples=80, deadline=None)
@given(change=CHANGES)
def test_one_bad_bind_request_never_stops_the_binder_nor_the_other_binds(change: tuple[int, m.Mutation]) -> None:
    check(*change)


def test_the_good_requests_are_all_bound() -> None:
    assert run(REQUESTS)[0] == ["ns/frac", "ns/retry", "ns/whole"], "lost's node n3 does not exist"
