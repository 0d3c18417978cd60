"""HAMi-core GPU memory isolation at bind time (KAI's binder plugin `hamicore`, on with `--hami-core-enabled`).

KAI runs it after `gpusharing`, updating the capabilities ConfigMap that plugin wrote; here `gpusharing` asks it
for the limit (`HamiCore.limit`, one read of the pod's node) and writes the ConfigMap once, with the limit in it.

A fractional pod's limit is the memory of one of its node's GPUs (label `nvidia.com/gpu.memory`, MiB) times the
portion of each device its BindRequest received (`spec.receivedGPU.portion`, two decimals as the scheduler
writes it), rounded down, written as HAMi-core reads it: MiB with an `m` suffix (`4147m`). One value for the
container: with `gpu-fraction-num-devices` each device gets the same portion, and HAMi-core applies the limit to
each device the container sees. A `gpu-memory` pod's portion is the one the scheduler wrote (its memory over a
GPU's, rounded up to two decimals), so its limit may differ a little from what it asked (4096 MiB on a 15360 MiB
GPU is 0.27, 4147m).

No limit (None) when the node has no usable label or the portion is not above zero: KAI's plugin then leaves
the key out and the bind goes on, and so does this one (the env var is optional).
"""

from __future__ import annotations

import logging
import math
import re
from typing import Final

from kai_scheduler.api import constants, shared_gpu
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.store.interface import JSON, ClusterStore

log = logging.getLogger(__name__)

FRACTION: Final = "Fraction"  # the BindRequest's receivedResourceType of a shared-GPU bind
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.ParseInt takes in base 10


def memory_limit(node: JSON, br: BindRequest) -> str | None:
    """`CUDA_DEVICE_MEMORY_LIMIT` of the pod bound by `br` on `node`, or None when it cannot be told."""
    if br.received_resource_type != FRACTION:
        return None
    label = ((node.get("metadata") or {}).get("labels") or {}).get(constants.LABEL_GPU_MEMORY)
    portion = br.received_gpu_portion
    if not isinstance(label, str) or not _INTEGER.fullmatch(label) or not (math.isfinite(portion) and portion > 0):
        return None
    total_mib = int(label)
    mib = math.floor(total_mib * portion) if total_mib > 0 else 0
    return f"{mib}m" if mib > 0 else None


class HamiCore:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def limit(self, br: BindRequest) -> str | None:
        """The `CUDA_DEVICE_MEMORY_LIMIT` of a shared-GPU pod, read off its node; None when not to be told (said
        in the log when the node or the request gives no limit)."""
        if br.received_resource_type != FRACTION:
            return None
        limit = memory_limit(self.store.get("nodes", br.selected_node), br)
        if limit is None:
            key = f"{br.meta.namespace}/{br.pod_name}"
            log.warning(
                f"{shared_gpu.ENV_CUDA_DEVICE_MEMORY_LIMIT} not written for pod {key}: node {br.selected_node} has no "
                f"{constants.LABEL_GPU_MEMORY} label of a whole number of MiB above 0, or the BindRequest's portion "
                f"{br.received_gpu_portion:g} is not above 0",
                extra={"pod": key},
            )
        return limit
