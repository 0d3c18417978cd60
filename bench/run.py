"""Benchmarks of one scheduling cycle: `python bench/run.py [--only NAME]` prints a table.

Each case runs in its own process so that its peak memory (max RSS) is its own. Figures: time to build the
snapshot (from parsed objects), the allocate action, the commit of decisions to the in-memory store, the
whole cycle, and peak RSS. Targets are those of the issues; they are printed beside the figures, not asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import ALLOCATE_COLUMNS, allocate_cells, allocate_figures, print_table, run_cases, time_cycle

CASES = {
    "allocate-1k": dict(
        nodes=1000,
        queues=20,
        gangs=[4] * 2000,
        target_s=1.0,
        target_gib=None,
        what="1,000 nodes x 8 GPUs, 20 queues, 8,000 pending 1-GPU pods in gangs of 4",
    ),
    "allocate-5k": dict(
        nodes=5000,
        queues=100,
        gangs="mixed:40000",
        target_s=8.0,
        target_gib=2.0,
        what="5,000 nodes x 8 GPUs, 100 queues, 40,000 pending pods, gangs of 1-64",
    ),
}


def run_case(name: str) -> dict[str, float]:
    import workloads

    case = CASES[name]
    gangs = case["gangs"]
    sizes = workloads.mixed_gang_sizes(int(gangs.split(":")[1])) if isinstance(gangs, str) else gangs
    cycle = time_cycle(workloads.cluster(int(case["nodes"]), int(case["queues"]), sizes), "allocate")
    return {
        **allocate_figures(cycle, sum(sizes)),
        "jobs": float(len(sizes)),
        "nodes": float(len(cycle.snapshot.nodes)),
    }


def main() -> None:
    results = run_cases(__file__, __doc__, CASES, run_case)
    if results is None:
        return
    columns = (*ALLOCATE_COLUMNS, "target s", "peak GiB", "target GiB")
    rows = {
        name: (
            *allocate_cells(r),
            f"{CASES[name]['target_s']}",
            f"{r['peak_gib']:.2f}",
            str(CASES[name]["target_gib"] or "-"),
        )
        for name, r in results.items()
    }
    print_table(
        "One scheduling cycle (allocate), in-memory store",
        columns,
        rows,
        {name: str(CASES[name]["what"]) for name in rows},
    )


if __name__ == "__main__":
    main()
