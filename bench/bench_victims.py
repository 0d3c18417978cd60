"""Benchmarks of the victim actions: `python bench/bench_victims.py [--only NAME]` prints a table.

Targets (issue 3), printed beside the figures, not asserted:

- reclaim: a full 1,000-node x 8-GPU cluster runs 8,000 single-GPU preemptible pods in 10 queues (each a little
  above its fair share); a 64-GPU gang arrives in a starved queue; the reclaim decision takes <= 3 s. Two gang
  shapes: 64 pods of 1 GPU, and 8 pods of 8 GPUs (each needs a whole node emptied). A third case shows the
  worst search: a job no eviction can help, so every victim is accumulated before giving up.
- consolidation: 1,000 fragmented nodes (7 of 8 GPUs used by single-GPU pods, 1 free each); an 8-GPU job
  arrives; consolidation moves one node's 7 pods elsewhere and frees it, in <= 3 s.

Each case runs in its own process. Figures: snapshot, the action's own time, the whole cycle, evictions (moved
pods included) and the simulations the search ran.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import EPOCH, print_table, run_cases, time_cycle

CASES: dict[str, dict[str, Any]] = {
    "reclaim-64x1": dict(
        kind="reclaim",
        pods=64,
        gpus=1,
        target_s=3.0,
        what="1,000 nodes x 8 GPUs, 8,000 running 1-GPU pods in 10 queues; a 64 x 1-GPU gang in a starved queue",
    ),
    "reclaim-8x8": dict(
        kind="reclaim",
        pods=8,
        gpus=8,
        target_s=3.0,
        what="same cluster; an 8 x 8-GPU gang (8 whole nodes to empty) in a starved queue",
    ),
    "reclaim-exhaustive": dict(
        kind="reclaim",
        pods=64,
        gpus=1,
        target_s=None,
        unplaceable=True,
        what="same cluster; the 64 x 1-GPU gang selects nodes that do not exist: the search "
        "pops all 8,000 victims and fails (no target; budgets bound it)",
    ),
    "consolidation": dict(
        kind="consolidation",
        pods=1,
        gpus=8,
        target_s=3.0,
        what="1,000 nodes with 7 of 8 GPUs used (7,000 pods, 7 queues); one 8-GPU job",
    ),
}


def _queue(name: str, quota: float) -> dict[str, Any]:
    import workloads

    return workloads.queue(name, quota)


def _pod(name: str, queue: str, node: str, gpus: int, created: str, running: bool) -> list[dict[str, Any]]:
    """A one-pod job of 1 CPU and 4Gi, running on `node` or pending."""
    import workloads

    return workloads.job(name, queue, 1, gpus, created, cpu="1", memory="4Gi", node=node if running else "")


def _stamp(seconds: int) -> str:
    from kai_scheduler.api.fields import format_time

    return format_time(EPOCH - 86400 + seconds)


def reclaim_cluster(gang_pods: int, gang_gpus: int) -> list[dict[str, Any]]:
    """1,000 x 8 GPUs full of 1-GPU pods of 10 queues (pod j on node j // 8, queue j % 10); a starved queue."""
    import workloads

    objs: list[dict[str, Any]] = workloads.priority_classes()
    objs += [workloads.node(f"node-{i:04d}", 8) for i in range(1000)]
    objs += [_queue(f"q-{i}", 720) for i in range(10)]
    objs.append(_queue("starved", 800))
    for j in range(8000):
        objs += _pod(f"run-{j:05d}", f"q-{j % 10}", f"node-{j // 8:04d}", 1, _stamp(j), True)
    gang = workloads.gang("arrival", "starved", gang_pods, gang_gpus, 86399)
    return objs + gang


def consolidation_cluster() -> list[dict[str, Any]]:
    """1,000 x 8 GPUs; node i runs one 1-GPU pod of each of 7 queues, created at i (newest on the last node)."""
    import workloads

    objs: list[dict[str, Any]] = workloads.priority_classes()
    objs += [workloads.node(f"node-{i:04d}", 8) for i in range(1000)]
    objs += [_queue(f"q-{k}", 1000) for k in range(7)]
    objs.append(_queue("new", 8))
    for i in range(1000):
        for k in range(7):
            objs += _pod(f"run-{i:04d}-{k}", f"q-{k}", f"node-{i:04d}", 1, _stamp(i), True)
    objs += _pod("arrival", "new", "", 8, _stamp(86399), False)
    return objs


def run_case(name: str) -> dict[str, float]:
    from kai_scheduler.actions.common import solver

    case = CASES[name]
    kind = case["kind"]
    objects = reclaim_cluster(case["pods"], case["gpus"]) if kind == "reclaim" else consolidation_cluster()
    if case.get("unplaceable"):
        for obj in objects:
            if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("arrival"):
                obj["spec"]["nodeSelector"] = {"pool": "none"}
    simulations = 0
    original = solver._JobSolver.solve

    def counting(self: Any) -> Any:
        nonlocal simulations
        out = original(self)
        simulations += self.simulations
        return out

    solver._JobSolver.solve = counting  # type: ignore[method-assign]
    cycle = time_cycle(objects, f"allocate, {kind}")
    result = cycle.result
    placed = sum(1 for op in result.operations if op.task.job_uid == "uid-pg-arrival")
    return {
        "nodes": float(len(cycle.snapshot.nodes)),
        "snapshot_s": cycle.snapshot_s,
        "action_s": result.action_seconds.get(kind, 0.0),
        "cycle_s": cycle.cycle_s,
        "evictions": float(result.evictions),
        "placed": float(placed),
        "simulations": float(simulations),
    }


def main() -> None:
    results = run_cases(__file__, __doc__, CASES, run_case)
    if results is None:
        return
    columns = ("snapshot s", "action s", "cycle s", "target s", "evicted", "job pods placed", "simulations")
    rows = {
        name: (
            f"{r['snapshot_s']:.2f}",
            f"{r['action_s']:.2f}",
            f"{r['cycle_s']:.2f}",
            f"{CASES[name]['target_s'] or '-'}",
            f"{r['evictions']:.0f}",
            f"{r['placed']:.0f}",
            f"{r['simulations']:.0f}",
        )
        for name, r in results.items()
    }
    print_table(
        "Victim actions: one scheduling cycle, in-memory store",
        columns,
        rows,
        {name: CASES[name]["what"] for name in rows},
        width=140,
    )


if __name__ == "__main__":
    main()
