"""What `kai schedule` reports: tasks before and after, queue shares, unplaced jobs and why, per-cycle counts.

Queue figures use the Queue CRD's units (§1.1): GPU in devices, CPU in millicores, memory in megabytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.binder import reservation
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.resources import GPU, QUEUE_NAMES, Vector
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult

_MB = 1_000_000.0


@dataclass(slots=True)
class TaskRow:
    name: str
    namespace: str
    job: str  # the job's name (in the task's namespace)
    queue: str
    before: str
    after: str
    node: str
    moved: str = ""  # "moved gpu-a-0 → gpu-a-3": a victim the last cycle moved (Pipelined on its new node)
    mig: tuple[str, ...] = ()  # the MIG instances it holds on its node, "<profile>/<index>"
    shard: str = ""  # with scheduler shards: the shard that placed it

    @property
    def key(self) -> str:
        """`namespace/name`: a pod name alone is unique only within its namespace."""
        return f"{self.namespace}/{self.name}"

    @property
    def job_key(self) -> str:
        return f"{self.namespace}/{self.job}" if self.job else ""


@dataclass(slots=True)
class QueueRow:
    name: str
    parent: str
    deserved: dict[str, float]
    fair_share: dict[str, float]
    allocated: dict[str, float]
    requested: dict[str, float]
    limit: dict[str, float]


@dataclass(slots=True)
class Move:
    """An eviction or a move decided in a cycle."""

    cycle: int
    task: str
    node: str
    action: str
    preemptor: str
    message: str
    to_node: str = ""


@dataclass(slots=True)
class CycleCounts:
    cycle: int
    binds: int
    evictions: int
    pipelines: int
    seconds: float


@dataclass(slots=True)
class Outcome:
    scenario: str
    tasks: list[TaskRow]
    queues: list[QueueRow]
    unplaced: dict[str, list[str]]  # job key → reasons in plain words
    moves: list[Move]
    cycles: list[CycleCounts]
    nodes: dict[str, dict[str, float]]
    problems: list[str] = field(default_factory=list)
    gpus: list[GpuRow] = field(default_factory=list)  # shared GPUs, by node then device
    claims: dict[str, dict[str, str]] = field(default_factory=dict)  # task key → DRA claim → its devices

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "tasks": {
                t.key: {
                    "name": t.name,
                    "namespace": t.namespace,
                    "job": t.job_key,
                    "queue": t.queue,
                    "before": t.before,
                    "status": t.after,
                    "node": t.node,
                    **({"moved": t.moved} if t.moved else {}),
                    **({"mig": list(t.mig)} if t.mig else {}),
                    **({"shard": t.shard} if t.shard else {}),
                    **({"claims": self.claims[t.key]} if t.key in self.claims else {}),
                }
                for t in self.tasks
            },
            "queues": {
                q.name: {
                    "parent": q.parent,
                    "deserved": q.deserved,
                    "fairShare": q.fair_share,
                    "allocated": q.allocated,
                    "requested": q.requested,
                    "limit": q.limit,
                }
                for q in self.queues
            },
            "unplaced": self.unplaced,
            "evictions": [
                {
                    "cycle": m.cycle,
                    "task": m.task,
                    "node": m.node,
                    "action": m.action,
                    "preemptor": m.preemptor,
                    "message": m.message,
                    "toNode": m.to_node,
                }
                for m in self.moves
            ],
            "nodes": self.nodes,
            "cycles": [
                {
                    "cycle": c.cycle,
                    "binds": c.binds,
                    "evictions": c.evictions,
                    "pipelines": c.pipelines,
                    "seconds": round(c.seconds, 4),
                }
                for c in self.cycles
            ],
            "binds": sum(c.binds for c in self.cycles),
            "evictionCount": sum(c.evictions for c in self.cycles),
            "pipelines": sum(c.pipelines for c in self.cycles),
            "problems": self.problems,
            "gpus": _gpus_json(self.gpus),
        }


def _queue_units(vec: Vector) -> dict[str, float]:
    out = {}
    for name, value in zip(QUEUE_NAMES, vec, strict=True):
        v = float(value)
        out[name] = v if v < 0 or name != "memory" else v / _MB
    return out


@dataclass(frozen=True, slots=True)
class Initial:
    """What the report needs of the cluster before the first cycle: per task key, its name, namespace, job
    name, queue and status label. Kept instead of the first snapshot, whose model the cycle can then reuse
    (a live snapshot forces the next one to be built from nothing, a second copy of every job and task)."""

    tasks: dict[str, tuple[str, str, str, str, str]]


def initial(snap: Snapshot) -> Initial:
    rows = {}
    for task in snap.tasks.values():
        job = snap.jobs.get(task.job_uid)
        rows[task.key] = (
            task.name,
            task.namespace,
            job.name if job else "",
            job.queue if job else "",
            task.status.label,
        )
    return Initial(rows)


def build(
    scenario: str,
    before: Snapshot | Initial,
    after: Snapshot,
    results: list[CycleResult],
    *,
    explain: bool = False,
    placed_by: Mapping[str, str] | None = None,
) -> Outcome:
    """Assemble the report from the first snapshot (or what `initial` kept of it), the final view and every
    cycle's result.

    `explain`: each reason a job was not placed names the plugin (or action) that rejected it. `placed_by`: the
    shard that placed each pod (by key), with scheduler shards."""
    last = results[-1] if results else None
    tasks = _tasks(before if isinstance(before, Initial) else initial(before), after)
    if last is not None:
        moved = {op.task.key: f"moved {op.before.node} → {op.after.node}" for op in last.operations if op.moved}
        for row in tasks:
            row.moved = moved.get(f"{row.namespace}/{row.name}", "") if row.after == "Pipelined" else ""
    for row in tasks:
        row.shard = (placed_by or {}).get(row.key, "")
    queues = _queues(after, last)
    unplaced = _unplaced(after, last, explain)
    moves = [_move(i + 1, op) for i, r in enumerate(results) for op in r.operations if op.op is Op.EVICT]
    cycles = [CycleCounts(i + 1, r.binds, r.evictions, r.pipelines, r.seconds) for i, r in enumerate(results)]
    nodes = {
        n.name: {
            "idleGpus": float(n.idle()[GPU]),
            "releasingGpus": float(n.releasing()[GPU]),
            "allocatableGpus": float(n.allocatable()[GPU]),
            "usedGpus": float(after.arrays.used[n.row][GPU]),
            "sharedGpus": float(len(n.gpu_groups)),
            "reservationPods": float(len(_reservations(n))),
        }
        for n in after.nodes
    }
    problems = [f"{p.kind} {p.key}: {p.message}" for p in after.problems]
    outcome = Outcome(scenario, tasks, queues, unplaced, moves, cycles, nodes, problems, _shared_gpus(after))
    outcome.claims = _claims(after)
    return outcome


def _claims(after: Snapshot) -> dict[str, dict[str, str]]:
    """Per task with DRA claims holding devices: claim → "pool/device, …" (what each claim got)."""
    if not after.dra_objects.claims:
        return {}
    state = after.dra_state()
    out = {}
    for task in sorted(after.tasks.values(), key=lambda t: t.key):
        if task.pod.resource_claims and task.is_on_node:
            got = dict(state.devices_of(task))
            if got:
                out[task.key] = got
    return out


@dataclass(slots=True)
class GpuRow:
    """One shared physical GPU: its device index (once the binder reserved it, else ""), and who shares it."""

    node: str
    index: str
    group: str
    sharers: dict[str, float]  # task namespace/name → portion of the GPU
    used_mib: float
    total_mib: float


def _reservations(node: NodeInfo) -> dict[str, str]:
    """The node's reservation pods: GPU group → device index ("" until reported)."""
    return {
        t.pod.meta.labels.get(constants.LABEL_GPU_GROUP, ""): t.pod.meta.annotations.get(
            reservation.ANNOTATION_GPU_INDEX, ""
        )
        for t in node.tasks.values()
        if t.namespace == constants.RESERVATION_NAMESPACE
    }


