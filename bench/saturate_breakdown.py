"""Where the unallocated GPUs of the saturation experiment are: `.venv/bin/python bench/saturate_breakdown.py`.

At arrived demand 1.0 the tasks drawn so far ask for the cluster's GPUs, so the GPUs left unallocated are the
GPUs of the tasks withdrawn (they could not be placed on arrival). This runs the experiment (`sim.saturate`, the
draw of `bench_saturate.py`: every 4th node, 50 arrivals per cycle) to `--until-demand` (1.0) under each example
configuration and prints, per seed and policy: the withdrawn GPUs by task kind (whole 8/4/2/1-GPU tasks,
portions), the free GPU capacity left by kind (whole free GPUs, and of those the ones on nodes where no drawn
GPU task's CPU and memory fit; free portions of shared GPUs, with the most common hole sizes), and the nodes
with 8 or at least 4 whole free GPUs. Per seed it also prints a lower bound on the unallocated share at 1.0 that
holds for every placement (`holes_bound`) and what a cluster that never fragments would leave (`fluid`).
`--policies` with no name prints the two figures only.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_saturate import ROOT, TRACES, _thinned

from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.resources import CPU, MEMORY
from kai_scheduler.plugins.gpufrag import state
from kai_scheduler.scheduler import config_file
from kai_scheduler.sim import saturate, trace, workload


def kind(task: trace.Task) -> str:
    if task.num_gpu <= 0:
        return "cpu-only"
    return "portion" if task.gpu_milli < 1000 else f"{task.num_gpu}-gpu"


class Counted(saturate.Saturation):
    """The experiment, counting the GPUs and tasks it withdraws by kind."""

    def __init__(self, nodes: list[dict[str, Any]], tasks: list[trace.Task], **kwargs: Any) -> None:
        super().__init__(nodes, tasks, **kwargs)
        self.by_name = {f"task-{i:06d}": t for i, t in enumerate(tasks)}
        self.gpus: Counter[str] = Counter()
        self.count: Counter[str] = Counter()

    def _withdraw(self, job: workload.Job) -> None:
        task = self.by_name[job.meta.name]
        self.gpus[kind(task)] += saturate.task_gpus(task)
        self.count[kind(task)] += 1
        super()._withdraw(job)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(TRACES / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(TRACES / "openb_node_list_all_node.csv"))
    parser.add_argument("--node-every", type=int, default=4, metavar="K")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--policies", nargs="*", default=["gpupack", "gpufrag"], help="none: the bounds only")
    parser.add_argument("--arrivals-per-cycle", type=int, default=50)
    parser.add_argument("--until-demand", type=float, default=1.0, help="run the policies to this demand")
    args = parser.parse_args()
    nodes_path = _thinned(Path(args.nodes), args.node_every) if args.node_every > 1 else args.nodes
    every = trace.read_tasks(args.pods)
    nodes = trace.read_nodes(nodes_path)
    total = sum(float(n["gpus"]) for n in nodes)
    for seed in args.seeds:
        drawn = saturate.draw(every, total, 1.0, seed)
        asked: Counter[str] = Counter()
        for t in drawn:
            asked[kind(t)] += saturate.task_gpus(t)
        shares = ", ".join(f"{k} {100 * v / total:.2f}" for k, v in sorted(asked.items()) if v)
        print(f"seed {seed}: {len(drawn)} tasks to demand 1.0; their GPUs in % of the cluster's: {shares}")
        print(f"  lower bound, any placement (holes_bound): {100 * holes_bound(drawn, total):.2f} % unallocated at 1.0")
        print(f"  a cluster that never fragments (fluid): {100 * fluid(drawn, total):.2f} % unallocated at 1.0")
        tasks = drawn if args.until_demand == 1.0 else saturate.draw(every, total, args.until_demand, seed)
        for policy in args.policies:
            _policy(args, policy, nodes, tasks, total)
    return 0


def _policy(
    args: argparse.Namespace, policy: str, nodes: list[dict[str, Any]], tasks: list[trace.Task], total: float
) -> None:
    config = config_file.load(config_file.read(str(ROOT / "examples" / "config" / f"{policy}.yaml")))
    exp = Counted(nodes, tasks, config=config, per_cycle=args.arrivals_per_cycle)
    cpu = time.process_time()
    run = exp.run()
    snap = exp.scheduler.snapshot()
    free = state.matrix(snap)
    arrays = snap.arrays
    shapes, _ = saturate.workload_shapes(tasks, exp.store.list("nodes")[0])
    gpu = shapes.devices > 0
    fits_any = (
        (arrays.free[:, CPU, None] >= shapes.cpu[None, gpu] - tolerance.RESOURCE)
        & (arrays.free[:, MEMORY, None] >= shapes.memory[None, gpu] - tolerance.RESOURCE)
    ).any(axis=1)
    whole = np.where(free >= 1 - tolerance.RESOURCE, free, 0.0)
    part = free - whole
    per_node = whole.sum(axis=1)
    withdrawn = ", ".join(f"{k} {100 * v / total:.2f} ({exp.count[k]})" for k, v in sorted(exp.gpus.items()))
    print(
        f"  {policy}: unallocated at {args.until_demand:g}: {100 * run.at(args.until_demand):.2f} %; withdrawn GPUs "
        f"(tasks): {withdrawn or 'none'}; free: whole GPUs {100 * whole.sum() / total:.2f} % (on nodes no GPU task "
        f"fits by CPU/memory {100 * whole[~fits_any].sum() / total:.2f}), portions {100 * part.sum() / total:.2f} %; "
        f"nodes with 8 whole free GPUs {int((per_node >= 8).sum())}, with >= 4 {int((per_node >= 4).sum())}; "
        f"{time.process_time() - cpu:.1f} CPU s"
    )
    holes = Counter(round(float(v), 2) for v in part[part > tolerance.RESOURCE])
    common = sorted(holes.items(), key=lambda kv: -kv[0] * kv[1])[:10]
    print("    free portions (size × count), largest totals: " + ", ".join(f"{k:g} × {n}" for k, n in common))


def holes_bound(drawn: list[trace.Task], total: float) -> float:
    """A lower bound on the unallocated share at arrived 1.0 that holds for every placement, from the holes
    that portions above one half leave.

    At arrived 1.0 the drawn tasks ask for the cluster's GPUs, C. A GPU that holds a portion holds no whole
    task, so with S the portions placed, whole tasks get at most C − bins(S) GPUs, and the unallocated GPUs are
    at least waste(S) = bins(S) − sum(S); they are also at least the portions not placed. A portion b > 1/2
    has a GPU of its own and leaves a hole of 1 − b that only portions ≤ 1 − b can fill. For a hole size t,
    with B the portions b > 1/2 whose hole is ≤ t: waste ≥ H = Σ_B (1 − b) − Σ(portions ≤ t); leaving out
    some of B lowers H by their holes y but leaves their b ≥ r·y unplaced (r = min b / (1 − b) over B), so
    the unallocated GPUs are ≥ max(r·y, H − y) ≥ r / (1 + r) · H. The bound is the largest over t. CPU,
    memory, GPU models and nodes are left out (they could only raise it)."""
    portions = [t.gpu_milli / 1000 for t in drawn if 0 < t.gpu_milli < 1000 for _ in range(max(1, t.num_gpu))]
    best = 0.0
    for t in sorted({round(1 - b, 6) for b in portions if b > 0.5}):
        big = [b for b in portions if b > 0.5 and 1 - b <= t + 1e-9]
        hole = sum(1 - b for b in big) - sum(s for s in portions if s <= t + 1e-9)
        r = min(b / (1 - b) for b in big)
        best = max(best, r / (1 + r) * max(0.0, hole))
    return best / total


def fluid(drawn: list[trace.Task], total: float) -> float:
    """The unallocated share at arrived 1.0 of a cluster that never fragments: one pool of `total` GPUs (and no
    CPU or memory limit) that takes each task whose GPUs are at most the pool's free GPUs. Not a floor (a
    policy may refuse a task and so take a bigger one later; ours never refuse), but what is left when
    fragmentation costs nothing: only the tasks bigger than what is left fail."""
    free, asked, failed = total, 0.0, 0.0
    for t in drawn:
        g = saturate.task_gpus(t)
        asked += g
        if g <= free + 1e-9:
            free -= g
        else:
            failed += g
        if asked >= total - 1e-9:
            break
    return failed / total


if __name__ == "__main__":
    sys.exit(main())
