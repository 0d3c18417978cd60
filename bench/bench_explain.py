"""`kai explain` on a large, busy cluster: `python bench/bench_explain.py [--nodes N] [--running P]`.

N nodes x 8 GPUs running P one-pod jobs (1 GPU each, so most GPUs are taken) in 10 queues, plus two pending
jobs: a 2-pod gang of 1 GPU that fits, and a 4-pod gang of 8 GPUs that does not (so reclaim, preempt and
consolidation are dry-run for it). Times `explain.explain` (the LIST of every resource from an in-memory store,
a snapshot per node pool and one for the next cycle, every check per node, the dry runs) for each pending job
and for one running job; CPU seconds (`time.process_time`, the box is shared), median of 3. No target is set
for it; the figure says what an explanation costs next to a cycle (`bench_steady.py`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as w

from kai_scheduler import explain
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.store.memory import MemoryStore


def cluster(nodes: int, running: int) -> list[dict[str, object]]:
    objs: list[dict[str, object]] = [*w.priority_classes(), *(w.node(f"n{i:04d}", 8) for i in range(nodes))]
    objs += [w.queue(f"q{i}", 8 * nodes / 10) for i in range(10)]
    for g in range(running):
        group, pod = w.gang(f"r{g}", f"q{g % 10}", 1, 1, g % 3600)
        pod["spec"]["nodeName"] = f"n{g % nodes:04d}"  # type: ignore[index]
        pod["status"] = {"phase": "Running"}
        objs += [group, pod]
    objs += w.gang("fits", "q0", 2, 1, 10)
    objs += w.gang("too-big", "q1", 4, 8, 10)
    return objs


def measure(store: MemoryStore, clock: ManualClock, job: str) -> float:
    config = load_config(None)
    times = []
    for _ in range(3):
        started = time.process_time()
        explain.explain(store, config, clock, explain.JobRef.parse(job, "bench"))
        times.append(time.process_time() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--running", type=int, default=7000)
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    clock = ManualClock(w.EPOCH)
    store = MemoryStore(clock)
    store.add_many(cluster(args.nodes, args.running))
    table = Table(title=f"kai explain, CPU seconds: {args.nodes} nodes x 8 GPUs, {args.running:,} running 1-GPU pods")
    table.add_column("job")
    table.add_column("seconds", justify="right")
    for label, job in (("pending, fits", "fits"), ("pending, fits nowhere", "too-big"), ("running", "r0")):
        table.add_row(label, f"{measure(store, clock, job):.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
