"""The example scenarios of `kai simulate` load and replay (bounded with `until` to stay fast)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "name, until",
    [
        pytest.param("simulate-quickstart.yaml", None, id="quickstart"),
        pytest.param("hierarchical-org.yaml", 1200.0, id="hierarchical org"),
        pytest.param("mixed-training-inference.yaml", 3600.0, id="mixed training and inference"),
        pytest.param("simulate-autoscaler.yaml", None, id="autoscaler model"),
    ],
)
def test_example_replays(name: str, until: float | None) -> None:
    loaded = sources.load(EXAMPLES / name, seed=1)
    result = replay.Replay(loaded, load_config(loaded.config), replay.Options(until=until)).run()
    s = result.summary
    assert s.submitted > 0 and s.allocation_ratio > 0
    if until is None:
        assert s.completed == s.submitted and not s.never_scheduled


def test_occupancy_maps_at_chosen_instants() -> None:
    loaded = sources.load(EXAMPLES / "mixed-training-inference.yaml", seed=1)
    run = replay.Replay(
        loaded, load_config(loaded.config), replay.Options(until=1800.0, occupancy_at=(0.0, 600.0))
    ).run()
    times = [m.time for m in run.maps]
    assert times[0] == 0.0 and any(600.0 <= t < 660.0 for t in times)
    first = run.maps[0]
    assert first.cells.shape == (6, 8)  # 6 GPU nodes, up to 8 devices each
    assert float((first.cells[:2, :4] > 0).sum()) > 0  # the inference services share devices from the start
