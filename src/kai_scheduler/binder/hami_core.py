"""HAMi-core GPU memory isolation at bind time (KAI's binder `hamicore` plugin, on with `--hami-core-enabled`).

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

import math
import re
from typing import Final

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.store.interface import JSON

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
