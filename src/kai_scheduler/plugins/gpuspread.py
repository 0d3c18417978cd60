"""gpuspread: on a node, put a shared-GPU task on the emptiest GPU (§4, §6; KAI `plugins/gpuspread/`).

GPU_ORDER score per candidate GPU: 1 − its used portion (sharers' memory over the node's GPU memory); a whole
free GPU scores 1, so fractional tasks take fresh devices before sharing one.
"""

from __future__ import annotations

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.plugins.gpupack import GpuPack


class GpuSpread(GpuPack):
    """gpupack's reading of each GPU, the other way round."""

    name = "gpuspread"

    def gpu_order(self, task: PodInfo, row: int, groups: list[str]) -> list[float]:
        """GPU_ORDER: 1 − used portion of each candidate GPU; a group id the node does not have scores 1."""
        return [1.0 - used for used in super().gpu_order(task, row, groups)]