def _shared_gpus(after: Snapshot) -> list[GpuRow]:
    rows = []
    for node in after.nodes:
        if not node.gpu_groups:
            continue
        indices, total = _reservations(node), node.gpu_memory_mib
        for group in node.gpu_groups.values():
            sharers = {
                node.tasks[uid].key if uid in node.tasks else uid: round(mib / total, 4)
                for uid, mib in sorted(group.sharers.items())
            }
            rows.append(
                GpuRow(
                    node.name,
                    indices.get(group.id, ""),
                    group.id,
                    dict(sorted(sharers.items())),
                    group.used_memory(),
                    total,
                )
            )
    return sorted(rows, key=lambda r: (r.node, r.index == "", r.index, r.group))


def _gpus_json(rows: list[GpuRow]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r.node, []).append(
            {"gpu": r.index, "group": r.group, "sharers": r.sharers, "usedMiB": r.used_mib, "totalMiB": r.total_mib}
        )
    return out


def _tasks(before: Initial, after: Snapshot) -> list[TaskRow]:
    rows = []
    for task in sorted(after.tasks.values(), key=lambda t: (t.namespace, t.name)):
        job = after.jobs.get(task.job_uid)
        node = after.node_by_name.get(task.node) if task.gpu.mig and task.is_on_node else None
        held = node.mig_held.get(str(task.uid), ()) if node is not None else ()
        rows.append(
            TaskRow(
                task.name,
                task.namespace,
                job.name if job else "",
                job.queue if job else "",
                before.tasks[task.key][4] if task.key in before.tasks else "-",
                task.status.label,
                task.node,
                mig=tuple(f"{profile}/{index}" for profile, index in held),
            )
        )
    seen = {t.key for t in after.tasks.values()}
    for key, (name, namespace, job_name, queue, status) in before.tasks.items():
        if key not in seen:  # deleted since (e.g. evicted and not recreated)
            rows.append(TaskRow(name, namespace, job_name, queue, status, "Deleted", ""))
    return rows


