"""priority: the job of higher PodGroup priority goes first; equal priorities are left to later rules."""

from __future__ import annotations

import pytest

from kai_scheduler.plugins.priority import Priority
from tests.plugins import builders as b
from tests.plugins.builders import node, pod, podgroup, priority_class


@pytest.mark.parametrize(
    "left, right, want",
    [
        pytest.param("high", "low", -1, id="higher priority first"),
        pytest.param("low", "high", 1, id="lower priority later"),
        pytest.param("low", "low", 0, id="equal priority is a tie"),
    ],
)
def test_job_order(left: str, right: str, want: int) -> None:
    snap = b.snapshot(
        nodes=[node("n1")],
        pods=[pod("a"), pod("b")],
        podgroups=[podgroup("a", priority_class=left), podgroup("b", priority_class=right)],
        priority_classes=[priority_class("high", 100), priority_class("low", 10)],
    )
    assert Priority().job_order(snap.jobs["pg-a"], snap.jobs["pg-b"]) == want


def test_session_orders_by_priority_then_age() -> None:
    snap = b.snapshot(
        nodes=[node("n1")],
        pods=[pod("old-low"), pod("new-high"), pod("new-low")],
        podgroups=[
            podgroup("old-low", priority_class="low", created=1),
            podgroup("new-high", priority_class="high", created=5),
            podgroup("new-low", priority_class="low", created=3),
        ],
        priority_classes=[priority_class("high", 100), priority_class("low", 10)],
    )
    ssn = b.session(snap, Priority())
    assert [j.name for j in sorted(snap.jobs.values(), key=ssn.job_key)] == ["new-high", "old-low", "new-low"]
