"""Benchmark of `kai simulate` on the whole default Alibaba trace: `.venv/bin/python bench/bench_simulate.py`.

Replays openb_pod_list_default.csv (8,152 tasks) on openb_node_list_all_node.csv (1,523 nodes) end to end,
reading the CSVs where they lie (../shared/traces/alibaba-gpu-v2023/), and prints a table: load time, replay
time, scheduler cycles and cycles per second, the share of time in the scheduler's cycles, the target (≤ 60 s
for the whole run) and the process's CPU seconds (wall time on a shared box says little). `--profile` writes a
pyinstrument profile (if installed) to show where time goes; `--sample N` replays a sample for a quick look.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"
TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(TRACES / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(TRACES / "openb_node_list_all_node.csv"))
    parser.add_argument("--sample", type=float, default=None)
    parser.add_argument("--profile", metavar="HTML", help="write a pyinstrument profile of the replay here")
    args = parser.parse_args()

    from kai_scheduler.scheduler.scheduler import load_config
    from kai_scheduler.sim import replay, trace

    started = time.perf_counter()
    loaded = trace.load(args.pods, args.nodes, sample=args.sample)
    load_s = time.perf_counter() - started
    simulation = replay.Replay(loaded, load_config(loaded.config))
    profiler = _profiler() if args.profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.start()
    run = simulation.run()
    if profiler is not None:
        profiler.stop()
        Path(args.profile).write_text(profiler.output_html())
    replay_s = time.perf_counter() - t0
    total_s = time.perf_counter() - started
    s = run.summary
    cycle_s = sum(s.cycle_seconds)
    ordered = sorted(s.cycle_seconds) or [0.0]
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    verdict = "met" if total_s <= TARGET_SECONDS else "NOT met"
    rows = [
        ("tasks / nodes", f"{len(loaded.jobs):,} / {sum(1 for o in loaded.objects if o['kind'] == 'Node'):,}"),
        ("virtual span", f"{s.end / 86400:.1f} days"),
        ("load (CSV → objects)", f"{load_s:.1f} s"),
        ("replay", f"{replay_s:.1f} s"),
        ("total", f"{total_s:.1f} s  (target ≤ {TARGET_SECONDS:.0f} s: {verdict})"),
        ("CPU (whole process)", f"{time.process_time():.1f} s"),
        ("scheduler cycles", f"{s.cycles:,}"),
        ("cycles per second", f"{s.cycles / replay_s:.1f}"),
        ("time in scheduler cycles", f"{cycle_s:.1f} s ({100 * cycle_s / replay_s:.0f} % of the replay)"),
        (
            "cycle mean / p99 / max",
            f"{1000 * cycle_s / max(1, s.cycles):.1f} / {1000 * p99:.1f} / "
            f"{1000 * max(s.cycle_seconds, default=0):.1f} ms",
        ),
        ("jobs completed / never scheduled", f"{s.completed:,} / {len(s.never_scheduled):,}"),
        ("GPU allocation (time-weighted)", f"{100 * s.allocation_ratio:.2f} %"),
    ]
    width = max(len(name) for name, _ in rows)
    print("kai simulate: Alibaba openb default trace, end to end")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def _profiler():  # type: ignore[no-untyped-def]
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("pyinstrument is not installed: .venv/bin/pip install pyinstrument", file=sys.stderr)
        return None
    return Profiler()


if __name__ == "__main__":
    sys.exit(main())
