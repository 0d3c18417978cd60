"""The explanation of one job, as plain values: what `kai explain` prints, as text or JSON, and what a
dashboard can show.

Every value is frozen and holds only strings, numbers, booleans and tuples of other values here, so an
`Explanation` can be kept, compared and rendered without the snapshot it came from. `to_json` is the
documented shape of `kai explain -o json` (docs/explain.md); keys only ever get added to it.

Units: queue amounts are the Queue CRD's (GPU in devices, CPU in millicores, memory in megabytes; -1 means
unlimited); node amounts are a resource's own (GPUs in devices, CPU in cores, memory in bytes, GPU memory in
MiB); times are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Amounts:
    """A queue-axis amount in the Queue CRD's units; -1 = unlimited."""

    gpu: float
    cpu: float
    memory: float

    def to_json(self) -> dict[str, float]:
        return {"gpu": self.gpu, "cpu": self.cpu, "memory": self.memory}


@dataclass(frozen=True, slots=True)
class QueueLine:
    """One queue of the job's chain (leaf first) as the proportion plugin sees it at the start of a cycle."""

    name: str
    parent: str
    priority: int
    deserved: Amounts
    fair_share: Amounts
    allocated: Amounts
    requested: Amounts
    limit: Amounts

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parent": self.parent,
            "priority": self.priority,
            "deserved": self.deserved.to_json(),
            "fairShare": self.fair_share.to_json(),
            "allocated": self.allocated.to_json(),
            "requested": self.requested.to_json(),
            "limit": self.limit.to_json(),
        }


@dataclass(frozen=True, slots=True)
class AheadJob:
    """A job the allocate action tries before this one."""

    job: str  # namespace/name
    queue: str
    priority: int
    pods: int  # the pods it asks for next (its gang minimum, or one elastic pod)
    gpus: float

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "queue": self.queue, "priority": self.priority, "pods": self.pods, "gpus": self.gpus}


@dataclass(frozen=True, slots=True)
class QueueOrder:
    """Where the job stands in allocate's order (queue tree, then job order), at the start of a cycle.

    `position` is 1 for the first job tried; None when allocate does not consider the job (`reason` says why).
    `ahead` lists the first of the `ahead_count` jobs before it; `queues_ahead` counts them per queue, in the
    order their queues first come."""

    position: int | None
    reason: str
    ahead_count: int
    ahead: tuple[AheadJob, ...]
    queues_ahead: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "reason": self.reason,
            "aheadCount": self.ahead_count,
            "ahead": [a.to_json() for a in self.ahead],
            "queuesAhead": [{"queue": q, "jobs": n} for q, n in self.queues_ahead],
        }


@dataclass(frozen=True, slots=True)
class Lack:
    """One thing a node lacks for a task, and the plugin whose check it fails.

    `kind`: gpu, cpu, memory, pods or another resource name (with `requested` and `free` in that resource's
    units), gpu-memory or gpu-share (a shared GPU: MiB or a fraction per device), taint, affinity, node (not
    ready or cordoned), pod-affinity, topology, queue-capacity, or predicate (any other check)."""

    kind: str
    plugin: str
    message: str
    requested: float | None = None
    free: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "plugin": self.plugin, "message": self.message}
        if self.requested is not None:
            out["requested"] = self.requested
            out["free"] = self.free
        return out


@dataclass(frozen=True, slots=True)
class NodeFit:
    """A node as one task sees it: whether the task fits, and if not, everything the node lacks."""

    name: str
    fits: bool
    lacks: tuple[Lack, ...]
    free_gpus: float  # idle + releasing whole GPUs
    allocatable_gpus: float
    domain: str = ""  # the node's domain at the job's required topology level ("" without one)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "fits": self.fits,
            "lacks": [lack.to_json() for lack in self.lacks],
            "freeGpus": self.free_gpus,
            "allocatableGpus": self.allocatable_gpus,
        }
        if self.domain:
            out["domain"] = self.domain
        return out


@dataclass(frozen=True, slots=True)
class TaskShape:
    """The job's pending pods of one shape (request and constraints), judged on one representative pod."""

    task: str  # the representative pod's name
    pods: int  # pending pods of this shape that allocate places next
    request: str  # in plain words ("4 GPUs, 16 CPU, 128Gi memory")
    nodes_fit: int  # nodes of the pool the pod fits on now (idle + releasing)
    nodes: int
    closest: tuple[NodeFit, ...]  # nodes that fit first, then those lacking least

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "pods": self.pods,
            "request": self.request,
            "nodesFit": self.nodes_fit,
            "nodes": self.nodes,
            "closest": [n.to_json() for n in self.closest],
        }


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a placement failed, as the PodGroup condition says it, and who said it."""

    plugin: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"plugin": self.plugin, "message": self.message}


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a dry run put one pod: Allocated (idle resources) or Pipelined (resources still releasing)."""

    task: str
    node: str
    status: str

    def to_json(self) -> dict[str, str]:
        return {"task": self.task, "node": self.node, "status": self.status}


