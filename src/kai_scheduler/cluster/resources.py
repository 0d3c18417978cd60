"""The resource axis: every resource vector in the model is a float64 array indexed the same way.

As KAI's `ResourceVectorMap`: CPU (millicores), memory (bytes), GPU (devices), pods first, then the extended
resources that some node or pod in the snapshot names, in sorted order. Queue accounting uses the first three.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from kai_scheduler.api import constants, mig
from kai_scheduler.cluster import tolerance

Vector = npt.NDArray[np.float64]

CPU, MEMORY, GPU, PODS = 0, 1, 2, 3
QUEUE_AXIS = (CPU, MEMORY, GPU)  # the resources queues divide and limit
QUEUE_NAMES = ("cpu", "memory", "gpu")
_BASE = (constants.RESOURCE_CPU, constants.RESOURCE_MEMORY, constants.RESOURCE_GPU, constants.RESOURCE_PODS)
# Resources that never constrain placement here: they are accounted by kubelet or by GPU-group logic.
_IGNORED = {"ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi"}


class ResourceAxis:
    """Names ↔ positions of one snapshot's resource vectors."""

    __slots__ = ("index", "mig_columns", "mig_units", "names")

    def __init__(self, extended: Iterable[str] = ()) -> None:
        extra = sorted(set(extended) - set(_BASE) - _IGNORED)
        self.names: tuple[str, ...] = (*_BASE, *extra)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        # MIG instance columns (`nvidia.com/mig-<profile>`) and, per column, the GPU units one instance counts
        # in queue accounting (its profile's compute slices; 0 elsewhere).
        self.mig_units: Vector = np.array([float(mig.gpu_units(name)) for name in self.names])
        self.mig_columns: tuple[int, ...] = tuple(int(i) for i in np.flatnonzero(self.mig_units))

    def __len__(self) -> int:
        return len(self.names)

    def vector(self, amounts: Mapping[str, float]) -> Vector:
        """A vector of `amounts`; names outside the axis are dropped."""
        out = np.zeros(len(self.names))
        for name, value in amounts.items():
            i = self.index.get(name)
            if i is not None:
                out[i] = value
        return out

    def zeros(self) -> Vector:
        return np.zeros(len(self.names))


def queue_vector(cpu_millis: float, memory_bytes: float, gpus: float) -> Vector:
    """A queue-axis vector (cpu, memory, gpu)."""
    return np.array([cpu_millis, memory_bytes, gpus], dtype=np.float64)


def gpu_portion(memory_mib: float, gpu_memory_mib: float) -> float:
    """The portion of one GPU a GPU-memory request takes: ceil(mem / gpuMem × 100) / 100, at most 1 (§6).

    A GPU of unknown memory (0) is taken whole. The one rule for the snapshot, GPU-sharing placement and the
    queue capacity check."""
    if gpu_memory_mib <= 0:
        return 1.0
    return min(1.0, math.ceil(memory_mib / gpu_memory_mib * 100 - tolerance.ROUNDING) / 100)


def describe(name: str, amount: float) -> str:
    """A human reading of one resource amount ("8 GPUs", "16 CPU", "64Gi memory")."""
    if name in ("gpu", constants.RESOURCE_GPU):
        return f"{amount:g} GPU" + ("" if amount == 1 else "s")
    if name in ("cpu", constants.RESOURCE_CPU):
        return f"{amount / 1000:g} CPU"
    if name in ("memory", constants.RESOURCE_MEMORY):
        return f"{amount / 2**30:.4g}Gi memory"
    return f"{amount:g} {name}"
