"""Which pending jobs may make room for themselves by evicting others (§3.4 filters, §1.2 preemptionDelay, §7.5).

Shared by reclaim, preempt and consolidation: a candidate has pending tasks, is ready (enough live pods for its
minimum), belongs to a usable leaf queue, and is outside its preemption delay. A job inside the delay is
reported with `PreemptionDelayNotElapsed` (plain allocation is never delayed, and the delay does not protect
the job as a victim). A job whose task fails a victim-invariant pre-predicate (nothing an eviction could fix)
is skipped by the victim actions. `run` is the loop all three share: jobs in queue order within the search
budgets, skipped when no easier than a failed job of the same signature, solved and committed in a statement.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kai_scheduler.actions.common import budget, signatures, solver, victims
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.api import constants
from kai_scheduler.api.duration import format_duration
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework import search_stats as stats
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction

log = logging.getLogger(__name__)


def candidates(ssn: Session, action: str) -> list[JobInfo]:
    """Pending, ready jobs of usable queues that may trigger evictions now (delayed ones get a fit error)."""
    out = []
    for job in ssn.snapshot.waiting:
        if job.uid in ssn.snapshot.job_problems or not job.has_pending() or not job.is_ready():
            continue
        wait = preemption_delay_left(job, ssn.now)
        if wait is not None:
            delay = job.podgroup.preemption_delay or 0.0
            ssn.record_fit_error(
                job,
                points.Reject(
                    action,
                    constants.REASON_PREEMPTION_DELAY_NOT_ELAPSED,
                    f"may not evict other jobs for another {format_duration(round(wait))} "
                    f"(preemption delay {format_duration(delay)})",
                ),
            )
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


MayAct = Callable[[Session, JobInfo], bool]
# How a job's search ended, as KAI's `scenario_search_jobs_total` labels it: a search that ran out of scenarios
# (or had no victim to try) has exhausted its generators.
JOB_RESULT = {
    solver.Result.SOLVED: stats.SOLVED,
    solver.Result.UNSOLVED: stats.GENERATORS_EXHAUSTED,
    solver.Result.EXHAUSTED: stats.DEADLINE_EXHAUSTED,
    solver.Result.NOT_ATTEMPTED: stats.NOT_ATTEMPTED,
}
SearchFor = Callable[[JobInfo, list[JobInfo]], "solver.VictimSearch | None"]


def run(
    ssn: Session,
    action: str,
    timer: budget.Timer | None,
    pending: Iterable[JobInfo],
    *,
    may_act: MayAct,
    search_for: SearchFor,
    signature_scope: Callable[[JobInfo], str],
) -> None:
    """The victim actions' loop (KAI `reclaim.go` / `preempt.go` / `consolidation.go` share it).

    For each job in queue order that `may_act`: skip it if no easier than a failed job in
    `signature_scope(job)`, take a job budget (`budget.ActionBudget.next_job`), search the victims
    `search_for(job, pool)` offers, commit on success (the pool is then re-ordered without the victims
    taken), remember the failure otherwise. As KAI's actions, the action ends for this cycle when a job gets
    no time at all (`not_attempted`) or its search runs out of time (`deadline_exhausted`); a job that ends
    otherwise lets the next one try, even past the action's deadline when `minJobSearchDuration` grants it
    time. Each job searched for is counted in the session's `search` statistics with how its search ended, as
    KAI's solver counts it (`JOB_RESULT`)."""
    limits = budget.SearchBudgets.parse(ssn.config.scenario_search_budgets)
    action_budget = budget.ActionBudget(limits, action, timer)
    jobs = JobOrderByQueues(ssn, pending, depth=ssn.config.queue_depth_per_action.get(action))
    failed = signatures.FailedJobs(ssn, enabled=ssn.config.flags.use_scheduling_signatures)
    pool: list[JobInfo] | None = None  # ordered on first use: a cycle with no preemptor never sorts them
    stale = False  # a solution moved some of the pool's jobs: re-ordered when the next job searches
    debug = log.isEnabledFor(logging.DEBUG)  # decision logs cost nothing when off
    while (job := jobs.pop()) is not None:
        scope = signature_scope(job)
        if not may_act(ssn, job):
            if debug:
                log.debug("job skipped: may not act", extra={"action": action, "job": job.key})
            continue
        if failed.should_skip(scope, job):
            if debug:
                log.debug(
                    "job skipped: no easier than a failed job of its signature",
                    extra={"action": action, "job": job.key, "scope": scope},
                )
            continue
        ssn.search.tried[action] += 1
        job_budget = action_budget.next_job()
        if not job_budget.seconds:
            ssn.search.job(action, stats.NOT_ATTEMPTED, reduced_budget=False)
            if debug:
                log.debug("action ends: no search time left for the job", extra={"action": action, "job": job.key})
            return
        if pool is None:
            pool = _victim_pool(ssn, ssn.snapshot.jobs.values())
        elif stale:
            pool, stale = _victim_pool(ssn, pool), False
        search = search_for(job, pool)
        result = solver.Result.UNSOLVED if search is None else _solve(ssn, job, search, job_budget)
        reduced = job_budget.reduced and result is not solver.Result.NOT_ATTEMPTED
        ssn.search.job(action, JOB_RESULT[result], reduced_budget=reduced)
        if debug:
            log.debug(
                "victim search done",
                extra={"action": action, "job": job.key, "result": result.name, "searched": search is not None},
            )
        if result is solver.Result.EXHAUSTED:
            if action_budget.exhausted():
                ssn.search.budget_exhausted[action] += 1
            if debug:
                log.debug("action ends: the job's search ran out of time", extra={"action": action, "job": job.key})
            return
        if result is solver.Result.SOLVED:
            stale = True
        else:
            failed.remember(scope, job)


def run_per_queue(
    ssn: Session, action: str, timer: budget.Timer | None, *, may_act: MayAct, search_for: SearchFor
) -> None:
    """Reclaim's and preempt's loop: `run` over every candidate, a failed job remembered for its own queue."""
    run(
        ssn,
        action,
        timer,
        candidates(ssn, action),
        may_act=may_act,
        search_for=search_for,
        signature_scope=lambda job: job.queue,
    )


def validated_search(
    ssn: Session,
    action: str,
    eligible: list[JobInfo],
    validator: points.ExtensionPoint[points.ScenarioValidator],
    eviction: Callable[[JobInfo], Eviction],
) -> solver.VictimSearch | None:
    """A search over the `eligible` victims whose scenarios the session's `validator` point checks (reclaim's and
    preempt's); None when there is no victim."""
    if not eligible:
        return None
    return solver.VictimSearch(
        action,
        eligible,
        eviction,
        lambda preemptor, tasks, outcome: ssn.validate(validator, preemptor, tasks, outcome),
    )


def _victim_pool(ssn: Session, jobs: Iterable[JobInfo]) -> list[JobInfo]:
    return victims.victim_order(ssn, (j for j in jobs if victims.can_be_victim(j)))


def _solve(ssn: Session, job: JobInfo, search: solver.VictimSearch, job_budget: budget.JobBudget) -> solver.Result:
    """Search and, on success, commit the victims for `job` in one statement."""
    stmt = ssn.statement()
    solution = solver.solve(ssn, stmt, job, search, job_budget)
    if solution.result is not solver.Result.SOLVED:
        stmt.discard()
        return solution.result
    stmt.commit()
    ssn.clear_fit_errors(job)
    return solution.result