def _queues(after: Snapshot, last: CycleResult | None) -> list[QueueRow]:
    rows = []
    for name, q in sorted(after.queues.items()):
        share = last.queue_shares.get(name) if last else None
        zero = np.zeros(3)
        rows.append(
            QueueRow(
                name,
                q.parent,
                _queue_units(q.deserved),
                _queue_units(share.fair_share if share else zero),
                _queue_units(share.allocated if share else zero),
                _queue_units(share.request if share else zero),
                _queue_units(q.limit),
            )
        )
    return rows


def _unplaced(after: Snapshot, last: CycleResult | None, explain: bool) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for uid, job in sorted(after.jobs.items(), key=lambda kv: kv[1].key):
        if not job.has_pending():
            continue
        reasons = [p.message for p in after.job_problems.get(uid, [])]
        if last is not None:
            reasons += [
                f"{r.message} [rejected by {r.plugin}]" if explain else r.message for r in last.fit_errors.get(uid, [])
            ]
        if not job.is_ready() and not reasons:
            reasons.append("waiting for its pods: fewer live pods than the gang's minimum")
        out[job.key] = list(dict.fromkeys(reasons)) or ["not considered this cycle"]
    return out


def _move(cycle: int, op: Any) -> Move:
    why = op.eviction
    return Move(
        cycle,
        op.task.key,
        op.before.node,
        why.action if why else "",
        why.preemptor if why else "",
        why.message if why else "",
        op.after.node if op.after.node != op.before.node else "",
    )
