"""`kai simulate`'s progress off a terminal: no bar, a line per tenth of the horizon once the replay is slow."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kai_scheduler.sim import progress
from kai_scheduler.sim.replay import Replay


def _replay(now: float) -> Replay:
    fake = SimpleNamespace(
        engine=SimpleNamespace(now=now),
        recorder=SimpleNamespace(allocated=6.0, total_gpus=8.0),
        workload=SimpleNamespace(done=3, jobs=[None] * 10, pending=2),
    )
    return cast(Replay, cast(Any, fake))


def test_off_a_terminal_a_slow_replay_says_where_it_is_at_each_tenth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_AFTER", 0.0)
    log = io.StringIO()  # not a terminal
    with progress.Bar("run", 3600, stream=log) as bar:
        for now in (0, 100, 359, 360, 400, 1800, 1850, 3600, 4000):
            bar(_replay(now))
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert [line.split("virtual time ")[1].split(" of")[0] for line in lines] == ["6m00s", "30m00s", "1h00m", "1h06m"]
    # past the horizon (jobs waited longer than expected) it goes on
    assert lines[0] == "run: virtual time 6m00s of about 1h00m, GPUs 75 % allocated, jobs 3/10 done, 2 pending (0s)"


def test_a_quick_replay_or_no_progress_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    with progress.Bar("run", 3600, stream=log) as bar:  # well under PLAIN_AFTER wall seconds
        for now in range(0, 3601, 360):
            bar(_replay(now))
    monkeypatch.setattr(progress, "PLAIN_AFTER", 0.0)
    with progress.Bar("run", 3600, enabled=False, stream=log) as bar:  # --no-progress
        for now in range(0, 3601, 360):
            bar(_replay(now))
    assert log.getvalue() == ""
