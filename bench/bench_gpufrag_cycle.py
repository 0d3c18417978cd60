"""gpufrag's cost in a cycle against gpupack's: `.venv/bin/python bench/bench_gpufrag_cycle.py`.

The cluster of openb_node_list_all_node.csv (1,523 nodes) is filled with tasks drawn from the default pod list
until they ask for `--fill` (0.7) of its GPUs (`sim.saturate`, placed under gpupack), then `--pending` (100)
more tasks arrive. On that state, for each configuration of examples/config/ (gpupack, gpufrag), `--repeat` (5)
cycles as the scheduler runs them (`Scheduler.run_once`): the incremental snapshot, a session opened with its plugins
and the allocate action placing the pending tasks with the collector paused, nothing written; then the session
is let go and the young garbage collected, so the next snapshot is the carried model updated in place and gpufrag
finds what it kept in the snapshot's plugin memo (the learned shapes, the classes of nodes and their per-shape
values). The first cycle of a policy is its cold one (nothing kept yet, as a scheduler's first cycle); the
others are warm (a scheduler's next cycles, here on the same state). CPU times (`time.process_time`, so other
work on the machine weighs less) of session open + allocate: the cold one, and the median of the warm ones.
Target: gpufrag's within 2× gpupack's.
"""

from __future__ import annotations

import argparse
import gc
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
    parser.add_argument("--repeat", type=int, default=5, help="cycles per policy: a cold one, then warm ones (>= 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.repeat < 2:
        parser.error("--repeat: at least 2 (a cold cycle and a warm one)")

    from kai_scheduler.actions.registry import ACTIONS
    from kai_scheduler.framework.session import Session
    from kai_scheduler.plugins import registry
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim import saturate, trace
    from kai_scheduler.store import collector

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
            with collector.paused():  # as `Scheduler.run_once`: over the whole cycle, snapshot included
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
            del snap, ssn  # as a cycle ends: the next snapshot updates the carried model in place
            gc.collect()
        warm = range(1, args.repeat)
        rows[policy] = (
            opens[0] + allocates[0],
            statistics.median(opens[i] for i in warm),
            statistics.median(allocates[i] for i in warm),
            statistics.median(opens[i] + allocates[i] for i in warm),
            placed,
        )
    print(
        f"{len(nodes)} nodes, {len(fill)} running tasks, {len(extra)} pending: CPU seconds; warm: median of "
        f"{args.repeat - 1}"
    )
    print("policy | cold: open + allocate | warm: session open | allocate | open + allocate | tasks placed")
    print("--- | --- | --- | --- | --- | ---")
    for policy, (cold, o, a, both, n) in rows.items():
        print(f"{policy} | {cold:.3f} | {o:.3f} | {a:.3f} | {both:.3f} | {n}")
    for which, column in (("cold", 0), ("warm", 3)):
        base, frag = rows["gpupack"][column], rows["gpufrag"][column]
        ratio = frag / base if base else float("nan")
        verdict = "met" if ratio <= TARGET_RATIO else "not met"
        print(f"gpufrag / gpupack, {which}: {ratio:.2f}× (target ≤ {TARGET_RATIO:g}×: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
