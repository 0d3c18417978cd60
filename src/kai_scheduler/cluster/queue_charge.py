"""What a queue's jobs hold and wait for, on the queue axis (cpu, memory, gpu), as a snapshot was built.

The proportion plugin opens every session from these sums (§5.1), which every snapshot hands it
(`Snapshot.queue_charges`). The carried snapshot model keeps them per queue and sums again only the queues whose
jobs changed; a build from nothing sums them all (`queue_charges`): the same rows in the same order, so both give
the same floats.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import QueueVectors
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


def job_rows(job: JobInfo, shared: QueueVectors | None = None) -> Rows:
    """The rows one job adds to its queue's sums, in task order (the carried model keeps them with the job);
    `shared`: the tasks' queue vectors are shared as `PodInfo.queue_request` says."""
    held: list[Vector] = []
    waiting = [t.queue_request(shared) for t in job.tasks if t.status == PodStatus.PENDING]
    for task in (*job.tasks, *job.unassigned):
        if task.status in ALLOCATED_STATUSES:
            held.append(task.queue_request(shared))
    return held, [] if job.preemptible else held, waiting


def queue_charges(jobs: Iterable[JobInfo]) -> dict[str, QueueCharge]:
    """Per queue, `charge` of its jobs' rows, in the order of `jobs` (the tasks' queue vectors shared)."""
    by_queue: dict[str, list[Rows]] = {}
    shared: QueueVectors = {}
    for job in jobs:
        by_queue.setdefault(job.queue, []).append(job_rows(job, shared))
    return {queue: charge(rows) for queue, rows in by_queue.items()}


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


class PrefixSums:
    """One queue's sums with their value after each of its jobs, so that a change from the job at index `i`
    on sums again only the rows from there: the same sequential fold over the same rows, in the same order, as
    `charge`, so the same floats bit for bit (numpy adds the rows of a stacked array along axis 0 one after the
    other, as `np.cumsum` does). The carried snapshot model holds one per queue; a trace's arrivals change the last
    jobs, so a cycle costs the rows of those jobs, not of the queue's thousands."""

    __slots__ = ("_after", "_jobs")

    def __init__(self) -> None:
        # Row j: the three sums (held, non-preemptible, pending) over the first j jobs, side by side.
        self._after: npt.NDArray[np.float64] = np.zeros((16, 3 * len(QUEUE_AXIS)))
        self._jobs = 0

    def update(self, start: int, rows: Iterable[Rows]) -> QueueCharge:
        """The sums after replacing the rows of the jobs from index `start` on with `rows` (every job from
        there to the queue's end, in job order)."""
        start = min(start, self._jobs)
        width = len(QUEUE_AXIS)
        flat: tuple[list[Vector], list[Vector], list[Vector]] = ([], [], [])
        ends: tuple[list[int], list[int], list[int]] = ([], [], [])
        for job in rows:
            for part in range(3):
                flat[part].extend(job[part])
                ends[part].append(len(flat[part]))
        jobs = start + len(ends[0])
        if jobs + 1 > len(self._after):
            grown = np.zeros((max(2 * len(self._after), jobs + 1), 3 * width))
            grown[: start + 1] = self._after[: start + 1]
            self._after = grown
        for part in range(3):
            columns = slice(part * width, (part + 1) * width)
            if not flat[part]:
                self._after[start + 1 : jobs + 1, columns] = self._after[start, columns]
            elif len(flat[part]) <= _FOLDED_ROWS:
                folded = _folded(self._after[start, columns], flat[part], ends[part])
                self._after[start + 1 : jobs + 1, columns] = folded
            else:
                running = np.cumsum(np.array([self._after[start, columns], *flat[part]]), axis=0)
                self._after[start + 1 : jobs + 1, columns] = running[ends[part]]
        self._jobs = jobs
        last = self._after[jobs]
        return QueueCharge(*(_frozen(last[part * width : (part + 1) * width]) for part in range(3)))


# Up to this many rows a queue's sums are folded in Python floats: the same additions, in the same order, as
# `np.cumsum` makes (an IEEE add of two doubles is one rounding either way), without its array calls, which cost
# more than the adding for the few rows a cycle's changed jobs have (a cycle of 250 new one-pod jobs sums ~440
# queues again). Past it, numpy's loop is the cheaper.
_FOLDED_ROWS = 64


def _folded(first: Vector, rows: list[Vector], ends: list[int]) -> list[list[float]]:
    """The running sums from `first` over `rows`, as they stand after the first `end` rows for each of `ends`."""
    running = first.tolist()
    out: list[list[float]] = []
    taken = 0
    for end in ends:
        for row in rows[taken:end]:
            running = [a + b for a, b in zip(running, row.tolist(), strict=True)]
        taken = end
        out.append(running)
    return out


def _frozen(row: Vector) -> Vector:
    out = row.copy()
    out.flags.writeable = False
    return out
