"""Which pending jobs may make room for themselves by evicting others (§3.4 filters, §1.2 preemptionDelay, §7.5).

Shared by reclaim, preempt and consolidation: a candidate has pending tasks, is ready (enough live pods for its
minimum), belongs to a usable leaf queue, and is outside its preemption delay. A job inside the delay is
reported with `PreemptionDelayNotElapsed` (plain allocation is never delayed, and the delay does not protect
the job as a victim). A job whose task fails a victim-invariant pre-predicate (nothing an eviction could fix)
is skipped by the victim actions.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.duration import format_duration
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session


def candidates(ssn: Session, action: str) -> list[JobInfo]:
    """Pending, ready jobs of usable queues that may trigger evictions now (delayed ones get a fit error)."""
    out = []
    for job in ssn.snapshot.jobs.values():
        if job.uid in ssn.snapshot.job_problems or not job.has_pending() or not job.is_ready():
            continue
        wait = preemption_delay_left(job, ssn.now)
        if wait is not None:
            delay = job.podgroup.preemption_delay or 0.0
            ssn.record_fit_error(job, points.Reject(
                action, constants.REASON_PREEMPTION_DELAY_NOT_ELAPSED,
                f"may not evict other jobs for another {format_duration(round(wait))} "
                f"(preemption delay {format_duration(delay)})"))
            continue
        out.append(job)
    return out


def preemption_delay_left(job: JobInfo, now: float) -> float | None:
    """Seconds until `job` may trigger evictions: max(creation, last eviction) + delay − now; None when it may."""
    delay = job.podgroup.preemption_delay
    if not delay or delay <= 0:
        return None
    since = max(job.creation, job.last_eviction or 0.0)
    left = since + delay - now
    return left if left > 0 else None


def invariant_reject(ssn: Session, job: JobInfo) -> points.Reject | None:
    """The first of the job's tasks to allocate that no eviction can help (victim-invariant pre-predicates)."""
    for task in ssn.tasks_to_allocate(job):
        if reject := ssn.victim_invariant_pre_predicate(task, job):
            return reject
    return None
