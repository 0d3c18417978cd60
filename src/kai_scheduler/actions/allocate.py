"""Action allocate (KAI `actions/allocate/allocate.go`, §3.6).

1. Order the pending, ready jobs through the queue tree, as KAI: a job an earlier cycle pipelined competes
   with everyone. With `--pipelined-claims` (off by default; not KAI's, see docs/configuration.md) the jobs
   whose pods name a `nominatedNodeName` (written by the commit for a pipelined pod) go first, so the
   resources released for them are not handed to others; steps 3 and 4 speak of that claims pass.
2. For each popped job, open a statement and place its next tasks (gang minimum, or one elastic task).
3. Commit on success, and put the job back if it still has pending tasks so its next pod competes again,
   pipelined or not (KAI `HasTasksToAllocate`); discard on failure, keeping the fit errors for the job's
   status. Among the claimed jobs, a job that got pipelined is put back while a pending task still carries a
   claim: every claim is served (placed again, or found not to fit and cleared at commit).
4. Among the claimed jobs, a job whose next step is one task (elastic, or one short of its minimum) places
   its claimed pods one at a time, in task order, and only those (a minimum of several is placed whole, KAI):
   an unclaimed sibling does not take the resources released for a claimed one, and a claim that does not
   fit does not stop the job's other claims from being tried. A claimed job left with only unclaimed pending
   pods, neither pipelined nor failed, competes with the other jobs for them.
"""

from __future__ import annotations

import logging

from kai_scheduler.actions.common import allocation
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session

NAME = "allocate"
log = logging.getLogger(__name__)


class Allocate:
    name = NAME

    def execute(self, ssn: Session) -> None:
        ready = candidates(ssn)
        first = ssn.config.flags.pipelined_claims
        claimed: list[JobInfo] = []
        others: list[JobInfo] = []
        for job in ready:  # split before the claimed are placed: placing them changes what they claim
            (claimed if first and _claims(job) else others).append(job)
        depth = ssn.config.queue_depth_per_action.get(NAME)
        others += self._allocate(ssn, JobOrderByQueues(ssn, claimed, depth=depth), claims=True)
        self._allocate(ssn, JobOrderByQueues(ssn, others, depth=depth), claims=False)

    def _allocate(self, ssn: Session, jobs: JobOrderByQueues, *, claims: bool) -> list[JobInfo]:
        """Place the jobs; in the claims pass, return the claimed jobs left with only unclaimed pending tasks
        that were neither pipelined nor failed there, for the pass of the other jobs."""
        missed: set[str] = set()  # claimed tasks that did not fit in this pass
        stopped: set[str] = set()  # claimed jobs pipelined or failed in this pass
        handed: list[JobInfo] = []
        while (job := jobs.pop()) is not None:
            had_allocated = job.active_allocated() > 0
            claim = None
            if claims and len(following := ssn.tasks_to_allocate(job)) == 1:
                # One task next (elastic, or the minimum one short): the job's next claim instead, and only claims.
                subgroup = None if job.is_gang_satisfied() else following[0].subgroup
                if (claim := _next_claim(ssn, job, missed, subgroup)) is None:
                    if job.uid not in stopped:  # its claims are served: its unclaimed pods compete with the others
                        handed.append(job)
                    continue
            stmt = ssn.statement()
            outcome = allocation.allocate_job(ssn, stmt, job, tasks=None if claim is None else [claim])
            if not outcome.placed:
                stmt.discard()
                _explain(ssn, job)
                if claims:  # the why of the `claim cleared` lines the commit writes unless another action places it
                    log.info(
                        "claimed job not placed again",
                        extra={
                            "job": job.key,
                            "pod": None if claim is None else claim.key,
                            "reasons": [r.message for r in ssn.job_fit_errors.get(job.uid, [])],
                        },
                    )
                    stopped.add(job.uid)
                    if claim is not None:  # a claim that does not fit does not stop the job's other claims
                        missed.add(claim.uid)
                        if _next_claim(ssn, job, missed) is not None:
                            jobs.push(job)
                elif log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "job not placed",
                        extra={
                            "job": job.key,
                            "reasons": [f"{r.plugin}: {r.message}" for r in ssn.job_fit_errors.get(job.uid, [])],
                        },
                    )
                continue
            stmt.commit()
            if not (claims and any(t.uid in missed for t in job.pending_tasks())):
                ssn.clear_fit_errors(job)  # kept for a claim that did not fit: the why of its `claim cleared` line
            if not had_allocated and not outcome.pipelined:
                ssn.record_started(job)
            if claims and outcome.pipelined:
                stopped.add(job.uid)
            if job.has_pending() and (not claims or not outcome.pipelined or _next_claim(ssn, job, missed)):
                # Put back while it has pending tasks, pipelined or not (KAI): its next pod may land on other
                # resources being released, or the reclaim that follows evicts again for it. In the claims pass
                # a pipelined job comes back only for its claims; its other pods compete in the next pass.
                jobs.push(job)
        return handed


def candidates(ssn: Session) -> list[JobInfo]:
    """Jobs with pending tasks that are ready (enough live pods for their minimum) and have a usable queue."""
    return [
        job
        for job in ssn.snapshot.waiting
        if job.uid not in ssn.snapshot.job_problems and job.has_pending() and job.is_ready()
    ]


def _claims(job: JobInfo) -> bool:
    """Whether an earlier cycle pipelined this job: its pending pods carry the node as nominatedNodeName."""
    return any(task.pod.nominated_node_name for task in job.pending_tasks())


def _next_claim(ssn: Session, job: JobInfo, missed: set[str], subgroup: str | None = None) -> PodInfo | None:
    """The job's first pending task in task order (of `subgroup`, if given) that claims a node and has not
    failed to fit this pass."""
    claims = [
        t
        for t in job.pending_tasks()
        if t.pod.nominated_node_name and t.uid not in missed and (subgroup is None or t.subgroup == subgroup)
    ]
    return min(claims, key=ssn.task_key, default=None)


def _explain(ssn: Session, job: JobInfo) -> None:
    """Add the plain-words gang summary in front of the task-level reasons."""
    summary = allocation.gang_summary(ssn, job)
    if summary:
        ssn.record_fit_error(job, points.Reject("allocate", "Unschedulable", summary), first=True)
