"""Scenarios of a victim search: which victims to try together, and cheap tests before simulating (§3.7).

KAI `actions/common/solvers/` (accumulated scenario builder, accumulated filters, sub-scenario emitters) and
the scenario-generator plugins `sg-nodelocalgreedy` and `sg-multinodegang`.

The search accumulates victim batches one at a time (victims.VictimQueue). Each time a batch is added, the
cheap filters ask whether the accumulated victims could possibly make room; only then do the generators
propose sub-scenarios (subsets of the accumulated batches, always keeping the victims recorded by earlier
probes) for the solver to simulate:

1. `NodeLocalGreedy` (only when the tasks could fit on one node): one scenario per node of the newest batch,
   taking every accumulated batch that touches that node;
2. `MultiNodeGang`: the nodes holding accumulated victims, by post-eviction free GPUs ascending (then name);
   the smallest prefix whose free GPUs, with the free GPUs elsewhere, cover the demand; then prefixes twice,
   four times … as long, ending with every node. Picking a node takes every batch touching it (a gang is
   evicted whole, wherever its pods are).

Cheap filters (necessary conditions, never rejecting a scenario the simulation could accept, except for the
GPU greedy fit, a heuristic KAI shares): every distinct task has some node that fits it counting releasing
resources (node affinity, taints, pod counts, per-node size); and the GPU demand fits greedily, the largest
request first onto the node with the most free GPUs (idle + releasing + freed by the scenario's victims).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kai_scheduler.actions.common.victims import Batch
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.framework.session import Session

NODE_LOCAL_GREEDY = "NodeLocalGreedy"
MULTI_NODE_GANG = "MultiNodeGang"
GENERATORS = (NODE_LOCAL_GREEDY, MULTI_NODE_GANG)
Floats = npt.NDArray[np.float64]


@dataclass(slots=True)
class ScenarioOutcome:
    """A simulated scenario as validators read it (`points.VictimScenario`)."""

    victims: list[PodInfo] = field(default_factory=list)
    moved: list[PodInfo] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)

    @classmethod
    def of(cls, batches: Sequence[Batch]) -> ScenarioOutcome:
        """Classify the batches' tasks by their simulated status: still Releasing, or pipelined elsewhere."""
        out = cls(batches=[b for b in batches if any(_touched(t) for t in b.tasks)])
        for batch in batches:
            for task in batch.tasks:
                if task.is_releasing:
                    out.victims.append(task)
                elif task.status == PodStatus.PIPELINED:
                    out.moved.append(task)
        return out


def _touched(task: PodInfo) -> bool:
    return task.is_releasing or task.status == PodStatus.PIPELINED


def gpu_demand(tasks: Sequence[PodInfo]) -> list[float]:
    """Whole-GPU demands of the tasks (shared-GPU tasks are left out: they may fit on a shared device)."""
    return [float(t.request[GPU]) for t in tasks if t.request[GPU] > 0]


def gpus_fit(demands: Sequence[float], free_gpus: Floats) -> bool:
    """Greedy fit: the largest demand first, onto the node with the most free GPUs.

    Only the k nodes with the most free GPUs can receive one of k demands (each placement lowers one node),
    so the heap holds those."""
    wanted = _wanted(demands)
    if not wanted:
        return True
    if not _enough(wanted, free_gpus):
        return False
    free = free_gpus[free_gpus > tolerance.RESOURCE]
    k = len(wanted)
    top = free if free.size <= k else np.partition(free, free.size - k)[free.size - k :]
    return _greedy(wanted, [float(x) for x in top])


def _wanted(demands: Sequence[float]) -> list[float]:
    return sorted((d for d in demands if d > tolerance.RESOURCE), reverse=True)


def _enough(wanted: list[float], free_gpus: Floats) -> bool:
    """Some node has free GPUs, and all of them together cover the demand."""
    free = free_gpus[free_gpus > tolerance.RESOURCE]
    return free.size > 0 and float(free.sum()) + tolerance.RESOURCE >= sum(wanted)


def _greedy(wanted: list[float], top: list[float]) -> bool:
    """The greedy placement of `wanted` (largest first) onto `top`, the most free GPUs of as many nodes."""
    heap = [-x for x in top if x > tolerance.RESOURCE]
    heapq.heapify(heap)
    for need in wanted:
        if not heap:
            return False
        most = -heap[0]
        if most + tolerance.RESOURCE < need:
            return False
        heapq.heapreplace(heap, -(most - need))
    return True


def freed_gpus(ssn: Session, batches: Sequence[Batch]) -> Floats:
    """Whole GPUs the batches' tasks hold, per node row (what evicting them frees, at most)."""
    # Summed per row in Python floats (the same additions, in the same order, as into the array), then written
    # once: a sub-scenario's complement holds thousands of tasks, and a numpy scalar per addition cost more.
    sums: dict[int, float] = {}
    rows = ssn.snapshot.node_by_name
    for batch in batches:
        for task, origin in zip(batch.tasks, batch.origins, strict=True):
            row = rows[origin.node].row
            sums[row] = sums.get(row, 0.0) + float(task.request[GPU])
    out = np.zeros(len(ssn.snapshot.nodes))
    if sums:
        out[list(sums)] = list(sums.values())
    return out


def every_task_has_a_node(ssn: Session, tasks: Sequence[PodInfo], candidates: npt.NDArray[np.bool_]) -> bool:
    """Each distinct task fits some candidate node now, counting releasing resources (the evicted victims')."""
    seen: set[tuple[str, bytes]] = set()
    for task in tasks:
        key = (task.subgroup, task.request.tobytes())
        if key in seen:
            continue
        seen.add(key)
        mask, _ = ssn.feasible_nodes(task, candidates)
        if not mask.any():
            return False
    return True


