"""For a job with pods running: which pending jobs could take them (preempt, reclaim, consolidation), and
what protects it (non-preemptibility, min-runtime).

A pending job threatens this one through an action when the action would consider it (ready, outside its
preemption delay, allowed to act: `dryrun.why_not`) and the action's victim filters accept this job as its
victim (same queue and lower priority for preempt; another queue, over its share and not protected for
reclaim; any preemptible job for consolidation, which only moves pods). `at_turn` is asked at each victim
action's turn in the next cycle (`cycle.next_cycle`), so jobs allocate places first threaten nothing; for the
first few threats, in allocate's order, the action is dry-run for the pending job to see whether it would
really choose this job's pods (a search takes the cheapest victims first, so an eligible job is not always
chosen).
"""

from __future__ import annotations

from kai_scheduler.actions import allocate, consolidation, preempt, reclaim
from kai_scheduler.actions.common import victims
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.explain import dryrun, model
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.minruntime import MinRuntime, is_elastic


def at_turn(ssn: Session, job: JobInfo, action: str, *, dry_runs: int) -> list[model.Threat]:
    """Every pending job that `action` could let take pods of `job` now, in allocate's order; the first
    `dry_runs` of them dry-run (the rest with `would_evict` None)."""
    if not victims.can_be_victim(job):
        return []
    pending = JobOrderByQueues(ssn, allocate.candidates(ssn))
    out: list[model.Threat] = []
    while (other := pending.pop()) is not None:
        if other.uid == job.uid or not _eligible(ssn, other, job, action) or dryrun.why_not(ssn, other, action):
            continue
        would, pods = (None, 0)
        if len(out) < dry_runs:
            would, pods = _would_take(ssn, other, job, action)
        out.append(model.Threat(action, other.key, other.queue, other.priority, would, pods))
    return out


def _eligible(ssn: Session, preemptor: JobInfo, victim: JobInfo, action: str) -> bool:
    if action == preempt.NAME:
        return preempt.is_lower_in_queue(preemptor, victim) and ssn.is_victim(
            points.PREEMPT_VICTIM_FILTER, preemptor, victim
        )
    if action == reclaim.NAME:
        return preemptor.queue != victim.queue and ssn.is_victim(points.RECLAIM_VICTIM_FILTER, preemptor, victim)
    return action == consolidation.NAME and preemptor.preemptible and preemptor.uid != victim.uid


def _would_take(ssn: Session, preemptor: JobInfo, victim: JobInfo, action: str) -> tuple[bool, int]:
    """Dry-run `action` for `preemptor`: whether it takes (or moves) pods of `victim`, and how many."""
    result = dryrun.plan(ssn, preemptor, action)
    taken = sum(1 for v in result.victims if v.job == victim.key)
    return taken > 0, taken


def protection(ssn: Session, job: JobInfo) -> model.Protection:
    """Non-preemptibility and the min-runtimes that apply to `job` as a victim (preempt; reclaim judged from the
    job's own queue chain)."""
    notes = []
    elastic = is_elastic(job)
    started_ago = None if job.last_start is None else max(0.0, ssn.now - job.last_start)
    if not job.preemptible:
        notes.append("non-preemptible: never preempted, reclaimed or moved")
    elif not victims.can_be_victim(job):
        notes.append("no pod of it is bound or running yet: not a victim this cycle")
    plugin = next((p for p in ssn.plugins if isinstance(p, MinRuntime)), None)
    runtimes: list[tuple[str, float]] = []
    protected: list[tuple[str, float]] = []
    if plugin is None:
        notes.append("the minruntime plugin is not configured: no min-runtime protection")
    else:
        for action, runtime in (
            (preempt.NAME, plugin.preempt_min_runtime(job)),
            (reclaim.NAME, plugin.reclaim_min_runtime(job, job)),
        ):
            runtimes.append((action, runtime))
            left = 0.0 if job.last_start is None else max(0.0, job.last_start + runtime - ssn.now)
            protected.append((action, round(left, 3)))
        if plugin.resolve_method == "lca":
            notes.append(
                "reclaim's min-runtime is looked up from the queue below the reclaimer's and this job's common "
                "ancestor; shown here from this job's own queue"
            )
    if elastic and job.preemptible:
        notes.append("elastic: min-runtime protects only its minimum; pods beyond it may be taken at any time")
    return model.Protection(
        preemptible=job.preemptible,
        elastic=elastic,
        started_ago=None if started_ago is None else round(started_ago, 3),
        min_runtime=tuple(runtimes),
        protected_for=tuple(protected),
        notes=tuple(notes),
    )
