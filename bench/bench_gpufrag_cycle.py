"""gpufrag's cost in a cycle against gpupack's: `.venv/bin/python bench/bench_gpufrag_cycle.py`.

The cluster of openb_node_list_all_node.csv (1,523 nodes) is filled with tasks drawn from the default pod list
until they ask for `--fill` (0.7) of its GPUs (`sim.saturate`, placed under gpupack), then `--pending` (100)
more tasks arrive. On that state, for each configuration of examples/config/ (gpupack, gpufrag), a fresh
snapshot, a session opened with its plugins and the allocate action placing the pending tasks, nothing written:
the parts of a cycle a placement plugin changes. Median of `--repeat` (5) CPU times (`time.process_time`, so
other work on the machine weighs less). Target: gpufrag's session open + allocate within 2× gpupack's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"
POLICIES = ("gpupack", "gpufrag")
TARGET_RATIO = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(TRACES / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(TRACES / "openb_node_list_all_node.csv"))
    parser.add_argument("--fill", type=float, default=0.7)
    parser.add_argument("--pending", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from kai_scheduler.actions.registry import ACTIONS
    from kai_scheduler.framework.session import Session
    from kai_scheduler.plugins import registry
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim import saturate, trace

    nodes = trace.read_nodes(args.nodes)
    total = sum(float(n["gpus"]) for n in nodes)
    every = trace.read_tasks(args.pods)
    fill = saturate.draw(every, total, args.fill, args.seed)
    extra = saturate.draw(every, total, 10.0, args.seed + 1)[: args.pending]
    configs = {p: config_file.load(config_file.read(str(ROOT / "examples" / "config" / f"{p}.yaml"))) for p in POLICIES}
    experiment = saturate.Saturation(nodes, fill + extra, configs["gpupack"], per_cycle=1000)
    started = time.perf_counter()
    for start in range(0, len(fill), 1000):
        experiment.step(experiment.jobs[start : min(start + 1000, len(fill))])
    experiment.submit(experiment.jobs[len(fill) :])
    print(
        f"filled {len(fill)} tasks to {args.fill:g} of {total:g} GPUs in {time.perf_counter() - started:.0f} s; "
        f"{len(extra)} pending",
        file=sys.stderr,
    )

    rows = {}
    for policy, config in configs.items():
        opens, allocates, placed = [], [], 0
        for _ in range(args.repeat):
            snap = experiment.scheduler.snapshot()
            ssn = Session(snap, config, [registry.build(p.name, p.arguments) for p in config.plugins()])
            t0 = time.process_time()
            ssn.open()
            t1 = time.process_time()
            ACTIONS["allocate"]().execute(ssn)
            t2 = time.process_time()
            opens.append(t1 - t0)
            allocates.append(t2 - t1)
            placed = len(ssn.committed)
        rows[policy] = (statistics.median(opens), statistics.median(allocates), placed)
    print(f"{len(nodes)} nodes, {len(fill)} running tasks, {len(extra)} pending: CPU seconds, median of {args.repeat}")
    print("policy | session open | allocate | open + allocate | tasks placed")
    print("--- | --- | --- | --- | ---")
    for policy, (o, a, n) in rows.items():
        print(f"{policy} | {o:.3f} | {a:.3f} | {o + a:.3f} | {n}")
    base, frag = sum(rows["gpupack"][:2]), sum(rows["gpufrag"][:2])
    ratio = frag / base if base else float("nan")
    verdict = "met" if ratio <= TARGET_RATIO else "not met"
    print(f"gpufrag / gpupack: {ratio:.2f}× (target ≤ {TARGET_RATIO:g}×: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
