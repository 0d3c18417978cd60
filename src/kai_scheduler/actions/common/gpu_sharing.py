"""Which GPUs of the chosen node a shared-GPU task gets (§6 "Choosing GPUs"; KAI `gpu_sharing/gpuSharing.go`).

Candidates are every GPU group on the node the task fits in, then one "whole GPU" placeholder per free device
(idle first, then releasing). They are ordered by the summed GPU_ORDER scores (gpupack, gpuspread), highest
first; ties keep candidate order (existing groups by id, then idle devices, then releasing ones). The first
`num_devices` are taken; a whole-GPU placeholder becomes a new group with a fresh id. If any choice depends on
releasing capacity (a group whose memory only fits counting its releasing sharers, a group opened by a
pipelined task, or a device still being released) the caller pipelines the task instead of allocating it.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.node_info import GpuGroup, GroupState, NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU, gpu_portion
from kai_scheduler.framework.session import Session

_GROUP_NAMESPACE = uuid.UUID("0b6f3a52-4c1e-5d7a-8f39-2a6c9e1d4b70")
_PLACEHOLDER = "whole-gpu/"  # candidate id of a free device: never a group id (those are UUIDs)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One GPU a task may take: an existing group, or a whole free device that becomes a new group."""

    group: str
    is_new: bool
    on_releasing: bool


def choose(ssn: Session, task: PodInfo, row: int) -> tuple[tuple[str, ...], bool]:
    """GPU groups for `task` on node `row`, and whether any of them depends on releasing capacity.

    A whole-GPU or CPU task needs no group. For a gpu-memory task this also sets `task.memory_portion` to its
    portion of this node's GPU (§6: ceil(mem / nodeGpuMem × 100) / 100), what its queue is charged, through the
    snapshot's change log (`Snapshot.set_memory_portion`)."""
    if not task.gpu.is_shared:
        return (), False
    node = ssn.snapshot.nodes[row]
    if task.gpu.memory_mib:
        ssn.snapshot.set_memory_portion(task, gpu_portion(task.gpu.memory_mib, node.gpu_memory_mib))
    candidates = candidates_on(ssn, task, node)
    scores = ssn.gpu_scores(task, row, [c.group for c in candidates])
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])
    chosen = [candidates[i] for i in order[: task.gpu.num_devices]]
    if len(chosen) < task.gpu.num_devices:  # the predicates passed this node: their rule is ours
        raise RuntimeError(
            f"task {task.key}: node {node.name} offers {len(chosen)} of the "
            f"{task.gpu.num_devices} GPUs the predicates found"
        )
    groups = tuple(_new_group_id(node, task, i) if c.is_new else c.group for i, c in enumerate(chosen))
    return groups, any(c.on_releasing for c in chosen)


def candidates_on(ssn: Session, task: PodInfo, node: NodeInfo) -> list[Candidate]:
    """Fitting groups by id, then whole free devices: idle ones first, then releasing ones.

    Whole devices all score alike, so at most `num_devices` of each kind are offered; their ids are
    placeholders (not groups of the node) until chosen."""
    need = node.task_gpu_memory(task)
    total = node.gpu_memory_mib
    out = [Candidate(g.id, False, _needs_releasing(g, total, need)) for g in node.shared_gpu_fit(task)]
    if need > total + tolerance.RESOURCE:  # more memory than one device has: no fresh device takes it
        return out
    arrays = ssn.snapshot.arrays
    idle = float(arrays.idle[node.row][GPU] + min(arrays.releasing[node.row][GPU], 0.0))
    free = float(arrays.idle[node.row][GPU] + arrays.releasing[node.row][GPU])
    idle_whole = max(0, math.floor(idle + tolerance.RESOURCE))
    releasing_whole = max(0, math.floor(free + tolerance.RESOURCE) - idle_whole)
    wanted = task.gpu.num_devices
    out += [Candidate(f"{_PLACEHOLDER}{i}", True, False) for i in range(min(idle_whole, wanted))]
    out += [Candidate(f"{_PLACEHOLDER}r{i}", True, True) for i in range(min(releasing_whole, wanted))]
    return out


def shared_room(ssn: Session) -> dict[int, float]:
    """Unused portions of the shared GPUs per schedulable node row, in GPUs (memory not held, or held by
    releasing sharers, over the node's GPU memory), for the nodes that have any; groups whose every sharer is
    releasing are left out (their whole device counts as releasing). KAI counts this room with the idle and
    releasing GPUs when it narrows victim searches and checks consolidation's capacity (§3.7, §3.8).

    Computed once per change of the placements (`Session.derived`); the caller gets its own dict."""
    return dict(ssn.derived("gpu_sharing.shared_room", lambda: _shared_room(ssn)))


def _shared_room(ssn: Session) -> dict[int, float]:
    room: dict[int, float] = {}
    schedulable = ssn.snapshot.arrays.schedulable
    for node in ssn.snapshot.nodes:
        memory = node.gpu_memory_mib
        if not node.gpu_groups or memory <= 0 or not schedulable[node.row]:
            continue
        free = sum(
            max(0.0, memory - g.used_memory() + g.releasing_memory())
            for g in node.gpu_groups.values()
            if g.state() is not GroupState.RELEASING
        )
        if free > tolerance.RESOURCE * memory:
            room[node.row] = free / memory
    return room


def _needs_releasing(group: GpuGroup, total: float, need: float) -> bool:
    """The group takes the task only once releasing sharers are gone, or its device is itself pipelined."""
    return group.state() is GroupState.PIPELINED or total - group.used_memory() - need < -tolerance.RESOURCE


def _new_group_id(node: NodeInfo, task: PodInfo, index: int) -> str:
    """A fresh group UUID, the same for the same node, task and device index (deterministic decisions)."""
    salt = 0
    while True:
        group = str(uuid.uuid5(_GROUP_NAMESPACE, f"{node.name}/{task.uid}/{index}/{salt}"))
        if group not in node.gpu_groups:
            return group
        salt += 1
