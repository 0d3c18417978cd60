"""A steady-state cycle on a large, busy cluster: `python bench/bench_steady.py [--nodes N] [--running P]`.

Most cycles of a production scheduler change little: thousands of pods run, a few wait. This times one
cycle of the default actions on N nodes × 8 GPUs running P one-pod jobs (CPU only), in 10 queues, with
(a) nothing pending, (b) one job no node can ever hold (a 9-GPU pod), which allocate, reclaim, preempt
and consolidation all look at, (c) one running pod changed (a label) before each cycle, and (d) one node's status
heartbeat (its Ready condition's timestamp, as a kubelet writes it) before each cycle. Prints the CPU
seconds (`time.process_time`, as the box is shared) of the snapshot, of the whole cycle, and the wall seconds
of each action, median of 5 cycles in one process. Each cycle's result is dropped at once, as the scheduler's
loop does: a kept result would make the next build start from nothing (see `cluster.snapshot.incremental`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as w

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store import collector
from kai_scheduler.store.memory import MemoryStore


def cluster(nodes: int, running: int, pending_gpus: int) -> list[dict[str, object]]:
    objs: list[dict[str, object]] = [*w.priority_classes(), *(w.node(f"n{i:04d}", 8) for i in range(nodes))]
    objs += [w.queue(f"q{i}", 8 * nodes / 10) for i in range(10)]
    for g in range(running):
        group, pod = w.gang(f"r{g}", f"q{g % 10}", 1, 0, g % 3600)
        spec, container = pod["spec"], pod["spec"]["containers"][0]  # type: ignore[index]
        spec["nodeName"] = f"n{g % nodes:04d}"
        pod["status"] = {"phase": "Running"}
        container["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
        objs += [group, pod]
    if pending_gpus:
        objs += w.gang("waiting", "q0", 1, pending_gpus, 10)
    return objs


def measure(nodes: int, running: int, pending_gpus: int, change: bool, heartbeat: bool = False) -> dict[str, float]:
    clock = ManualClock(w.EPOCH)
    store = MemoryStore(clock)
    store.add_many(cluster(nodes, running, pending_gpus))
    scheduler = Scheduler(store, load_config(None), clock)
    scheduler.run_once()  # the first cycle lists and parses everything
    rows = []
    for i in range(5):
        if change:
            store.patch("pods", f"r{i}-0", "bench", {"metadata": {"labels": {"touched": str(i)}}})
        if heartbeat:
            beat(store, f"n{i:04d}", i)
        started = time.process_time()
        with collector.paused():  # as inside a cycle
            scheduler.snapshot()
        snapshot = time.process_time() - started
        if change:  # the cycle itself sees the change
            store.patch("pods", f"r{i}-0", "bench", {"metadata": {"labels": {"touched": f"{i}b"}}})
        if heartbeat:  # the cycle itself sees another one
            beat(store, f"n{i + 1:04d}", i)
        started = time.process_time()
        actions = scheduler.run_once().action_seconds  # the result is not kept: the next build reuses its model
        rows.append({"snapshot": snapshot, **actions, "cycle": time.process_time() - started})
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def beat(store: MemoryStore, node: str, second: int) -> None:
    """A kubelet's node status heartbeat: the Ready condition again, with a new timestamp."""
    condition = {"type": "Ready", "status": "True", "lastHeartbeatTime": f"2026-01-01T00:00:{second:02d}Z"}
    store.patch("nodes", node, "", {"status": {"conditions": [condition]}}, "status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--running", type=int, default=20_000)
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    cases = {
        "nothing pending": (0, False, False),
        "one job no node can hold": (9, False, False),
        "one pod changed": (0, True, False),
        "a node's status heartbeat": (0, False, True),
    }
    results = {name: measure(args.nodes, args.running, *case) for name, case in cases.items()}
    columns = list(next(iter(results.values())))
    title = f"steady-state cycle, CPU milliseconds: {args.nodes} nodes x 8 GPUs, {args.running:,} running pods"
    table = Table(title=title, caption="goal (issue 31): a cycle at 1,000 nodes and 20,000 pods within 50 ms")
    table.add_column("case")
    for col in columns:
        table.add_column(f"{col} ms", justify="right")
    for name, r in results.items():
        table.add_row(name, *(f"{1000 * r[c]:.1f}" for c in columns))
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
