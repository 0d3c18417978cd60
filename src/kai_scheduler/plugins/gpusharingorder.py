"""gpusharingorder: prefer nodes where a shared-GPU task joins a GPU already shared (§4, §6).

KAI `plugins/gpusharingorder/`, enabled with binpack: NODE_ORDER adds `scores.GPU_SHARING` (10000) on every
node that has a GPU group in use where one device of the task fits, so fractions fill shared GPUs before
opening whole ones. One vector test per task: `NodeArrays.shared_free` holds, per node, the most memory a new
sharer could get in one of its groups.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.node_info import NodeArrays
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase


class GpuSharingOrder(PluginBase):
    name = "gpusharingorder"
    _arrays: NodeArrays
    _gpu_memory: points.Scores  # MiB per GPU, KAI's default 100 where a node has no label

    def on_session_open(self, ssn: Session) -> None:
        self._arrays = ssn.snapshot.arrays
        memory = self._arrays.gpu_memory
        self._gpu_memory = np.where(memory > 0, memory, float(constants.DEFAULT_NODE_GPU_MEMORY_MIB))
        ssn.add(points.NODE_ORDER, self.node_order)

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        """NODE_ORDER: GPU_SHARING on nodes with a shared GPU the task fits in; nothing for other tasks."""
        if not task.gpu.is_shared:
            return None
        per_device = task.gpu.memory_mib or task.gpu.fraction * self._gpu_memory
        fits = self._arrays.shared_free >= per_device - tolerance.RESOURCE
        out: points.Scores = np.where(fits, scores.GPU_SHARING, 0.0)
        return out
