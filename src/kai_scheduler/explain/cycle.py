"""The next cycle, dry: every configured action in order on a session of its own, as the scheduler would run
it, and what it decides for the job (placed, room made for it, its pods taken, or why not placed).

The session's decisions stay in the session (`Session.committed`): nothing is handed to a committer, so
nothing reaches the store. It differs from the real next cycle only by what changes in the cluster
meanwhile (and time-based usage, which is not read here).
"""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.actions.common import allocation
from kai_scheduler.actions.registry import ACTIONS
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.explain import dryrun, model, threats
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction, Op

WAITING = "waiting for its pods: fewer live pods than the gang's minimum"


@dataclass(frozen=True, slots=True)
class Dry:
    """What a dry next cycle says of the job: its fate, the victim actions' plans for it (while it has pending
    pods) and the threats to its running pods, each taken at that action's turn."""

    outcome: model.NextCycle
    plans: tuple[model.VictimPlan, ...]
    threats: tuple[model.Threat, ...]


def next_cycle(ssn: Session, job: JobInfo, *, dry_runs: int) -> Dry:
    """Run the configured actions on `ssn` (a session opened for this alone) and read the job's fate.

    Before each victim action, on the cycle's state at that point (what allocate and earlier actions did is
    there): while the job still has pending pods, the action is also dry-run for the job alone
    (`dryrun.plan`, discarded): whether it could make room, and what it would take; while it has running pods,
    the pending jobs the action could let take them (`threats.at_turn`, at most `dry_runs` dry runs in all)."""
    plans = []
    found: list[model.Threat] = []
    for name in ssn.config.actions:
        if name in dryrun.ACTIONS:
            if job.has_pending() and job.is_ready():
                plans.append(dryrun.plan(ssn, job, name))
            if job.active_allocated():
                left = dry_runs - sum(1 for t in found if t.would_evict is not None)
                found += threats.at_turn(ssn, job, name, dry_runs=max(left, 0))
        ACTIONS[name]().execute(ssn)
    placements = []
    made_room: list[model.Victim] = []
    taken: list[model.Victim] = []
    for op in ssn.committed:
        task = op.task
        if op.op is Op.EVICT:
            why = op.eviction
            victim = _victim(ssn, op.task.job_uid, task.key, op.before.node, op.after.node if op.moved else "", why)
            if task.job_uid == job.uid:
                taken.append(victim)
            elif why is not None and why.preemptor == job.key:
                made_room.append(victim)
        elif task.job_uid == job.uid:
            placements.append(model.Placement(task.name, op.after.node, op.after.status.label))
    reasons: list[model.Reason] = []
    if job.has_pending() and not placements:
        summary = allocation.gang_summary(ssn, job) if job.is_ready() else ""
        reasons = [model.Reason("snapshot", p.message) for p in ssn.snapshot.job_problems.get(job.uid, [])]
        reasons += [model.Reason(r.plugin, r.message) for r in ssn.job_fit_errors.get(job.uid, [])]
        if summary and all(r.message != summary for r in reasons):
            reasons.insert(0, model.Reason("allocate", summary))
        if not job.is_ready() and not reasons:
            reasons.append(model.Reason("allocate", WAITING))
    outcome = model.NextCycle(
        placements=tuple(sorted(placements, key=lambda p: p.task)),
        made_room=tuple(made_room),
        taken=tuple(taken),
        reasons=tuple(dict.fromkeys(reasons)),
    )
    return Dry(outcome, tuple(plans), tuple(found))


def _victim(ssn: Session, job_uid: str, task: str, node: str, moved_to: str, why: Eviction | None) -> model.Victim:
    owner = ssn.snapshot.jobs.get(job_uid)
    action, by = (why.action, why.preemptor) if why is not None else ("", "")
    return model.Victim(
        task=task,
        job=owner.key if owner else "",
        queue=owner.queue if owner else "",
        node=node,
        moved_to=moved_to,
        action=action,
        by=by,
    )
