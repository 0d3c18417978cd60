"""What a queue's jobs hold and wait for, on the queue axis (cpu, memory, gpu), as a snapshot was built.

The proportion plugin opens every session from these sums (§5.1). A kept snapshot model keeps them per queue and
sums again only the queues whose jobs changed; a build from nothing leaves them to the plugin, which sums the
same rows in the same order, so both give the same floats.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_status import ALLOCATED, PodStatus
from kai_scheduler.cluster.resources import QUEUE_AXIS, Vector

# Set membership is ~40x cheaper than an IntFlag `&` when every task of the cluster is tested.
ALLOCATED_STATUSES = frozenset(s for s in PodStatus if s & ALLOCATED)


@dataclass(frozen=True, slots=True)
class QueueCharge:
    """Sums over a queue's jobs (read-only: copy before changing)."""

    allocated: Vector  # tasks in allocated statuses
    non_preemptible: Vector  # the same, of non-preemptible jobs
    pending: Vector  # Pending tasks (a GPU-memory task counts its portion of the smallest GPU)


Rows = tuple[list[Vector], list[Vector], list[Vector]]  # one job's rows: held, non-preemptible, pending


def job_rows(job: JobInfo) -> Rows:
    """The rows one job adds to its queue's sums, in task order (a kept model keeps them with the job)."""
    held: list[Vector] = []
    waiting = [t.queue_request() for t in job.tasks if t.status == PodStatus.PENDING]
    for task in (*job.tasks, *job.unassigned):
        if task.status in ALLOCATED_STATUSES:
            held.append(task.queue_request())
    return held, [] if job.preemptible else held, waiting


def charge(rows: Iterable[Rows]) -> QueueCharge:
    """The sums over jobs' rows, in job order. Rows are collected and summed once: at 100k tasks a numpy `+=`
    per task costs more than all the rest."""
    held: list[Vector] = []
    held_non_preemptible: list[Vector] = []
    waiting: list[Vector] = []
    for job_held, job_non_preemptible, job_waiting in rows:
        held += job_held
        held_non_preemptible += job_non_preemptible
        waiting += job_waiting
    return QueueCharge(_sum_rows(held), _sum_rows(held_non_preemptible), _sum_rows(waiting))


def _sum_rows(rows: list[Vector]) -> Vector:
    total: Vector = np.sum(rows, axis=0) if rows else np.zeros(len(QUEUE_AXIS))
    total.flags.writeable = False
    return total
