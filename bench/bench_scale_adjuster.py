"""The node-scale-adjuster on a busy cluster: `python bench/bench_scale_adjuster.py [--running P] [--waiting W]`.

P running pods (not its concern) and W unschedulable fractional pods (portions 0.1–0.9, in 4 groups of node
selectors) in an in-memory store. Times, in CPU seconds (`time.process_time`; the box is shared): the first pass
(LIST of every pod, the plan, W/… scaling pods created), a pass with nothing changed, a pass after 10 % of the
waiting pods were placed, and the first pass of a restarted adjuster (state read back from the scaling pods).
No target is set; the figures say what a pass costs beside a scheduling cycle.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.nodescaleadjuster import pods
from kai_scheduler.nodescaleadjuster.adjuster import NodeScaleAdjuster
from kai_scheduler.store.memory import MemoryStore

EPOCH = 1_767_225_600.0
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def pod(name: str, *, node: str = "", fraction: float | None = None, pool: int = 0) -> dict[str, Any]:
    annotations = {"gpu-fraction": f"{fraction:g}"} if fraction is not None else {}
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
    }
    status: dict[str, Any] = {"phase": "Running"}
    if node:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"pool": f"p{pool}"}
        status = {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "annotations": annotations},
        "spec": spec,
        "status": status,
    }


def timed(step: Any) -> tuple[float, Any]:
    started = time.process_time()
    out = step()
    return time.process_time() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, default=40_000)
    parser.add_argument("--waiting", type=int, default=2_000)
    args = parser.parse_args()
    clock = ManualClock(EPOCH)
    store = MemoryStore(clock)
    store.add_many(
        [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "64"}}}]
    )
    store.add_many([pod(f"r{i}", node=f"n{i % 1000}") for i in range(args.running)])
    store.add_many([pod(f"w{i}", fraction=0.1 + 0.1 * (i % 9), pool=i % 4) for i in range(args.waiting)])
    nsa = NodeScaleAdjuster(store, clock, pods.Settings())
    rows = []
    seconds, out = timed(nsa.reconcile)
    rows.append(("first pass", seconds, f"{len(out.created)} created"))
    seconds, out = timed(nsa.reconcile)
    rows.append(("nothing changed", seconds, f"{len(out.created) + len(out.deleted)} writes"))
    for i in range(0, args.waiting, 10):
        store.bind("bench", f"w{i}", "n0")
    seconds, out = timed(nsa.reconcile)
    rows.append(("10 % placed", seconds, f"{len(out.deleted)} deleted, {len(out.extended)} extended"))
    again = NodeScaleAdjuster(store, clock, pods.Settings())
    seconds, out = timed(again.reconcile)
    rows.append(("restarted", seconds, f"{len(out.created) + len(out.deleted) + len(out.extended)} writes"))
    print(f"node-scale-adjuster: {args.running} running pods, {args.waiting} unschedulable fractional pods")
    print(f"{'pass':<18}{'CPU s':>8}  result")
    for name, seconds, what in rows:
        print(f"{name:<18}{seconds:>8.3f}  {what}")


if __name__ == "__main__":
    main()
