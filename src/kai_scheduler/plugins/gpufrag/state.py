"""The model's free GPUs as per-device fractions, the input of the fragmentation measure (`measure`).

A node's devices, most free first: one 1.0 per whole GPU not allocated (idle or being released), then per GPU
group in use (a shared device) the portion of its memory not held by sharers (releasing sharers' memory counts
as free, as the fit rule of §6 does), then 0 up to the widest node's device count. A group whose every sharer
is releasing is already a whole releasing GPU. Unschedulable nodes offer nothing (all 0).
"""

from __future__ import annotations

import math

import numpy as np

from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.plugins.gpufrag.measure import EPS, Floats


def width(snapshot: Snapshot) -> int:
    """Device slots per node: the most GPUs a node has (at least 1)."""
    gpus = snapshot.arrays.allocatable[:, GPU]
    return max(1, math.ceil(float(gpus.max()) - EPS)) if gpus.size else 1


def node_free(node: NodeInfo, slots: int) -> Floats:
    """Free fraction of each device of `node`, most free first, padded with 0 to `slots`."""
    out = np.zeros(slots)
    arrays, row = node.arrays, node.row
    if arrays.schedulable[row]:
        values = _free_values(node, _whole(float(arrays.free[row, GPU])), node.gpu_memory_mib)[:slots]
        out[: len(values)] = values
    return out


def _whole(free_gpus: float) -> int:
    """Whole free GPUs in a node's free GPU count."""
    return max(0, math.floor(free_gpus + EPS))


def _free_values(node: NodeInfo, whole: int, memory: float) -> list[float]:
    """`node_free` of a schedulable node without the padding: `whole` free GPUs, then its shared ones (`memory`
    MiB each) by free fraction."""
    shared = []
    for group in node.gpu_groups.values():  # GpuGroup.state, used_memory and releasing_memory, inlined
        sharers, releasing = group.sharers, group.releasing
        if not releasing:
            held = sum(sharers.values())
        elif len(releasing) == len(sharers):  # every sharer releasing: a whole releasing GPU
            continue
        else:
            held = sum(sharers.values()) - sum(sharers[u] for u in releasing)
        shared.append(min(1.0, max(0.0, 1.0 - held / memory)))
    shared.sort(reverse=True)
    return [1.0] * whole + shared


def matrix(snapshot: Snapshot, slots: int | None = None) -> Floats:
    """`node_free` of every node: (nodes, slots)."""
    slots = width(snapshot) if slots is None else slots
    out = np.zeros((len(snapshot.nodes), slots))
    arrays = snapshot.arrays
    whole = np.floor(arrays.free[:, GPU] + EPS).clip(0, slots)
    plain = np.arange(slots)[None, :] < whole[:, None]
    out[plain] = 1.0
    out[~arrays.schedulable] = 0.0
    # Only schedulable nodes with shared GPUs need a closer look; their scalars read once for all.
    schedulable, free_gpus = arrays.schedulable.tolist(), arrays.free[:, GPU].tolist()
    rows, values = [], []
    for node in snapshot.nodes:
        if node.gpu_groups and schedulable[node.row]:
            row = _free_values(node, _whole(free_gpus[node.row]), node.gpu_memory_mib)[:slots]
            rows.append(node.row)
            values.append(row + [0.0] * (slots - len(row)))
    if rows:
        out[rows] = values
    return out


def allocated_gpus(snapshot: Snapshot, free: Floats) -> float:
    """GPUs allocated on schedulable nodes: their devices minus what `free` (from `matrix`) leaves."""
    arrays = snapshot.arrays
    devices = float(arrays.allocatable[arrays.schedulable, GPU].sum())
    return devices - float(free.sum())
