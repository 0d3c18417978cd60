"""`kai simulate --dashboard`: the pictures of a replay along virtual time, and `kai dashboard` on them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kai_scheduler.dashboard.recording import Recording
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources
from tests.cli.invoke import run
from tests.sim.test_plots import TREE


def _replay(tmp_path: Path, max_frames: int) -> tuple[Recording, replay.Run]:
    path = tmp_path / "tree.yaml"
    path.write_text(TREE)
    loaded = sources.load(path)
    config = load_config(loaded.config)
    simulation = replay.Replay(loaded, config)
    recording = Recording(config, "tree", max_frames=max_frames).attach(simulation)
    return recording, simulation.run()


def test_each_cycle_is_a_picture_with_the_cycles_shares_and_decisions(tmp_path: Path) -> None:
    recording, result = _replay(tmp_path, max_frames=1000)
    frames = [orjson.loads(f) for f in recording.frames]
    assert len(frames) >= 3
    times = [f["now"] for f in frames]
    assert times == sorted(times)
    # The series' allocated GPUs of a leaf queue at a cycle are the picture's at that instant.
    series = result.series
    for frame in frames:
        i = max(k for k, t in enumerate(series.time) if t <= frame["now"] - frames[0]["now"] + series.time[0])
        vision = next(q for q in frame["queues"] if q["name"] == "vision")
        assert vision["allocated"][0] == pytest.approx(series.queues["vision"]["allocated"][i])
    first_binds = [d for d in frames[0]["decisions"] if d[1] == "Scheduled"]
    assert {d[2] for d in first_binds} >= {"default/v-0", "default/v-1"}


def test_a_long_replay_keeps_an_even_spread_of_at_most_max_frames(tmp_path: Path) -> None:
    everything, _ = _replay(tmp_path, max_frames=1000)
    thinned, _ = _replay(tmp_path, max_frames=2)
    assert len(everything.frames) > 2 >= len(thinned.frames) >= 1
    assert thinned.every > 0


def test_simulate_writes_the_recording_and_dashboard_refuses_compare(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenario = tmp_path / "tree.yaml"
    scenario.write_text(TREE)
    out = tmp_path / "out"
    code, _, err = run(
        capsys, "simulate", str(scenario), "--no-progress", "--no-report", "--dashboard", "--out", str(out)
    )
    assert code == 0
    assert f"dashboard: kai dashboard {out / 'dashboard.json'}" in err
    assert orjson.loads((out / "dashboard.json").read_bytes())["frames"]
    code, _, err = run(capsys, "simulate", str(scenario), "--dashboard", "--compare", str(scenario), str(scenario))
    assert (code, err) == (2, "kai: --dashboard records one run: give it without --compare\n")
