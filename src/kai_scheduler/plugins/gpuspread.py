"""gpuspread: on a node, put a shared-GPU task on the emptiest GPU (§4, §6; KAI `plugins/gpuspread/`).

GPU_ORDER score per candidate GPU: 1 − its used portion (sharers' memory over the node's GPU memory); a whole
free GPU scores 1, so fractional tasks take fresh devices before sharing one. The used portion is the model's
(`NodeInfo.used_portions`), which gpupack scores the other way round.
"""

from __future__ import annotations

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class GpuSpread(PluginBase):
    name = "gpuspread"
    _snapshot: Snapshot

    def on_session_open(self, ssn: Session) -> None:
        self._snapshot = ssn.snapshot
        ssn.add(points.GPU_ORDER, self.gpu_order)

    def gpu_order(self, task: PodInfo, row: int, groups: list[str]) -> list[float]:
        """GPU_ORDER: 1 − used portion of each candidate GPU; a group id the node does not have scores 1."""
        return [1.0 - used for used in self._snapshot.nodes[row].used_portions(groups)]
