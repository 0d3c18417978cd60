"""Benchmarks of one scheduling cycle: `python bench/run.py [--only NAME]` prints a table.

Each case runs in its own process so that its peak memory (max RSS) is its own. Figures: time to build the
snapshot (from parsed objects), the allocate action, the commit of decisions to the in-memory store, the
whole cycle, and peak RSS. Targets are those of the issues; they are printed beside the figures, not asserted.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import run_cases

CASES = {
    "allocate-1k": dict(nodes=1000, queues=20, gangs=[4] * 2000, target_s=1.0, target_gib=None,
                        what="1,000 nodes x 8 GPUs, 20 queues, 8,000 pending 1-GPU pods in gangs of 4"),
    "allocate-5k": dict(nodes=5000, queues=100, gangs="mixed:40000", target_s=8.0, target_gib=2.0,
                        what="5,000 nodes x 8 GPUs, 100 queues, 40,000 pending pods, gangs of 1-64"),
}


def run_case(name: str) -> dict[str, float]:
    import workloads

    from kai_scheduler.api.clock import ManualClock
    from kai_scheduler.scheduler.scheduler import Scheduler, load_config
    from kai_scheduler.store.memory import MemoryStore

    case = CASES[name]
    gangs = case["gangs"]
    sizes = workloads.mixed_gang_sizes(int(gangs.split(":")[1])) if isinstance(gangs, str) else gangs
    objects = workloads.cluster(int(case["nodes"]), int(case["queues"]), sizes)
    clock = ManualClock(workloads.EPOCH)
    store = MemoryStore(clock)
    store.add_many(objects)
    config = load_config({"actions": "allocate"})
    scheduler = Scheduler(store, config, clock)
    t0 = time.perf_counter()
    scheduler.cache.sync()
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    snap = scheduler.snapshot()
    snapshot_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = scheduler.run_once()
    cycle_s = time.perf_counter() - t0
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {
        "pods": float(sum(sizes)), "jobs": float(len(sizes)), "nodes": float(len(snap.nodes)),
        "parse_s": parse_s, "snapshot_s": snapshot_s, "allocate_s": result.action_seconds.get("allocate", 0.0),
        "cycle_s": cycle_s, "binds": float(result.binds), "peak_gib": rss_gib,
    }


def main() -> None:
    results = run_cases(__file__, __doc__, CASES, run_case)
    if results is None:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="One scheduling cycle (allocate), in-memory store")
    for col in ("case", "pods", "binds", "parse s", "snapshot s", "allocate s", "cycle s", "target s",
                "peak GiB", "target GiB"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for name, r in results.items():
        case = CASES[name]
        table.add_row(name, f"{r['pods']:.0f}", f"{r['binds']:.0f}", f"{r['parse_s']:.2f}", f"{r['snapshot_s']:.2f}",
                      f"{r['allocate_s']:.2f}", f"{r['cycle_s']:.2f}", f"{case['target_s']}",
                      f"{r['peak_gib']:.2f}", str(case["target_gib"] or "-"))
        Console().print(f"{name}: {case['what']}")
    Console().print(table)


if __name__ == "__main__":
    main()
