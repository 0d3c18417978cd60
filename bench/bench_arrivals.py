"""New work arriving as it does through the watches, in memory: `python bench/bench_arrivals.py [--nodes 4000]
[--repeat 3]`.

`bench_scale.py` hands a cycle a new gang or 1,000 new pods all at once, in name order. Through an API server
(`bench_scale_real.py`) they arrive over several cycles, in whatever order the creating threads' requests
finished, beside other writers' changes. Here, on `bench_scale.py`'s cluster (`Cycles`, an in-memory store): a
24-pod gang whose PodGroup and one pod from the middle of it come a cycle before the others; then 1,000 one-pod
jobs whose PodGroups come first and whose pods come shuffled in parts (`--parts`: 300, 400, 300 unless told; through
an API server they came in 4-5 cycles), a cycle each. CPU seconds of the scheduling thread (`cycle_log`) for the
cycles that placed them, median of `--repeat`, and the steps of the median run (`cycle_log`'s phases).

The collector is set as in a component process (`collector.tune_for_service`: young collections every 10,000
allocations, and the start-up lists frozen after the first sync, `collector.loaded`); `--default-collector` leaves
Python's defaults (and nothing frozen), as `bench_scale.py` does. `--bind` plays the binder: after each cycle, the
pods whose BindRequests were there before it are bound and their requests marked Succeeded, as through an API
server they came back a cycle or two later. `--status` plays the PodGroup status controller on the same store after
each cycle (and once for every PodGroup before the measured cycles): its `resourcesStatus` writes come in with the
pods' changes, as `kai run`'s controller writes them.
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


def run(
    nodes: int, repeat: int, log: str, parts: list[int], *, service: bool, bind: bool, status: bool = False
) -> dict[str, list[dict[str, Any]]]:
    import bench_scale
    import scale_cluster as sc

    from kai_scheduler.store import collector

    cycle_log.install(log)
    if service:
        collector.tune_for_service()
    cycles = bench_scale.Cycles(nodes)
    for _ in range(3):
        cycles.scheduler.run_once().release()
    rng = random.Random(1)
    out: dict[str, list[dict[str, Any]]] = {"gang": [], "thousand": []}

    statuses = _status_controller(cycles.store) if status else None

    def cycle() -> dict[str, Any]:
        waiting = _unbound(cycles.store) if bind else []
        cycles.scheduler.run_once().release()
        _bind(cycles.store, waiting)
        if statuses is not None:
            statuses.reconcile()
        return cycle_log.read(log)[-1]

    if statuses is not None:  # every PodGroup's first status, taken in before the measured cycles
        cycle()

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
        for start, end in _bounds(parts):
            cycles.store.add_many(pods[start:end])
            placing.append(cycle())
        cycle()
        out["thousand"].append(_summed(placing))
    return out


def _unbound(store: Any) -> list[dict[str, Any]]:
    return [br for br in store.list("bindrequests")[0] if (br.get("status") or {}).get("phase") != "Succeeded"]


def _status_controller(store: Any) -> Any:
    """The PodGroup status controller on the same store, its writes (`status.resourcesStatus`) in before the
    next cycle, as through the API server they come while the pods are placed and bound."""
    from kai_scheduler.controllers.podgroup_status import PodGroupStatusController

    controller = PodGroupStatusController(store)
    controller.reconcile()
    return controller


def _bind(store: Any, brs: list[dict[str, Any]]) -> None:
    """As the binder does: each request's pod bound to its node, the request's status Succeeded."""
    from kai_scheduler.store.interface import StoreError

    for br in brs:
        meta, spec = br["metadata"], br["spec"]
        try:
            store.bind(meta["namespace"], spec["podName"], spec["selectedNode"])
        except StoreError:  # the pod gone (evicted) or bound already: the binder would give up on it too
            continue
        store.patch("bindrequests", meta["name"], meta["namespace"], {"status": {"phase": "Succeeded"}}, "status")


def _bounds(parts: list[int]) -> list[tuple[int, int]]:
    ends = [sum(parts[: i + 1]) for i in range(len(parts))]
    return list(zip([0, *ends[:-1]], ends, strict=True))


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
    parser.add_argument(
        "--parts", default="300,400,300", help="the 1,000 pods' parts, a cycle each (e.g. 250,250,250,250)"
    )
    parser.add_argument(
        "--bind", action="store_true", help="bind, as the binder, the pods whose BindRequests were there a cycle before"
    )
    parser.add_argument(
        "--status", action="store_true", help="the PodGroup status controller's writes between the cycles"
    )
    parser.add_argument("--default-collector", action="store_true", help="Python's collector settings, nothing frozen")
    args = parser.parse_args()
    parts = [int(p) for p in args.parts.split(",")]
    if sum(parts) != 1000:
        parser.error("--parts must add up to 1000")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cycles.jsonl")
        result = run(
            args.nodes, args.repeat, path, parts, service=not args.default_collector, bind=args.bind, status=args.status
        )
    collector = "Python's default collector" if args.default_collector else "the collector as in a component"
    print(
        f"{args.nodes:,} nodes, load average {os.getloadavg()[0]:.1f}, parts {args.parts}, {collector}"
        f"{', bound as by the binder' if args.bind else ''}"
        f"{', PodGroup statuses written' if args.status else ''};"
        " CPU s of the placing cycles"
    )
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
