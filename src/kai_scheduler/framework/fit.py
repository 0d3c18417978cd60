"""Does a task fit a node's free resources (KAI `FittingNode`'s first test, §3.6 step 4)?

Free = idle + releasing (a task that only fits counting releasing resources is pipelined). Every requested
resource is compared, the pods column included (MIG instances are columns like any other); a shared-GPU task
needs whole free GPUs plus GPU groups it fits in for its devices, on a node without MIG instances (§6). The
session applies this to every placement whatever plugins are configured, so a node is never over-committed;
the `predicates` plugin reports the same rule with per-resource reasons.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU, Vector
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points


def thresholds(task: PodInfo) -> Vector:
    """Per resource, the free amount a node needs; -inf where nothing is requested (never checked)."""
    request = task.request
    need: Vector = np.where(request > 0, request - tolerance.RESOURCE, -np.inf)
    return need


def resources_fit(snapshot: Snapshot, task: PodInfo, candidates: points.Mask) -> points.Mask:
    """The nodes (all rows; only `candidates` are exact for shared GPUs) where the task fits idle + releasing."""
    fits: points.Mask = np.all(snapshot.arrays.free >= thresholds(task), axis=1)
    if task.gpu.is_shared:
        fits &= shared_gpu_fit(snapshot, task, candidates) & ~snapshot.mig_nodes()
    return fits


def shared_gpu_fit(snapshot: Snapshot, task: PodInfo, candidates: points.Mask) -> points.Mask:
    """Whole non-allocated GPUs plus the GPU groups the task fits in cover its devices (§6).

    One device: a vector test on `shared_free` (the roomiest usable group per node). Several devices: only
    candidates short of whole GPUs that have a usable group with room are looked at one by one."""
    arrays, need = snapshot.arrays, task.gpu.num_devices
    whole = arrays.free[:, GPU]
    fits: points.Mask = whole >= need - tolerance.RESOURCE
    if task.gpu.memory_mib:  # a fresh device must hold the request: at most one GPU's memory
        fits &= arrays.gpu_memory >= task.gpu.memory_mib - tolerance.RESOURCE
    if need == 1:
        memory = np.where(arrays.gpu_memory > 0, arrays.gpu_memory, float(constants.DEFAULT_NODE_GPU_MEMORY_MIB))
        per_device = task.gpu.memory_mib or task.gpu.fraction * memory
        fits |= arrays.shared_free >= per_device - tolerance.RESOURCE
        return fits
    maybe = candidates & ~fits & (arrays.shared_free > tolerance.RESOURCE)
    nodes = snapshot.nodes
    for row in np.flatnonzero(maybe).tolist():
        node = nodes[row]
        devices = whole[row] if arrays.gpu_memory[row] >= task.gpu.memory_mib - tolerance.RESOURCE else 0.0
        if node.gpu_groups and devices + len(node.shared_gpu_fit(task)) >= need - tolerance.RESOURCE:
            fits[row] = True
    return fits
