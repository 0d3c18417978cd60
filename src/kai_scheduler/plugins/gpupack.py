"""gpupack: on a node, put a shared-GPU task on the fullest GPU it fits (§4, §6; KAI `plugins/gpupack/`).

GPU_ORDER score per candidate GPU: the used portion of that GPU (its sharers' memory over the node's GPU
memory, at most 1); a whole free GPU scores 0, so it is taken last and stays free for whole-GPU work.
"""

from __future__ import annotations

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase


class GpuPack(PluginBase):
    name = "gpupack"
    _snapshot: Snapshot

    def on_session_open(self, ssn: Session) -> None:
        self._snapshot = ssn.snapshot
        ssn.add(points.GPU_ORDER, self.gpu_order)

    def gpu_order(self, task: PodInfo, row: int, groups: list[str]) -> list[float]:
        """GPU_ORDER: used portion of each candidate GPU; a group id the node does not have is a free GPU (0)."""
        return self._snapshot.nodes[row].used_portions(groups)
