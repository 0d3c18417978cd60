"""PodInfo: one pod as the scheduler sees it in a cycle (KAI `api/pod_info`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NewType

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.resources import GpuRequest
from kai_scheduler.cluster.pod_status import ACTIVE_ALLOCATED, ALLOCATED, BITS, ON_NODE, RELEASING, PodStatus
from kai_scheduler.cluster.resources import CPU, MEMORY, Vector

PodUID = NewType("PodUID", str)
# Queue vectors shared by tasks (`PodInfo.queue_request`): (id of a request vector, GPUs accepted) → that request
# (kept, so that its id is no other's while the entry lives) and the queue vector.
QueueVectors = dict[tuple[int, float], tuple[Vector, Vector]]
_ON_NODE, _ACTIVE_ALLOCATED, _ALLOCATED = ON_NODE.value, ACTIVE_ALLOCATED.value, ALLOCATED.value
_RELEASING, _PENDING = RELEASING.value, PodStatus.PENDING.value


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a task is and in which state: replaced whole by every statement operation."""

    status: PodStatus
    node: str = ""
    gpu_groups: tuple[str, ...] = ()
    holds_idle: bool = False  # a Pipelined task converted from Allocated keeps its idle charge (§3.6 step 5)
    mig: tuple[tuple[str, int], ...] = ()  # MIG instances (profile, index) its pod or BindRequest records


@dataclass(slots=True, kw_only=True, eq=False)
class PodInfo:
    """A task. `request` is on the snapshot's resource axis; for a shared-GPU task its GPU entry is 0 and the
    node-level GPU use is kept by the node's GPU groups (§6).

    States: `placement.status` moves Pending → Allocated/Pipelined (in a session) → Binding (committed) →
    Bound → Running; eviction moves an on-node status to Releasing.
    """

    uid: PodUID
    name: str
    namespace: str
    pod: Pod
    job_uid: str
    placement: Placement
    request: Vector
    gpu: GpuRequest
    subgroup: str = ""
    task_priority: int | None = None
    creation: float = 0.0
    memory_portion: float = 0.0  # for a gpu-memory task: its portion of one GPU (set by snapshot/placement)
    mig_held: tuple[tuple[str, int], ...] = ()  # MIG instances (profile, index) it holds on its node
    # `queue_request()` as last computed, with the portion it was computed for (the carried model passes on the one
    # its pod's earlier records computed).
    queue_cache: tuple[float, Vector] | None = field(default=None, repr=False)

    @property
    def status(self) -> PodStatus:
        return self.placement.status

    @property
    def node(self) -> str:
        return self.placement.node

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    # Status tests use the flags' int values: IntFlag arithmetic costs a microsecond per call on hot paths.
    @property
    def is_on_node(self) -> bool:
        return bool(BITS[self.placement.status] & _ON_NODE) and bool(self.placement.node)

    @property
    def is_active_allocated(self) -> bool:
        return bool(BITS[self.placement.status] & _ACTIVE_ALLOCATED)

    @property
    def is_allocated(self) -> bool:
        return bool(BITS[self.placement.status] & _ALLOCATED)

    @property
    def is_releasing(self) -> bool:
        return bool(BITS[self.placement.status] & _RELEASING)

    @property
    def is_pending(self) -> bool:
        return BITS[self.placement.status] == _PENDING

    @property
    def gpus_accepted(self) -> float:
        """GPUs counted against the queue: whole devices plus MIG instances' slices, or devices × portion for a
        shared task (§6)."""
        if self.gpu.whole or self.gpu.mig:
            return float(self.gpu.whole + self.gpu.mig_units)
        if self.gpu.fraction:
            return self.gpu.num_devices * self.gpu.fraction
        if self.gpu.memory_mib:
            return self.gpu.num_devices * self.memory_portion
        return 0.0

    @property
    def kubeflow_role_first(self) -> bool:
        return self.pod.meta.labels.get(constants.LABEL_KUBEFLOW_JOB_ROLE) in ("master", "launcher")

    @property
    def ray_head(self) -> bool:
        return self.pod.meta.labels.get(constants.LABEL_RAY_NODE_TYPE) == "head"

    def queue_request(self, shared: QueueVectors | None = None) -> Vector:
        """(cpu, memory, gpu) of this task as its queue is charged (read-only; it is kept for the next call). With
        `shared`, tasks of one request vector and as many GPUs accepted share one."""
        cached = self.queue_cache
        if cached is not None and cached[0] == self.memory_portion:
            return cached[1]
        gpus = self.gpus_accepted
        key = (id(self.request), gpus)  # GPUs accepted are never -0: equal floats are the same bits
        entry = shared.get(key) if shared is not None else None
        if entry is None:
            vector = np.array([self.request[CPU], self.request[MEMORY], gpus])
            vector.flags.writeable = False
            if shared is not None:
                shared[key] = (self.request, vector)
        else:
            vector = entry[1]
        self.queue_cache = (self.memory_portion, vector)
        return vector
