"""The dashboard's picture of the cluster: one compact JSON document built from a scheduler snapshot.

The figures are the scheduler's own: the snapshot is the one a cycle would take, and a session opened on it
(plugins registered, no action run, nothing written) gives each queue's deserved, fair share, allocated and
requested (the proportion plugin's `QueueShare`) and the order the allocate action would take jobs in.

Units in the document: GPUs in devices, CPU in cores, memory in GiB; `-1` is "unlimited" in deserved and
limit. Lists are columnar where they are long (nodes), so 5,000 nodes and 40,000 pods stay a few MB.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kai_scheduler.api.fields import parse_time
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_status import ON_NODE, within
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins import registry
from kai_scheduler.sim.occupancy import Fragmentation

GIB = float(1 << 30)
# Queue-axis vectors are (cpu millicores, memory bytes, gpu); the document shows (gpu, cpu cores, memory GiB).
_QUEUE_ORDER = (2, 0, 1)
_QUEUE_SCALE = (1.0, 1000.0, GIB)
IDLE, NO_QUEUE = -1, -2  # GPU cell codes besides a queue's index
DECISION_REASONS = frozenset({"Scheduled", "Evict", "Pipelined"})


@dataclass(frozen=True, slots=True)
class Decision:
    """One scheduler event worth showing: a bind, an eviction (with why), a pipelined claim."""

    time: float
    reason: str
    object: str
    message: str


def build(
    snap: Snapshot,
    config: SchedulerConfig,
    *,
    decisions: Sequence[Decision] = (),
    source: str = "",
    shares: Mapping[str, QueueShare] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The whole document for `snap`. Opens (and releases) a session on it (for the job order, and the
    shares unless given). `notes`: what the page should say it could not show."""
    ssn = Session(snap, config, [registry.build(p.name, p.arguments) for p in config.plugins()])
    ssn.open()
    try:
        if shares is None:
            shares = {name: s for name in snap.queues if (s := ssn.queue_share(name)) is not None}
        queue_names = sorted(snap.queues)
        queue_index = {name: i for i, name in enumerate(queue_names)}
        return {
            "source": source,
            "now": snap.now,
            "queues": [_queue(snap, name, shares.get(name)) for name in queue_names],
            "jobs": _jobs(snap, ssn, queue_index),
            "nodes": _nodes(snap, queue_index),
            "decisions": [[d.time, d.reason, d.object, d.message] for d in decisions],
            "notes": list(notes),
        }
    finally:
        ssn.release()


def _triple(vector: Any, *, unlimited: bool = False) -> list[float]:
    out = []
    for axis, scale in zip(_QUEUE_ORDER, _QUEUE_SCALE, strict=True):
        value = float(vector[axis])
        out.append(-1.0 if unlimited and value == -1 else round(value / scale, 4))
    return out


def _queue(snap: Snapshot, name: str, share: QueueShare | None) -> dict[str, Any]:
    q = snap.queues[name]
    zero = np.zeros(3)
    return {
        "name": name,
        "display": q.display_name,
        "parent": q.parent,
        "priority": q.priority,
        "deserved": _triple(q.deserved, unlimited=True),
        "limit": _triple(q.limit, unlimited=True),
        "fair": _triple(share.fair_share if share else zero),
        "allocated": _triple(share.allocated if share else zero),
        "requested": _triple(share.request if share else zero),
    }


def _jobs(snap: Snapshot, ssn: Session, queue_index: Mapping[str, int]) -> list[list[Any]]:
    """Per job: [queue, namespace, name, state, position, pods running, pods, GPUs, waited s, reason].

    Pending jobs come first in each queue, in the session's job order (position 1 is the next one the
    allocate action takes from that queue); running jobs follow by name."""
    by_queue: dict[str, list[JobInfo]] = {}
    for job in snap.jobs.values():
        by_queue.setdefault(job.queue, []).append(job)
    key = functools.cmp_to_key(ssn.compare_jobs)
    rows: list[list[Any]] = []
    for queue in sorted(by_queue):
        jobs = by_queue[queue]
        pending = sorted((j for j in jobs if j.has_pending()), key=key)
        running = sorted((j for j in jobs if not j.has_pending()), key=lambda j: (j.namespace, j.name))
        for position, job in enumerate(pending, start=1):
            rows.append(_job_row(snap, job, queue_index, position))
        rows.extend(_job_row(snap, job, queue_index, 0) for job in running)
    return rows


def _job_row(snap: Snapshot, job: JobInfo, queue_index: Mapping[str, int], position: int) -> list[Any]:
    on_node = sum(1 for t in job.tasks if within(t.status, ON_NODE))
    gpus = sum(t.gpus_accepted if within(t.status, ON_NODE) else _gpus(t.gpu) for t in job.tasks)
    state = "pending" if position else ("running" if on_node else "done")
    waited = max(0.0, snap.now - job.creation) if position else 0.0
    return [
        queue_index.get(job.queue, -1),
        job.namespace,
        job.name,
        state,
        position,
        on_node,
        len(job.tasks),
        round(gpus, 3),
        round(waited, 1),
        reason(job, snap) if position else "",
    ]


def _gpus(gpu: Any) -> float:
    if gpu.whole:
        return float(gpu.whole)
    return float(gpu.num_devices) * (gpu.fraction or 1.0) if gpu.is_shared else 0.0


