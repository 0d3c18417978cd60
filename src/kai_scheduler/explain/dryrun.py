"""Dry runs of the victim actions (reclaim, preempt, consolidation) for one pending job.

Each uses the action's own rules, in the order the action applies them (`actions.common.preemptors`: ready,
outside the preemption delay, allowed to act, victims that pass the action's filters) and the same solver,
inside a statement of the session that is always discarded: the model, the plugins' accounting and the fit
errors are as they were, and nothing is committed (the session is the explanation's own; nothing reaches a
store). The job is tried alone, on the session's state when `plan` is called: `cycle.next_cycle` calls it at
each victim action's turn, so what allocate and earlier actions did in the cycle is already there.
"""

from __future__ import annotations

from collections.abc import Callable

from kai_scheduler.actions import consolidation, preempt, reclaim
from kai_scheduler.actions.common import budget, preemptors, solver, victims
from kai_scheduler.api import constants
from kai_scheduler.api.duration import format_duration
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.explain import model
from kai_scheduler.framework.session import Session

ACTIONS = (reclaim.NAME, preempt.NAME, consolidation.NAME)
Search = Callable[[list[JobInfo]], "solver.VictimSearch | None"]


def plan(ssn: Session, job: JobInfo, action: str) -> model.VictimPlan:
    """Whether `action` could make room for `job` now, and what it would take; the session is left as it was."""
    blocked = why_not(ssn, job, action)
    if blocked:
        return model.VictimPlan(action, False, blocked)
    pool = victim_pool(ssn)
    search = _search(ssn, job, action)(pool)
    if search is None:
        return model.VictimPlan(action, False, _no_victims(ssn, job, action, pool))
    result, outcome, placements = run(ssn, job, search)
    if outcome is None:
        if result is solver.Result.EXHAUSTED:
            return model.VictimPlan(action, False, "the search budget ran out before victims were found")
        return model.VictimPlan(
            action, False, f"no choice among the {len(search.victims)} candidate victim jobs makes room"
        )
    return model.VictimPlan(action, True, "", outcome, placements)


def why_not(ssn: Session, job: JobInfo, action: str) -> str:
    """Why `action` would not search victims for `job` at all ("" when it would)."""
    if job.uid in ssn.snapshot.job_problems:
        return "the scheduler cannot consider the job (see problems)"
    if not job.has_pending():
        return "no pending pods"
    if not job.is_ready():
        return "fewer live pods than the gang's minimum"
    left = preemptors.preemption_delay_left(job, ssn.now)
    if left is not None:
        delay = job.podgroup.preemption_delay or 0.0
        wait = format_duration(round(left))
        return f"may not evict other jobs for another {wait} (preemption delay {format_duration(delay)})"
    tasks = ssn.tasks_to_allocate(job)
    if not tasks:
        return "no pods to place next"
    if action == reclaim.NAME:
        reject = ssn.can_reclaim(job, tasks)
        if reject is not None:
            return reject.message
    elif action == preempt.NAME:
        reject = ssn.job_over_capacity(job, tasks)
        if reject is not None and reject.reason == constants.REASON_NON_PREEMPTIBLE_OVER_QUOTA:
            return reject.message
    elif action == consolidation.NAME:
        cap = ssn.config.flags.max_consolidation_preemptees
        if cap == 0:
            return "off (max-consolidation-preemptees is 0)"
        if consolidation.uses_spread(ssn):
            return "off with spread placement"
        if not job.preemptible:
            return "only preemptible jobs are made room for by moving others"
        if not consolidation.may_consolidate(ssn, job):
            return "the cluster's free GPUs, counted together, are fewer than the job asks for"
    invariant = preemptors.invariant_reject(ssn, job)
    return "" if invariant is None else f"no eviction can help: {invariant.message}"


def victim_pool(ssn: Session) -> list[JobInfo]:
    """Every job a victim action may take from, in victim order (as the actions build it)."""
    return victims.victim_order(ssn, (j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)))


def _search(ssn: Session, job: JobInfo, action: str) -> Search:
    if action == reclaim.NAME:
        return lambda pool: reclaim.search(ssn, job, pool)
    if action == preempt.NAME:
        return lambda pool: preempt.search(ssn, job, pool)
    cap = ssn.config.flags.max_consolidation_preemptees
    return lambda pool: consolidation.search(job, pool, None if cap < 0 else cap + 1)


def _no_victims(ssn: Session, job: JobInfo, action: str, pool: list[JobInfo]) -> str:
    if action == preempt.NAME:
        lower = [v for v in pool if preempt.is_lower_in_queue(job, v)]
        if not lower:
            return f"no preemptible job of lower priority than {job.priority} runs in queue {job.queue}"
        return f"{_jobs(len(lower))} of lower priority in queue {job.queue}, none may be preempted now (min-runtime)"
    if action == reclaim.NAME:
        others = [v for v in pool if v.queue != job.queue]
        if not others:
            return "no preemptible job runs in another queue"
        return (
            f"{_jobs(len(others))} of other queues, none may be reclaimed: their queues do not hold more than "
            "their share, or min-runtime protects them"
        )
    return "no other preemptible job runs"


def _jobs(n: int) -> str:
    return f"{n} preemptible job{'s' if n != 1 else ''}"


def run(
    ssn: Session, job: JobInfo, search: solver.VictimSearch
) -> tuple[solver.Result, tuple[model.Victim, ...] | None, tuple[model.Placement, ...]]:
    """Solve in a statement, read what it would do, discard it. (None victims: not solved.)"""
    limits = budget.SearchBudgets.parse(ssn.config.scenario_search_budgets)
    job_budget = budget.ActionBudget(limits, search.action).next_job()
    if not job_budget.seconds:
        return solver.Result.EXHAUSTED, None, ()
    stmt = ssn.statement()
    try:
        solution = solver.solve(ssn, stmt, job, search, job_budget)
        if solution.result is not solver.Result.SOLVED or solution.outcome is None:
            return solution.result, None, ()
        outcome = solution.outcome
        origins = {str(t.uid): o.node for b in outcome.batches for t, o in zip(b.tasks, b.origins, strict=True)}
        taken = [(t, "") for t in outcome.victims] + [(t, t.placement.node) for t in outcome.moved]
        found = tuple(
            sorted(
                (
                    _victim(ssn, task, origins.get(str(task.uid), task.placement.node), moved_to)
                    for task, moved_to in taken
                ),
                key=lambda v: (v.job, v.task),
            )
        )
        return solution.result, found, placements(job)
    finally:
        stmt.discard()


def placements(job: JobInfo) -> tuple[model.Placement, ...]:
    """Where the job's pods are placed now in the session (Allocated or Pipelined in this statement)."""
    placed = (t for t in job.tasks if t.status in (PodStatus.ALLOCATED, PodStatus.PIPELINED))
    return tuple(model.Placement(t.name, t.node, t.status.label) for t in sorted(placed, key=lambda t: t.name))


def _victim(ssn: Session, task: PodInfo, node: str, moved_to: str) -> model.Victim:
    owner = ssn.snapshot.jobs.get(task.job_uid)
    return model.Victim(
        task=task.key,
        job=owner.key if owner else "",
        queue=owner.queue if owner else "",
        node=node,
        moved_to=moved_to,
    )
