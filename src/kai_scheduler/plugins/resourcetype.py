"""resourcetype: keep CPU-only tasks on CPU-only nodes (§4; KAI `plugins/resourcetype/resourcetype.go`).

+RESOURCE_TYPE for a task without any GPU request on a node with no allocatable GPU, so CPU work does not
fragment GPU nodes when a CPU node would do. Allocatable does not change in a session: the score vector is
built once at open and returned as is (the session only reads it).
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase


class ResourceType(PluginBase):
    name = "resourcetype"
    _cpu_node_scores: points.Scores  # per session: RESOURCE_TYPE on CPU-only nodes, else 0

    def on_session_open(self, ssn: Session) -> None:
        cpu_only = ssn.snapshot.arrays.allocatable[:, GPU] <= 0
        self._cpu_node_scores = np.where(cpu_only, scores.RESOURCE_TYPE, 0.0)
        self._cpu_node_scores.flags.writeable = False
        ssn.add(points.NODE_ORDER, self.node_order)

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        if task.gpu.is_gpu or task.request[GPU] > 0:
            return None
        return self._cpu_node_scores