def reason(job: JobInfo, snap: Snapshot) -> str:
    """Why a pending job waits, as its PodGroup says (the scheduler's condition text); the snapshot's own
    problem with the job when it has one; empty when the scheduler has said nothing yet."""
    problems = snap.job_problems.get(job.uid)
    if problems:
        return "; ".join(p.message for p in problems)
    texts = []
    for condition in job.podgroup.scheduling_conditions:
        messages = "; ".join(message for _, message in condition.reasons)
        texts.append(f"{condition.node_pool}: {messages}" if condition.node_pool else messages)
    return " | ".join(texts)


def _nodes(snap: Snapshot, queue_index: Mapping[str, int]) -> dict[str, Any]:
    """Columnar: name, pool and domain (indices into `pools`/`domains`), GPU cells, flags.

    A cell is IDLE, a queue's index (a whole GPU), or a list [queue, fraction, …] for a shared GPU held by a
    reservation pod. `stranded` marks nodes whose idle GPUs no pending job could use (by resources and node
    constraints)."""
    pool_key = snap.params.node_pool_label_key
    levels = _topology_levels(snap)
    pools: dict[str, int] = {}
    domains: dict[str, int] = {}
    stranded = _stranded(snap)
    names: list[str] = []
    pool_col: list[int] = []
    domain_col: list[int] = []
    cells: list[list[Any]] = []
    flags: list[int] = []
    for node in snap.nodes:
        labels = node.labels
        pool = labels.get(pool_key, "") if pool_key else ""
        domain = "/".join(labels.get(label, "?") for label in levels)
        names.append(node.name)
        pool_col.append(pools.setdefault(pool, len(pools)))
        domain_col.append(domains.setdefault(domain, len(domains)))
        cells.append(_cells(snap, node, queue_index))
        flags.append((1 if bool(snap.arrays.schedulable[node.row]) else 0) | (2 if stranded[node.row] else 0))
    return {
        "pools": list(pools),
        "domains": list(domains),
        "levels": levels,
        "name": names,
        "pool": pool_col,
        "domain": domain_col,
        "cells": cells,
        "flags": flags,  # 1: schedulable, 2: idle GPUs no pending job can use
    }


def _topology_levels(snap: Snapshot) -> list[str]:
    """The node labels of the first topology's levels, widest first, without the host level."""
    for _, topology in sorted(snap.topologies.items()):
        return [lv.node_label for lv in topology.levels if lv.node_label != "kubernetes.io/hostname"]
    return []


def _cells(snap: Snapshot, node: NodeInfo, queue_index: Mapping[str, int]) -> list[Any]:
    count = round(float(snap.arrays.allocatable[node.row, GPU]))
    if count <= 0:
        return []
    whole: list[int] = []
    shared_owner: dict[str, int] = {}
    for task in sorted(node.tasks.values(), key=lambda t: t.key):
        if not within(task.status, ON_NODE):
            continue
        job = snap.jobs.get(task.job_uid)
        q = queue_index.get(job.queue, NO_QUEUE) if job is not None else NO_QUEUE
        if task.gpu.whole:
            whole.extend([q] * task.gpu.whole)
        elif task.gpu.is_shared:
            shared_owner[str(task.uid)] = q
    out: list[Any] = list(whole)
    memory = node.gpu_memory_mib
    for _, group in sorted(node.gpu_groups.items()):
        if not group.sharers:
            continue
        cell: list[Any] = []
        for uid, mib in sorted(group.sharers.items()):
            cell.extend([shared_owner.get(uid, NO_QUEUE), round(min(1.0, mib / memory), 3) if memory else 1.0])
        out.append(cell)
    out = out[:count]
    out.extend([IDLE] * (count - len(out)))
    return out


def _stranded(snap: Snapshot) -> Any:
    """Per node row: it has an idle GPU, is schedulable, and no pending GPU task fits there. With no pending GPU
    task nothing is stranded (idle is idle), as the simulator's `idle_unusable_gpus` counts it."""
    arrays = snap.arrays
    idle_gpu = arrays.idle[:, GPU] >= 1.0 - tolerance.RESOURCE
    if not idle_gpu.any() or not any(t.is_pending and t.gpu.is_gpu for t in snap.tasks.values()):
        return np.zeros_like(idle_gpu)
    usable = Fragmentation().usable_nodes(snap)
    return idle_gpu & arrays.schedulable & ~usable


def decision(event: Mapping[str, Any], scheduler_name: str) -> Decision | None:
    """The decision an event records (Scheduled, Evict, Pipelined from this scheduler), else None."""
    if event.get("reason") not in DECISION_REASONS:
        return None
    source = (event.get("source") or {}).get("component", "")
    if source and source != scheduler_name:
        return None
    ref = event.get("involvedObject") or {}
    what = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
    return Decision(_event_time(event), str(event["reason"]), what, str(event.get("message", "")))


def _event_time(event: Mapping[str, Any]) -> float:
    meta = event.get("metadata") or {}
    for text in (event.get("lastTimestamp"), event.get("eventTime"), meta.get("creationTimestamp")):
        if isinstance(text, str) and text:
            try:
                return parse_time(text)
            except ValueError:
                continue
    return 0.0
