"""Action reclaim: a queue below its fair share takes resources back from queues above theirs
(KAI `actions/reclaim/reclaim.go`, BEHAVIOR.md §3.9, §5.3).

1. Order the pending, ready jobs outside their preemption delay through the queue tree.
2. For each popped job: it must be allowed to reclaim (CAN_RECLAIM: its queue stays within its fair share),
   nothing an eviction cannot fix may block it, and it must be easier than a job of the same signature that
   already failed in its queue.
3. Search victims among preemptible jobs of other queues that pass RECLAIM_VICTIM_FILTER, validated by
   RECLAIM_VALIDATOR (proportion's §5.3 rules, minruntime), within the search budgets.
4. Commit the statement on success (victims evicted, moved victims pipelined elsewhere, the job pipelined);
   remember the failure otherwise. A job given no search time, or out of it, ends the action for this cycle
   (`preemptors.run`).
"""

from __future__ import annotations

from kai_scheduler.actions.common import budget, preemptors, solver
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction

NAME = "reclaim"


class Reclaim:
    name = NAME

    def __init__(self, timer: budget.Timer | None = None) -> None:
        self.timer = timer

    def execute(self, ssn: Session) -> None:
        preemptors.run_per_queue(
            ssn, NAME, self.timer, may_act=may_reclaim, search_for=lambda job, pool: search(ssn, job, pool)
        )


def may_reclaim(ssn: Session, job: JobInfo) -> bool:
    """CAN_RECLAIM holds and no task of the job fails a victim-invariant pre-predicate."""
    tasks = ssn.tasks_to_allocate(job)
    if not tasks or ssn.can_reclaim(job, tasks) is not None:
        return False
    return preemptors.invariant_reject(ssn, job) is None


def search(ssn: Session, job: JobInfo, pool: list[JobInfo]) -> solver.VictimSearch | None:
    """Victims: other queues' jobs passing RECLAIM_VICTIM_FILTER; None if there are none."""
    accepts = ssn.victim_filter(points.RECLAIM_VICTIM_FILTER)
    eligible = [v for v in pool if v.queue != job.queue and accepts(job, v)]
    records: dict[tuple[str, bool], Eviction] = {}
    return preemptors.validated_search(
        ssn, NAME, eligible, points.RECLAIM_VALIDATOR, lambda victim: _eviction(ssn, job, victim, records)
    )


def _eviction(ssn: Session, reclaimer: JobInfo, victim: JobInfo, records: dict[tuple[str, bool], Eviction]) -> Eviction:
    """The record of a victim's eviction; one per (victim queue, deserved or fair) for a reclaimer's search,
    which asks it of every victim it pops."""
    share = ssn.queue_share(reclaimer.queue)
    within_deserved = share is not None and _within_deserved(share.allocated.tolist(), share.deserved.tolist())
    record = records.get((victim.queue, within_deserved))
    if record is None:
        what = "deserved" if within_deserved else "fair"
        record = records[(victim.queue, within_deserved)] = Eviction(
            NAME,
            reclaimer.key,
            f"reclaimed by {reclaimer.key} to restore {reclaimer.queue}'s {what} share (from queue {victim.queue})",
        )
    return record


def _within_deserved(allocated: list[float], deserved: list[float]) -> bool:
    """Every resource within its deserved quota (-1: unlimited); in floats: each victim popped asks it."""
    for held, quota in zip(allocated, deserved, strict=True):  # noqa: SIM110
        if not (held <= quota or quota == -1):
            return False
    return True
