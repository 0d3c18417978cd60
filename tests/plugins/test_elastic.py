"""elastic: jobs below their minimum first, exactly at it next, above it last."""

from __future__ import annotations

import pytest

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.plugins.elastic import Elastic
from kai_scheduler.plugins.priority import Priority
from tests.plugins import builders as b
from tests.plugins.builders import node, pod, podgroup

RUNNING = {"below": 1, "at": 2, "above": 3}  # running pods of jobs with minMember 2


def _snapshot() -> Snapshot:
    pods = [
        pod(f"{job}-{i}", group=job, node="n1" if i < running else "")
        for job, running in RUNNING.items()
        for i in range(4)
    ]
    return b.snapshot(
        nodes=[node("n1", cpu="64")], pods=pods, podgroups=[podgroup(job, min_member=2) for job in RUNNING]
    )


@pytest.mark.parametrize(
    "left, right, want",
    [
        pytest.param("below", "at", -1, id="below min before at min"),
        pytest.param("at", "above", -1, id="at min before above min"),
        pytest.param("below", "above", -1, id="below min before above min"),
        pytest.param("above", "below", 1, id="above min after below min"),
        pytest.param("at", "at", 0, id="same band is a tie"),
    ],
)
def test_job_order(left: str, right: str, want: int) -> None:
    snap = _snapshot()
    assert Elastic().job_order(snap.jobs[f"pg-{left}"], snap.jobs[f"pg-{right}"]) == want


def test_priority_decides_before_elasticity() -> None:
    snap = _snapshot()
    snap.jobs["pg-above"].priority = 200
    ssn = b.session(snap, Priority(), Elastic())
    assert [j.name for j in sorted(snap.jobs.values(), key=ssn.job_key)] == ["above", "below", "at"]


def test_placements_in_the_session_move_a_job_between_bands() -> None:
    snap = _snapshot()
    ssn = b.session(snap, Elastic())
    below, at = snap.jobs["pg-below"], snap.jobs["pg-at"]
    ssn.statement().allocate(b.task(ssn, "below-1"), "n1")
    assert Elastic().job_order(below, at) == 0


def test_a_band_is_counted_once_per_job_until_one_of_its_tasks_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ordering compares each job many times; its band is counted once, and again after a placement of its own
    (another job's placement leaves it as it was)."""
    from kai_scheduler.plugins import elastic

    counted: list[str] = []
    band = elastic._band

    def counting(job: JobInfo) -> int:
        counted.append(job.name)
        return band(job)

    monkeypatch.setattr(elastic, "_band", counting)
    snap = _snapshot()
    plugin = Elastic()
    ssn = b.session(snap, plugin)
    below, at = snap.jobs["pg-below"], snap.jobs["pg-at"]
    assert [ssn.compare_jobs(below, at) for _ in range(10)] == [-1] * 10
    assert sorted(counted) == ["at", "below"]
    ssn.statement().allocate(b.task(ssn, "below-1"), "n1")
    assert plugin.job_order(below, at) == 0  # both at their minimum now
    assert sorted(counted) == ["at", "below", "below"]
