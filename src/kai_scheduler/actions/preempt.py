"""Action preempt: inside one queue, a job of higher priority displaces jobs of lower priority
(KAI `actions/preempt/preempt.go`, BEHAVIOR.md §3.10, §5.4).

1. Order the pending, ready jobs outside their preemption delay through the queue tree.
2. For each popped job: a non-preemptible job must fit in its queues' deserved quota
   (`NonPreemptibleOverQuota` up front); nothing an eviction cannot fix may block it; it must be easier than a
   failed job of the same signature in its queue.
3. Search victims among preemptible jobs of the same queue with strictly lower priority that pass
   PREEMPT_VICTIM_FILTER (minruntime), validated by PREEMPT_VALIDATOR, within the search budgets. Queue
   priority plays no role; capacity (limits) still applies while the job is placed in the simulation.
4. Commit on success; remember the failure otherwise. A job given no search time, or out of it, ends the
   action for this cycle (`preemptors.run`).
"""

from __future__ import annotations

from kai_scheduler.actions.common import budget, preemptors, solver
from kai_scheduler.api import constants
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction

NAME = "preempt"


class Preempt:
    name = NAME

    def __init__(self, timer: budget.Timer | None = None) -> None:
        self.timer = timer

    def execute(self, ssn: Session) -> None:
        preemptors.run_per_queue(
            ssn, NAME, self.timer, may_act=may_preempt, search_for=lambda job, pool: search(ssn, job, pool)
        )


def may_preempt(ssn: Session, job: JobInfo) -> bool:
    """Not a non-preemptible job over its deserved quota; no victim-invariant rejection."""
    tasks = ssn.tasks_to_allocate(job)
    if not tasks:
        return False
    reject = ssn.job_over_capacity(job, tasks)
    if reject is not None and reject.reason == constants.REASON_NON_PREEMPTIBLE_OVER_QUOTA:
        return False
    return preemptors.invariant_reject(ssn, job) is None


def is_lower_in_queue(preemptor: JobInfo, victim: JobInfo) -> bool:
    """Same queue, strictly lower priority, another job."""
    return victim.queue == preemptor.queue and victim.priority < preemptor.priority and victim.uid != preemptor.uid


def search(ssn: Session, job: JobInfo, pool: list[JobInfo]) -> solver.VictimSearch | None:
    """Victims: same queue, strictly lower priority, passing PREEMPT_VICTIM_FILTER; None if there are none."""
    accepts = ssn.victim_filter(points.PREEMPT_VICTIM_FILTER)
    eligible = [v for v in pool if is_lower_in_queue(job, v) and accepts(job, v)]
    return preemptors.validated_search(
        ssn, NAME, eligible, points.PREEMPT_VALIDATOR, lambda victim: _eviction(job, victim)
    )


def _eviction(preemptor: JobInfo, victim: JobInfo) -> Eviction:
    return Eviction(
        NAME,
        preemptor.key,
        f"preempted by {preemptor.key} (priority {preemptor.priority}) in queue {preemptor.queue}; "
        f"this job's priority is {victim.priority}",
    )