def fits_one_node(ssn: Session, tasks: Sequence[PodInfo]) -> bool:
    """Whether all the tasks together are no larger than some node's allocatable."""
    total = np.sum([t.request for t in tasks], axis=0)
    arrays = ssn.snapshot.arrays
    return bool(((arrays.allocatable >= total - tolerance.RESOURCE).all(axis=1) & arrays.schedulable).any())


class Generators:
    """Proposes sub-scenarios of one probe's accumulated batches; the first `recorded` batches are always in."""

    def __init__(self, ssn: Session, tasks: Sequence[PodInfo], single_node: bool) -> None:
        self._ssn = ssn
        self._demand = gpu_demand(tasks)
        self._single_node = single_node
        self._free: Floats | None = None  # the free GPUs per node the last accumulated fit was judged on
        self._top: dict[int, float] | None = None  # the rows of the k most free GPUs in it, k demands
        self._fits = False

    def node_local_greedy(self, accumulated: Sequence[Batch], recorded: int, latest: Batch) -> Iterator[list[Batch]]:
        """One scenario per node of the newest batch: the recorded batches and every batch on that node."""
        if not self._single_node:
            return
        rank = self._ssn.snapshot.node_by_name
        for node in sorted(latest.nodes, key=lambda n: rank[n].row):
            yield _with_nodes(accumulated, recorded, {node})

    def multi_node_gang(self, accumulated: Sequence[Batch], recorded: int) -> Iterator[list[Batch]]:
        """Growing node prefixes: post-eviction free GPUs ascending, from the smallest prefix that covers the
        demand, doubling, ending with every node that holds a victim."""
        ssn = self._ssn
        by_name = ssn.snapshot.node_by_name
        nodes = sorted({n for b in accumulated[recorded:] for n in b.nodes}, key=lambda n: by_name[n].row)
        if not nodes:
            return
        arrays = ssn.snapshot.arrays
        free = np.where(arrays.schedulable, arrays.free[:, GPU], 0.0)
        rows = np.array([by_name[n].row for n in nodes])
        order = np.lexsort((rows, free[rows]))
        nodes = [nodes[i] for i in order]
        baseline = float(free.sum() - free[rows].sum())
        need = sum(self._demand)
        covered = np.cumsum(free[rows][order]) + baseline
        reach = np.nonzero(covered + tolerance.RESOURCE >= need)[0]
        size = int(reach[0]) + 1 if reach.size else len(nodes)
        while True:
            size = min(size, len(nodes))
            yield _with_nodes(accumulated, recorded, set(nodes[:size]))
            if size >= len(nodes):
                return
            size *= 2

    def accumulated_fit(self, latest: Batch) -> bool:
        """The GPU greedy fit with every accumulated batch evicted (`gpus_fit(accumulated, accumulated)`), when
        the only change since the last call is the eviction of `latest`. Only the nodes of `latest` are read
        again: the answer stands if none of them changed (a CPU-only victim); the k nodes with the most free GPUs
        are kept up to date as long as free GPUs only grow (evictions), so the greedy runs on them without a
        pass over every node, and the sum over every node is taken only when the greedy fits."""
        wanted = _wanted(self._demand)
        if not wanted:
            return True
        arrays = self._ssn.snapshot.arrays
        if self._free is None:
            self._free = np.where(arrays.schedulable, arrays.free[:, GPU], 0.0)
        else:
            by_name = self._ssn.snapshot.node_by_name
            changed = False
            for node in latest.nodes:
                row = by_name[node].row
                value = float(arrays.free[row, GPU]) if arrays.schedulable[row] else 0.0
                old = float(self._free[row])
                if value == old:
                    continue
                changed = True
                self._free[row] = value
                if value < old or self._top is None:
                    self._top = None
                elif row in self._top or len(self._top) < len(wanted):
                    self._top[row] = value
                else:
                    least = min(self._top, key=self._top.__getitem__)
                    if value > self._top[least]:
                        del self._top[least]
                        self._top[row] = value
            if not changed:
                return self._fits
        if self._top is None:
            self._top = _most_free(self._free, len(wanted))
        self._fits = _greedy(wanted, list(self._top.values())) and _enough(wanted, self._free)
        return self._fits

    def gpus_fit(self, accumulated: Sequence[Batch], sub: Sequence[Batch]) -> bool:
        """The GPU greedy fit for `sub` while every accumulated batch is evicted in the model."""
        arrays = self._ssn.snapshot.arrays
        free = np.where(arrays.schedulable, arrays.free[:, GPU], 0.0)
        if len(sub) != len(accumulated):
            inside = {id(b) for b in sub}
            free = free - freed_gpus(self._ssn, [b for b in accumulated if id(b) not in inside])
        return gpus_fit(self._demand, free)


def _most_free(free_gpus: Floats, k: int) -> dict[int, float]:
    """The rows of the k largest values (all rows when there are no more) and their values."""
    rows = np.arange(free_gpus.size) if free_gpus.size <= k else np.argpartition(free_gpus, free_gpus.size - k)[-k:]
    return {int(r): float(free_gpus[r]) for r in rows}


def _with_nodes(accumulated: Sequence[Batch], recorded: int, nodes: set[str]) -> list[Batch]:
    return [b for i, b in enumerate(accumulated) if i < recorded or not nodes.isdisjoint(b.nodes)]
