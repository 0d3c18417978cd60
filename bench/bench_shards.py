"""What other pools cost a scheduler shard: `python bench/bench_shards.py [--pools 4] [--nodes 250] [--running 5000]`.

A cluster of POOLS node pools (the first unlabelled, the others `kai.scheduler/node-pool=p<i>`), each of NODES
nodes × 8 GPUs running RUNNING one-pod jobs in its own two queues, with one job per pool pending that no node
can hold (so the actions look at it every cycle). Times one steady cycle of the shard of pool p1 (median of 5,
CPU seconds by `time.process_time`, as the box is shared), and its first cycle (list and parse), in three
set-ups:

- `shard`: the shard as it runs (`kai scheduler --partition-label-value p1`): its cache keeps only its pool's
  nodes, queues, PodGroups and BindRequests; pods of every pool are read (they join their PodGroups);
- `shard, whole-cluster cache`: the same shard reading every pool's objects (the snapshot still filters):
  what the cache filter saves;
- `pool alone`: a scheduler over a cluster that holds only pool p1: the floor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as w

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore

KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY
JSON = dict[str, Any]


def _label(obj: JSON, pool: str) -> JSON:
    if pool:
        obj["metadata"].setdefault("labels", {})[KEY] = pool
    return obj


def pool_objects(pool: str, nodes: int, running: int) -> list[JSON]:
    prefix = pool or "p0"
    objs: list[JSON] = [_label(w.node(f"{prefix}-n{i:04d}", 8), pool) for i in range(nodes)]
    objs += [_label(w.queue(f"{prefix}-q{i}", 8 * nodes / 2), pool) for i in range(2)]
    for g in range(running):
        group, pod = w.gang(f"{prefix}-r{g}", f"{prefix}-q{g % 2}", 1, 0, g % 3600)
        pod["spec"]["nodeName"] = f"{prefix}-n{g % nodes:04d}"
        pod["status"] = {"phase": "Running"}
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
        objs += [_label(group, pool), _label(pod, pool)]
    group, *pods = w.gang(f"{prefix}-waiting", f"{prefix}-q0", 1, 9, 10)
    return [*objs, _label(group, pool), *pods]


def measure(objects: list[JSON], *, whole_cluster: bool) -> dict[str, float]:
    clock = ManualClock(w.EPOCH)
    store = MemoryStore(clock)
    store.add_many(objects)
    config = load_config({"flags": {"partition-label-value": "p1"}})
    scheduler = Scheduler(store, config, clock, whole_cluster=whole_cluster)
    started = time.process_time()
    scheduler.run_once()
    first = time.process_time() - started
    cycles = []
    for _ in range(5):
        started = time.process_time()
        scheduler.run_once()  # the result is not kept: the next build reuses its model
        cycles.append(time.process_time() - started)
    return {"first cycle": first, "steady cycle": statistics.median(cycles)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=250, help="nodes per pool")
    parser.add_argument("--running", type=int, default=5000, help="running one-pod jobs per pool")
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    pools = ["", *(f"p{i}" for i in range(1, args.pools))]
    everything = [*w.priority_classes()]
    for pool in pools:
        everything += pool_objects(pool, args.nodes, args.running)
    alone = [*w.priority_classes(), *pool_objects("p1", args.nodes, args.running)]
    results = {
        "shard": measure(everything, whole_cluster=False),
        "shard, whole-cluster cache": measure(everything, whole_cluster=True),
        "pool alone": measure(alone, whole_cluster=False),
    }
    table = Table(
        title=f"shard p1's cycle, CPU seconds: {args.pools} pools x {args.nodes} nodes x 8 GPUs, "
        f"{args.running:,} running pods per pool"
    )
    table.add_column("set-up")
    for column in ("first cycle", "steady cycle"):
        table.add_column(column, justify="right")
    for name, row in results.items():
        table.add_row(name, *(f"{row[c]:.3f}" for c in ("first cycle", "steady cycle")))
    Console().print(table)


if __name__ == "__main__":
    main()
