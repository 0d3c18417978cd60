"""New work arriving as it does through the watches, in memory: `python bench/bench_arrivals.py [--nodes 4000]
[--repeat 3]`.

`bench_scale.py` hands a cycle a new gang or 1,000 new pods all at once, in name order. Through an API server
(`bench_scale_real.py`) they arrive over several cycles, in whatever order the creating threads' requests
finished, beside other writers' changes. Here, on `bench_scale.py`'s cluster (`Cycles`, an in-memory store): a
24-pod gang whose PodGroup and one pod from the middle of it come a cycle before the others; then 1,000 one-pod
jobs whose PodGroups come first and whose pods come in three shuffled parts (300, 400, 300), a cycle each. CPU
seconds of the scheduling thread (`cycle_log`) for the cycles that placed them, median of `--repeat`, and the
steps of the median run (`cycle_log`'s phases).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cycle_log


def run(nodes: int, repeat: int, log: str) -> dict[str, list[dict[str, Any]]]:
    import bench_scale
    import scale_cluster as sc

    cycle_log.install(log)
    cycles = bench_scale.Cycles(nodes)
    for _ in range(3):
        cycles.scheduler.run_once().release()
    rng = random.Random(1)
    out: dict[str, list[dict[str, Any]]] = {"gang": [], "thousand": []}

    def cycle() -> dict[str, Any]:
        cycles.scheduler.run_once().release()
        return cycle_log.read(log)[-1]

    for i in range(repeat):
        pg, *pods = sc.new_gang(f"gang-gang{i}", "idle", 24, 1, required="zone")
        cycles.store.add_many([pg, pods[17]])
        placing = [cycle()]
        cycles.store.add_many(pods[:17] + pods[18:])
        placing.append(cycle())
        cycle()
        out["gang"].append(_summed(placing))
        objs = [
            o for k in range(1000) for o in sc.new_gang(f"one-{i}-{k:04d}", sc.leaf_name(k % cycles.sizes.queues), 1, 1)
        ]
        cycles.store.add_many([o for o in objs if o["kind"] == "PodGroup"])
        cycle()
        pods = [o for o in objs if o["kind"] == "Pod"]
        rng.shuffle(pods)
        placing = []
        for part in (pods[:300], pods[300:700], pods[700:]):
            cycles.store.add_many(part)
            placing.append(cycle())
        cycle()
        out["thousand"].append(_summed(placing))
    return out


def _summed(cycles: list[dict[str, Any]]) -> dict[str, Any]:
    placing = [c for c in cycles if c["placed"]]
    phases: dict[str, float] = {}
    for c in placing:
        for k, v in c["phases"].items():
            phases[k] = phases.get(k, 0.0) + v
        phases["gc"] = phases.get("gc", 0.0) + sum(s for _, s in c["gc"])
    return {"cpu": sum(c["cpu"] for c in placing), "n": len(placing), "placed": sum(c["placed"] for c in placing),
            "phases": phases}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.nodes, args.repeat, os.path.join(tmp, "cycles.jsonl"))
    print(f"{args.nodes:,} nodes, load average {os.getloadavg()[0]:.1f}; CPU s of the placing cycles")
    for name, runs in result.items():
        median = sorted(runs, key=lambda r: r["cpu"])[len(runs) // 2]
        steps = sorted(median["phases"].items(), key=lambda kv: -kv[1])
        each = ", ".join(f"{r['cpu']:.3f}" for r in runs)
        print(
            f"{name}: {statistics.median(r['cpu'] for r in runs):.3f} (runs {each}; {median['placed']} placed in"
            f" {median['n']} cycles); median run by step: " + ", ".join(f"{k} {v:.3f}" for k, v in steps if v >= 0.001)
        )


if __name__ == "__main__":
    main()
