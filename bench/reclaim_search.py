"""What `bench_scale.py`'s reclaim decision searches, counted: `python bench/reclaim_search.py [--nodes 4000]
[--rounds 1] [--what-if gpu-victims-only]`.

Per cycle, for each probe of the job solver (its size and how many victim batches earlier probes recorded): the
victim batches popped, how many of them free a GPU (the rest hold none: CPU-only pods), the distinct queues and
nodes they come from, the pop after which the cheap filters first passed, and each simulated sub-scenario
(generator, batches, result); between two probes, how long their pop sequences stay the same and how many
batches they share. Then the bounds a shorter search could use, over the victim pool of the cycle's reclaimer:
pool jobs RECLAIM_VICTIM_FILTER drops (whole queues), pool jobs holding no GPU, and nodes whose idle GPUs and
eligible victims' GPUs (shared ones at their portion) together stay below the largest task's demand.

`--what-if gpu-victims-only` alternates each cycle with one whose victim pool leaves out the jobs holding no
GPU, printing both cycles' CPU seconds and decisions' digests: what that prune would save, and whether it keeps
this cluster's decisions. It is not an exact prune (a CPU-only victim moves the queue order, frees CPU, memory
and pod slots, and may be placed before the preemptor in a simulation; `tests/scenarios` has a case whose
decisions it changes): a measurement, not a proposal.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass
class Probe:
    size: int
    recorded: int
    pops: list[tuple[str, frozenset[str], float, str]] = field(default_factory=list)  # job, nodes, GPUs, queue
    worth_at: int | None = None
    simulations: list[tuple[str, int, bool]] = field(default_factory=list)  # generator, batches, solved


def holds_gpu(job: Any) -> bool:
    return any(t.gpu.is_gpu or t.pod.resource_claims for t in job.tasks)


@contextmanager
def counted() -> Iterator[list[Probe]]:
    """Every probe the job solver makes while inside, with what it popped and simulated."""
    from kai_scheduler.actions.common import solver, victims

    probes: list[Probe] = []
    originals = (victims.VictimQueue.pop, solver._JobSolver._search, solver._JobSolver._try_all)
    originals_worth = solver._JobSolver._worth_simulating

    def pop(self: Any, stmt: Any) -> Any:
        batch = originals[0](self, stmt)
        if batch is not None and probes:
            gpus = sum(t.gpus_accepted for t in batch.tasks)
            probes[-1].pops.append((batch.job.uid, batch.nodes, gpus, batch.job.queue))
        return batch

    def search(self: Any, size: int, tasks: Any) -> Any:
        probes.append(Probe(size, len(self.recorded)))
        return originals[1](self, size, tasks)

    def try_all(self: Any, size: int, tasks: Any, accumulated: Any, sub: Any, generator: str, started: float) -> Any:
        found = originals[2](self, size, tasks, accumulated, sub, generator, started)
        probes[-1].simulations.append((generator, len(sub), found is not None))
        return found

    def worth(self: Any, *args: Any) -> bool:
        passed = originals_worth(self, *args)
        if passed and probes[-1].worth_at is None:
            probes[-1].worth_at = len(probes[-1].pops)
        return passed

    victims.VictimQueue.pop = pop  # type: ignore[method-assign]
    solver._JobSolver._search = search  # type: ignore[method-assign]
    solver._JobSolver._try_all = try_all  # type: ignore[method-assign]
    solver._JobSolver._worth_simulating = worth  # type: ignore[method-assign]
    try:
        yield probes
    finally:
        victims.VictimQueue.pop, solver._JobSolver._search, solver._JobSolver._try_all = originals  # type: ignore[method-assign]
        solver._JobSolver._worth_simulating = originals_worth  # type: ignore[method-assign]


@contextmanager
def bounds() -> Iterator[dict[str, int]]:
    """The bounds over the first reclaimer's victim pool (see the module docstring)."""
    from kai_scheduler.actions import reclaim
    from kai_scheduler.cluster.resources import GPU
    from kai_scheduler.framework import points

    found: dict[str, int] = {}
    original = reclaim.search

    def search(ssn: Any, job: Any, pool: list[Any]) -> Any:
        if not found:
            accepts = ssn.victim_filter(points.RECLAIM_VICTIM_FILTER)
            others = [v for v in pool if v.queue != job.queue]
            eligible = [v for v in others if accepts(job, v)]
            demand = max((float(t.request[GPU]) for t in ssn.tasks_to_allocate(job)), default=0.0)
            arrays = ssn.snapshot.arrays
            room = {node.name: float(arrays.free[node.row, GPU]) for node in ssn.snapshot.nodes}
            for victim in eligible:
                for task in victim.tasks:
                    if task.placement.node in room:
                        room[task.placement.node] += task.gpus_accepted
            short = {name for name, gpus in room.items() if gpus + 1e-9 < demand}
            found.update(
                pool=len(pool),
                pool_queues=len({v.queue for v in others}),
                dropped_by_filter=len(others) - len(eligible),
                queues_dropped=len({v.queue for v in others} - {v.queue for v in eligible}),
                holding_no_gpu=sum(1 for v in eligible if not holds_gpu(v)),
                nodes_short_of_demand=len(short),
                victims_only_on_short_nodes=sum(
                    1 for v in eligible if v.tasks and all(t.placement.node in short for t in v.tasks)
                ),
            )
        return original(ssn, job, pool)

    reclaim.search = search
    try:
        yield found
    finally:
        reclaim.search = original


