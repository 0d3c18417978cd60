"""Two readings of a cycle's snapshot: fragmentation, and the node × GPU occupancy map.

Fragmentation here is the issue's "idle GPUs the pending work cannot use": the idle GPU capacity (free whole
devices plus the free part of shared devices) on schedulable nodes where no pending GPU task fits, task by
task, on its CPU, memory and GPU request and its node constraints (nodeSelector, required node affinity,
taints). A gang is judged pod by pod, so a node that fits one pod of a gang that cannot start whole counts as
usable. With no pending GPU work nothing is fragmented. This is the pending-work form of the FGD paper's
measure (Weng et al., ATC '23), which judges against the expected task mix instead.

The snapshot is the one the cycle's session left (`CycleResult.snapshot`): the cycle's own placements are in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.cluster.snapshot import Snapshot

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class OccupancyMap:
    """GPU use per device at one instant: `cells[i, j]` is device j of node i in [0, 1], NaN past its count."""

    time: float
    nodes: tuple[str, ...]
    cells: npt.NDArray[np.float64]
    what: str = ""  # why this instant: "a quarter of the horizon", "peak allocation", …


def occupancy(snap: Snapshot, time: float, what: str = "") -> OccupancyMap:
    """The map over GPU nodes in name order: whole devices in use first, then shared devices by use."""
    arrays = snap.arrays
    rows = np.flatnonzero(arrays.allocatable[:, GPU] > 0)
    counts = arrays.allocatable[rows, GPU].astype(int)
    width = int(counts.max()) if rows.size else 0
    column = np.arange(width)
    used = np.rint(arrays.used[rows, GPU]).astype(int)
    cells = np.where(column[None, :] < used[:, None], 1.0, 0.0)
    index = {int(row): i for i, row in enumerate(rows)}
    for node in snap.nodes:
        if node.gpu_groups and node.row in index:
            i = index[node.row]
            shared = _shared_use(node)
            whole = max(0, used[i] - len(shared))
            values = ([1.0] * whole + sorted(shared, reverse=True) + [0.0] * width)[:width]
            cells[i] = values
    cells[column[None, :] >= counts[:, None]] = np.nan
    names = tuple(snap.nodes[int(row)].name for row in rows)
    return OccupancyMap(time, names, cells, what)


def _shared_use(node: NodeInfo) -> list[float]:
    """Used part of each shared device of the node (by memory; a node without GPU memory: full)."""
    total = node.gpu_memory_mib
    out = []
    for _, group in sorted(node.gpu_groups.items()):
        if not group.sharers:
            continue
        out.append(min(1.0, group.used_memory() / total) if total > 0 else 1.0)
    return out


class Fragmentation:
    """Idle GPUs the pending work cannot use; node masks per distinct constraint set are cached across cycles
    (the simulator's nodes do not change, and equal constraints give equal masks)."""

    def __init__(self) -> None:
        self._nodes: tuple[str, ...] = ()
        self._masks: dict[object, Mask] = {}

    def idle_unusable(self, snap: Snapshot) -> float:
        if not any(t.is_pending and t.gpu.is_gpu for t in snap.tasks.values()):
            return 0.0
        arrays = snap.arrays
        shared_free = self._shared_free(snap)
        whole_free = np.maximum(arrays.idle[:, GPU], 0.0)
        idle_gpus = whole_free + shared_free.sum(axis=1) if shared_free.size else whole_free
        unusable = arrays.schedulable & ~self.usable_nodes(snap, shared_free)
        return float(idle_gpus[unusable].sum())

    def usable_nodes(self, snap: Snapshot, shared_free: npt.NDArray[np.float64] | None = None) -> Mask:
        """Per node row: some pending GPU task fits its idle resources and its node constraints hold there."""
        pending = [t for t in snap.tasks.values() if t.is_pending and t.gpu.is_gpu]
        usable = np.zeros(len(snap.nodes), dtype=bool)
        if not pending:
            return usable
        names = tuple(n.name for n in snap.nodes)
        if names != self._nodes:
            self._nodes, self._masks = names, {}
        idle = snap.arrays.idle
        if shared_free is None:
            shared_free = self._shared_free(snap)
        whole_free = np.maximum(idle[:, GPU], 0.0)
        best_shared = np.maximum(
            (whole_free >= 1.0 - tolerance.RESOURCE).astype(float), shared_free.max(axis=1) if shared_free.size else 0.0
        )
        seen: set[object] = set()
        for task in pending:
            shape = _shape(task)
            if shape in seen:
                continue
            seen.add(shape)
            fits = np.all(idle >= task.request - tolerance.RESOURCE, axis=1)
            if task.gpu.is_shared:
                fits &= best_shared >= _portion(task) - tolerance.RESOURCE
            usable |= fits & self._constraint_mask(snap, task.pod)
        return usable

    @staticmethod
    def _shared_free(snap: Snapshot) -> npt.NDArray[np.float64]:
        """Free part of each shared device, per node (columns padded with 0)."""
        per_node = [(n.row, [1.0 - u for u in _shared_use(n)]) for n in snap.nodes if n.gpu_groups]
        width = max((len(v) for _, v in per_node), default=0)
        out = np.zeros((len(snap.nodes), width))
        for row, values in per_node:
            out[row, : len(values)] = values
        return out

    def _constraint_mask(self, snap: Snapshot, pod: Pod) -> Mask:
        key = (tuple(sorted(pod.node_selector.items())), pod.node_affinity, pod.tolerations)
        mask = self._masks.get(key)
        if mask is None:
            mask = np.array([_allows(n, pod) for n in snap.nodes], dtype=bool)
            self._masks[key] = mask
        return mask


def _shape(task: PodInfo) -> object:
    pod = task.pod
    return (
        task.request.tobytes(),
        _portion(task),
        tuple(sorted(pod.node_selector.items())),
        pod.node_affinity,
        pod.tolerations,
    )


def _portion(task: PodInfo) -> float:
    return task.gpu.fraction or task.memory_portion or (1.0 if task.gpu.memory_mib else 0.0)


def _allows(node: NodeInfo, pod: Pod) -> bool:
    """The node constraints of `pod` hold on `node`: selector, required affinity (terms ORed), taints."""
    labels = node.labels
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.node_affinity and not any(term.matches(labels, node.name) for term in pod.node_affinity):
        return False
    for taint in node.node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in pod.tolerations):
            return False
    return True