@dataclass(frozen=True, slots=True)
class PoolView:
    """One node pool (nodes with one value of the node-pool label; "" = unlabelled) as the job sees it.

    `placeable`: the job's next pods fit on the pool's nodes as they are now (a dry allocate of this job
    alone, ahead of everyone); `placements` says where, `reasons` why not. Only the job's own pool (the one
    whose scheduler serves it) is searched for victims."""

    name: str
    is_job_pool: bool
    nodes: int
    placeable: bool
    placements: tuple[Placement, ...]
    reasons: tuple[Reason, ...]
    shapes: tuple[TaskShape, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "jobPool": self.is_job_pool,
            "nodes": self.nodes,
            "placeable": self.placeable,
            "placements": [p.to_json() for p in self.placements],
            "reasons": [r.to_json() for r in self.reasons],
            "tasks": [s.to_json() for s in self.shapes],
        }


@dataclass(frozen=True, slots=True)
class Victim:
    """A pod a victim action would take: evicted, or moved to `moved_to`; in the next cycle also the action
    and the job it makes room for (`by`)."""

    task: str  # namespace/name
    job: str
    queue: str
    node: str
    moved_to: str = ""
    action: str = ""
    by: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"task": self.task, "job": self.job, "queue": self.queue, "node": self.node, "movedTo": self.moved_to}
        if self.action:
            out["action"] = self.action
            out["by"] = self.by
        return out


@dataclass(frozen=True, slots=True)
class NextCycle:
    """What the next scheduling cycle would do for the job, every configured action run in order on the
    cluster as it is (a dry run): where its pods go, the pods taken to make room for it, its own pods taken
    for others, and, if it stays pending, the reasons its PodGroup condition would give."""

    placements: tuple[Placement, ...]
    made_room: tuple[Victim, ...]
    taken: tuple[Victim, ...]
    reasons: tuple[Reason, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "placements": [p.to_json() for p in self.placements],
            "madeRoom": [v.to_json() for v in self.made_room],
            "taken": [v.to_json() for v in self.taken],
            "reasons": [r.to_json() for r in self.reasons],
        }


@dataclass(frozen=True, slots=True)
class VictimPlan:
    """The dry run of one victim action (reclaim, preempt, consolidation) for the job, at that action's turn in
    the next cycle: whether it could make room, the pods it would evict or move, and where the job's pods would
    then go; else why not."""

    action: str
    possible: bool
    reason: str
    victims: tuple[Victim, ...] = ()
    placements: tuple[Placement, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "possible": self.possible,
            "reason": self.reason,
            "victims": [v.to_json() for v in self.victims],
            "placements": [p.to_json() for p in self.placements],
        }


@dataclass(frozen=True, slots=True)
class Threat:
    """A pending job that a victim action, at its turn in the next cycle, could let take pods of this (running)
    job.

    `would_evict`: the dry run of that action for the pending job chose pods of this job (None: not run,
    beyond the number of dry runs made)."""

    action: str
    preemptor: str
    queue: str
    priority: int
    would_evict: bool | None
    pods: int = 0  # this job's pods the dry run would take

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "preemptor": self.preemptor,
            "queue": self.queue,
            "priority": self.priority,
            "wouldEvict": self.would_evict,
            "pods": self.pods,
        }


@dataclass(frozen=True, slots=True)
class Protection:
    """What keeps a running job from being taken: non-preemptibility, and min-runtime per action.

    `min_runtime` and `protected_for` are seconds per action (preempt, reclaim); reclaim's min-runtime may
    depend on the reclaimer's queue, and is given for the queue method (the victim's own queue chain) unless
    `notes` say otherwise. An elastic job is protected only down to its minimum."""

    preemptible: bool
    elastic: bool
    started_ago: float | None
    min_runtime: tuple[tuple[str, float], ...]
    protected_for: tuple[tuple[str, float], ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "preemptible": self.preemptible,
            "elastic": self.elastic,
            "startedAgo": self.started_ago,
            "minRuntime": dict(self.min_runtime),
            "protectedFor": dict(self.protected_for),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why one job is where it is. `state`: pending (no pod placed), running (every pod placed), partial
    (some pods placed, some pending) or done (nothing left to schedule)."""

    job: str  # namespace/name of the PodGroup
    queue: str
    priority: int
    preemptible: bool
    state: str
    pods: tuple[tuple[str, int], ...]  # pod status → count
    summary: str
    problems: tuple[str, ...]  # why the scheduler cannot consider the job at all
    queues: tuple[QueueLine, ...]
    order: QueueOrder | None
    pools: tuple[PoolView, ...]
    victims: tuple[VictimPlan, ...]
    threats: tuple[Threat, ...]
    protection: Protection | None
    next_cycle: NextCycle | None = None
    now: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "job": self.job,
            "queue": self.queue,
            "priority": self.priority,
            "preemptible": self.preemptible,
            "state": self.state,
            "pods": dict(self.pods),
            "summary": self.summary,
            "problems": list(self.problems),
            "queues": [q.to_json() for q in self.queues],
            "order": None if self.order is None else self.order.to_json(),
            "nodePools": [p.to_json() for p in self.pools],
            "victimActions": [v.to_json() for v in self.victims],
            "threats": [t.to_json() for t in self.threats],
            "protection": None if self.protection is None else self.protection.to_json(),
            "nextCycle": None if self.next_cycle is None else self.next_cycle.to_json(),
            "now": self.now,
            "notes": list(self.notes),
        }
