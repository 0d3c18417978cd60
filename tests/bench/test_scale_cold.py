"""bench_scale.py's cold start against the mock API server, on a small cluster."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_cold_start_gives_each_parts_cpu_in_order() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_scale
    finally:
        sys.path.remove(str(BENCH))
    cold = bench_scale.cold_start(40)
    assert 0 < cold["list_cpu"] <= cold["snapshot_cpu"] <= cold["cpu"]
    assert cold["list_wall"] <= cold["snapshot_wall"] <= cold["wall"]
