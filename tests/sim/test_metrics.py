"""Metrics on small runs checked by hand, and the helpers they rest on."""

from __future__ import annotations

import math

import pytest

from kai_scheduler.sim.metrics import percentiles, time_weighted_mean
from tests.sim.helpers import scenario, simulate


def test_hand_checked_run() -> None:
    # one node of 4 GPUs. big (3 GPUs, older) runs 0-100 s; small (2 GPUs) cannot fit beside it and waits
    # until 100 s, then runs 100-200 s. While small waits, the 1 idle GPU is of no use to it.
    result = simulate(
        scenario(
            """
        - {name: big, queue: a, createdAt: 2, duration: 100s, replicas: 1, template: {gpus: 3}}
        - {name: small, queue: a, createdAt: 1, duration: 100s, replicas: 1, template: {gpus: 2}}
    """,
            quota_a=4,
            quota_b=0,
        )
    )
    s = result.summary
    assert s.makespan == 200.0
    assert s.allocation_ratio == pytest.approx((100 * 0.75 + 100 * 0.5) / 200)
    assert s.idle_unusable_mean == pytest.approx(100 * 1 / 200)
    assert sorted(s.wait) == [0.0, 100.0]
    assert sorted(s.completion) == [100.0, 200.0]
    assert s.to_json()["wait_seconds"] == {"p50": 50.0, "p90": 90.0, "p99": 99.0}
    queue_a = s.to_json()["queues"]["a"]
    assert queue_a["allocated_gpus"] == pytest.approx((3 * 100 + 2 * 100) / 200)
    assert queue_a["fair_share_gpus"] > 0
    assert s.fairness_mean == pytest.approx(1.0)  # one queue with a fair share: perfectly fair
    assert s.gang_wait == []  # no job needs more than one pod


def test_series_rows_are_steps_at_each_change() -> None:
    result = simulate(
        scenario("""
        - {name: one, queue: a, duration: 60s, replicas: 2, template: {gpus: 1}}
        - {name: two, queue: b, submitAt: 30s, duration: 60s, replicas: 1, template: {gpus: 1}}
    """)
    )
    s = result.series
    steps = list(zip(s.time, s.cluster["allocated_gpus"], strict=True))
    assert steps[0] == (0.0, 2.0) and (30.0, 3.0) in steps and (60.0, 1.0) in steps and steps[-1] == (90.0, 0.0)
    assert s.queues["b"]["allocated"][s.time.index(30.0)] == 1.0
    header, rows = s.rows()
    assert header[:2] == ["time", "allocated_gpus"] and "b.fair_share" in header and len(rows) == len(s.time)


@pytest.mark.parametrize(
    "time, values, end, want",
    [
        pytest.param([0, 10], [1, 0], 20, 0.5, id="half the span at 1"),
        pytest.param([5], [2], 10, 1.0, id="zero before the first row"),
        pytest.param([0, 10], [math.nan, 4], 20, 4.0, id="undefined rows left out"),
        pytest.param([0], [3], 0, 3.0, id="an instant run takes its value"),
    ],
)
def test_time_weighted_mean(time: list[float], values: list[float], end: float, want: float) -> None:
    assert time_weighted_mean(time, values, end) == pytest.approx(want)


def test_percentiles_of_nothing_are_null() -> None:
    assert percentiles([]) == {"p50": None, "p90": None, "p99": None}
    assert percentiles([10.0]) == {"p50": 10.0, "p90": 10.0, "p99": 10.0}


def test_fairness_index_of_unequal_queues() -> None:
    # a (quota 2) and b (quota 2) on 4 GPUs; a holds 3, b holds 1 once both run: fair shares 2 / 2
    result = simulate(
        scenario("""
        - {name: a1, queue: a, duration: 100s, replicas: 3, minMember: 1, template: {gpus: 1}}
        - {name: b1, queue: b, duration: 100s, replicas: 1, template: {gpus: 1}}
    """)
    )
    fairness = [v for v in result.series.cluster["fairness"] if not math.isnan(v)]
    assert fairness and all(0 < v <= 1.0 + 1e-9 for v in fairness)
