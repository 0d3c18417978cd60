"""nominatednode: keep a pipelined claim on its node (§4; KAI `plugins/nominatednode/`).

+NOMINATED_NODE on the node named by the pod's `status.nominatedNodeName`. With `--pipelined-claims` (off by
default: KAI writes no such field) the scheduler writes it when it pipelines a pod onto resources still being
released (reclaim, preempt, allocate); scoring the node above every other preference makes the pod land where
its victims were evicted for it once they are gone.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase


class NominatedNode(PluginBase):
    name = "nominatednode"
    _nodes: dict[str, NodeInfo]
    _count: int

    def on_session_open(self, ssn: Session) -> None:
        self._nodes = ssn.snapshot.node_by_name
        self._count = len(ssn.snapshot.nodes)
        ssn.add(points.NODE_ORDER, self.node_order)

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        node = self._nodes.get(task.pod.nominated_node_name) if task.pod.nominated_node_name else None
        if node is None:
            return None
        out = np.zeros(self._count)
        out[node.row] = scores.NOMINATED_NODE
        return out
