"""`kai operator`'s reconcile cost: `python bench/bench_operator.py [--shards N]`.

N SchedulingShards (one partition each) and the Config over an in-memory store. Times `Reconciler.reconcile`:
the first pass (parse, render and load each shard's configuration, create every object, write every status), a
pass with nothing changed (what the operator does every --reconcile-period), and a pass after one shard changed.
CPU seconds (`time.process_time`, the box is shared), median of 5. No target is set.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.operator.reconciler import Reconciler
from kai_scheduler.store.memory import MemoryStore


def store_with(shards: int) -> MemoryStore:
    store = MemoryStore(ManualClock(0.0))
    store.create({"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"}, "spec": {}})
    for i in range(shards):
        store.create(
            {
                "apiVersion": "kai.scheduler/v1",
                "kind": "SchedulingShard",
                "metadata": {"name": f"pool-{i}"},
                "spec": {"partitionLabelValue": f"pool-{i}"},
            }
        )
    return store


def cpu(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=20)
    args = parser.parse_args()
    first, steady, one = [], [], []
    for _ in range(5):
        store = store_with(args.shards)
        operator = Reconciler(store, "kai-scheduler", ManualClock(0.0))
        first.append(cpu(operator.reconcile))
        operator.reconcile()  # the statuses written in the first pass are new versions: parsed once more
        steady.append(cpu(operator.reconcile))
        changed = store.get("schedulingshards", "pool-0")
        changed["spec"]["placementStrategy"] = {"gpu": "spread"}
        store.update(changed)
        one.append(cpu(operator.reconcile))
    print(f"{args.shards} shards, CPU seconds (median of 5)")
    print("| pass | CPU |")
    print("|---|---|")
    for name, values in (
        ("first (everything created)", first),
        ("nothing changed", steady),
        ("one shard changed", one),
    ):
        print(f"| {name} | {statistics.median(values) * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
