"""The embedded usage history: decayed allocation over decayed capacity within the window (§5.5)."""

from __future__ import annotations

import math

import pytest

from kai_scheduler.usagedb.params import ExtraParams, UsageParams, WindowType
from kai_scheduler.usagedb.recorder import Recorder

HOUR = 3600.0
CAPACITY = (0.0, 0.0, 10.0)


def _recorder(**params: object) -> Recorder:
    return Recorder(UsageParams(**params))  # type: ignore[arg-type]


def test_24_gpu_hours_in_a_10_gpu_cluster_over_10_hours_is_0_24() -> None:
    recorder = _recorder(window_size=10 * HOUR)
    recorder.observe(0, {"a": (0.0, 0.0, 4.0)}, CAPACITY)
    recorder.observe(6 * HOUR, {"a": (0.0, 0.0, 0.0)}, CAPACITY)
    assert recorder.compute(10 * HOUR)["a"][2] == pytest.approx(0.24)


def test_no_history_means_no_usage() -> None:
    assert _recorder().usage(0).by_queue == {}


def test_a_value_holds_until_the_next_report() -> None:
    recorder = _recorder()
    recorder.observe(0, {"a": (0.0, 0.0, 5.0), "b": (0.0, 0.0, 1.0)}, CAPACITY)
    usage = recorder.compute(HOUR)
    assert usage["a"][2] == pytest.approx(0.5) and usage["b"][2] == pytest.approx(0.1)


def test_the_sliding_window_drops_old_reports() -> None:
    recorder = _recorder(window_size=HOUR)
    recorder.observe(0, {"a": (0.0, 0.0, 10.0)}, CAPACITY)
    recorder.observe(2 * HOUR, {"a": (0.0, 0.0, 0.0)}, CAPACITY)
    assert recorder.compute(3 * HOUR)["a"][2] == 0.0
    assert len(recorder.samples) == 2, "the first report still held inside the window when the second came"
    recorder.observe(3 * HOUR, {"a": (0.0, 0.0, 0.0)}, CAPACITY)
    assert [s.at for s in recorder.samples] == [2 * HOUR, 3 * HOUR], "reports wholly before the window go"


def test_decay_weighs_recent_use_more() -> None:
    recorder = _recorder(half_life=HOUR)
    recorder.observe(0, {"old": (0.0, 0.0, 10.0), "new": (0.0, 0.0, 0.0)}, CAPACITY)
    recorder.observe(HOUR, {"old": (0.0, 0.0, 0.0), "new": (0.0, 0.0, 10.0)}, CAPACITY)
    usage = recorder.compute(2 * HOUR)
    # ∫ 0.5^((2h - t)/1h) over [0, 1h] is a third of that over [0, 2h]... and the rest is [1h, 2h]
    assert usage["old"][2] == pytest.approx(1 / 3) and usage["new"][2] == pytest.approx(2 / 3)
    assert usage["old"][2] + usage["new"][2] == pytest.approx(1.0)
    assert not math.isclose(usage["old"][2], usage["new"][2])


def test_a_tumbling_window_starts_over() -> None:
    recorder = _recorder(window_type=WindowType.TUMBLING, window_size=2 * HOUR, tumbling_window_start=0.0)
    recorder.observe(0, {"a": (0.0, 0.0, 10.0)}, CAPACITY)
    assert recorder.compute(HOUR)["a"][2] == pytest.approx(1.0)
    assert recorder.compute(2.5 * HOUR)["a"][2] == pytest.approx(1.0), "the value still holds in the new window"
    recorder.observe(2.5 * HOUR, {"a": (0.0, 0.0, 0.0)}, CAPACITY)
    assert recorder.compute(3 * HOUR)["a"][2] == pytest.approx(0.5)


def test_reports_within_one_resolution_step_replace_each_other() -> None:
    recorder = Recorder(UsageParams(extra=ExtraParams(query_resolution=60.0)))
    recorder.observe(0, {"a": (0.0, 0.0, 10.0)}, CAPACITY)
    recorder.observe(30, {"a": (0.0, 0.0, 0.0)}, CAPACITY)
    assert len(recorder.samples) == 1 and recorder.compute(60)["a"][2] == 0.0


def test_usage_is_recomputed_at_most_once_per_fetch_interval() -> None:
    recorder = _recorder(fetch_interval=60.0)
    recorder.observe(0, {"a": (0.0, 0.0, 10.0)}, CAPACITY)
    first = recorder.usage(10)
    recorder.observe(20, {"b": (0.0, 0.0, 10.0)}, CAPACITY)
    assert recorder.usage(30) is first
    assert "b" in recorder.usage(100).by_queue