@contextmanager
def gpu_victims_only() -> Iterator[None]:
    """The what-if: the reclaim victim pool without the jobs that hold no GPU."""
    from kai_scheduler.actions import reclaim

    original = reclaim.search
    reclaim.search = lambda ssn, job, pool: original(ssn, job, [v for v in pool if holds_gpu(v)])
    try:
        yield
    finally:
        reclaim.search = original


def one_cycle(cycles: Any, i: int, around: Callable[[], Any]) -> tuple[float, str, Any]:
    import scale_cluster as sc
    from victim_decisions import describe

    added = sc.new_gang(f"reclaim{i}", "starved", 2, 8)
    cycles.store.add_many(added)
    with around() as seen:
        cpu = time.process_time()
        result = cycles.scheduler.run_once()
        cpu = time.process_time() - cpu
    text = "\n".join(describe(op) for op in result.operations).replace(f"reclaim{i}", "reclaim#")
    evicted = [op.task.name for op in result.operations if op.op.value == "evict"]
    result.release()
    del result
    cycles._undo(added, evicted)
    return cpu, hashlib.sha256(text.encode()).hexdigest()[:16], seen


def report(probes: list[Probe]) -> None:
    for p in probes:
        gpu_pops = sum(1 for _, _, gpus, _ in p.pops if gpus > 0)
        nodes = {n for _, ns, _, _ in p.pops for n in ns}
        sims = ", ".join(f"{g} {n} batches {'solved' if ok else 'failed'}" for g, n, ok in p.simulations)
        print(
            f"  probe of {p.size} (recorded {p.recorded}): {len(p.pops)} pops ({gpu_pops} holding GPUs, "
            f"{len(p.pops) - gpu_pops} none), {len({q for *_, q in p.pops})} queues, {len(nodes)} nodes; "
            f"cheap filters passed after pop {p.worth_at}; simulated: {sims or 'none'}"
        )
    for a, b in itertools.pairwise(probes):
        left, right = [(j, n) for j, n, _, _ in a.pops], [(j, n) for j, n, _, _ in b.pops]
        differ = (k for k, (x, y) in enumerate(zip(left, right, strict=False)) if x != y)
        same = next(differ, min(len(left), len(right)))
        print(
            f"  probes of {a.size} and {b.size}: the same pops for the first {same}; "
            f"{len(set(left) & set(right))} batches in both"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--what-if", choices=["gpu-victims-only"], default=None)
    args = parser.parse_args()
    from bench_scale import Cycles

    started = time.perf_counter()
    cycles = Cycles(args.nodes)
    cycles.fill()
    print(f"{args.nodes} nodes: set-up {time.perf_counter() - started:.0f} s", flush=True)
    for i in range(args.rounds):
        cpu, digest, found = one_cycle(cycles, 2 * i, bounds)
        print(f"round {i}: CPU {cpu:.3f} s, decisions {digest}, load {os.getloadavg()[0]:.2f}; bounds {found}")
        _, _, probes = one_cycle(cycles, 2 * i + 1, counted)
        report(probes)
        if args.what_if:
            cpu, digest, _ = one_cycle(cycles, 2 * i, gpu_victims_only)
            print(f"round {i} {args.what_if}: CPU {cpu:.3f} s, decisions {digest}, load {os.getloadavg()[0]:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
