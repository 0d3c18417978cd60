"""Action consolidation: move running preemptible pods to make room for a pending job, never net-evicting
(KAI `actions/consolidation/consolidation.go`, BEHAVIOR.md §3.8, §7.2).

Skipped when `--max-consolidation-preemptees` is 0, and with spread placement (binpack packs; spread would
undo every move).

1. Order the pending, ready, preemptible jobs outside their preemption delay through the queue tree.
2. For each popped job: the cluster's free GPUs (idle + releasing, on schedulable nodes) must cover what its
   next tasks ask for; nothing an eviction cannot fix may block it; it must be easier than a failed job of
   the same signature (signatures are per action here: the victims come from every queue).
3. Search victims among every other preemptible running job, at most `--max-consolidation-preemptees` + 1
   jobs (KAI's counter lets one more through), and accept a scenario only when every victim lands again
   elsewhere: no victim is left evicted.
4. Commit on success (each victim is deleted and recreated by its owner on the node it was pipelined to).
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.actions.common import budget, gpu_sharing, preemptors, solver
from kai_scheduler.actions.common.scenario import ScenarioOutcome
from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction

NAME = "consolidation"


class Consolidation:
    name = NAME

    def __init__(self, timer: budget.Timer | None = None) -> None:
        self.timer = timer

    def execute(self, ssn: Session) -> None:
        cap = ssn.config.flags.max_consolidation_preemptees
        if cap == 0 or uses_spread(ssn):
            return
        pending = [j for j in preemptors.candidates(ssn, NAME) if j.preemptible]
        max_jobs = None if cap < 0 else cap + 1
        preemptors.run(
            ssn,
            NAME,
            self.timer,
            pending,
            may_act=may_consolidate,
            search_for=lambda job, pool: search(job, pool, max_jobs),
            signature_scope=lambda job: NAME,
        )


def uses_spread(ssn: Session) -> bool:
    placement = ssn.config.plugin("nodeplacement")
    return placement is not None and "spread" in placement.arguments.values()


def may_consolidate(ssn: Session, job: JobInfo) -> bool:
    """Enough free GPUs in the cluster for the job's next tasks, counting the unused portions of shared GPUs
    whatever the job asks for (two fractions merged onto one device free a whole one), and enough free MIG
    instances of each profile they ask for; no victim-invariant rejection."""
    tasks = ssn.tasks_to_allocate(job)
    if not tasks:
        return False
    free = ssn.derived("consolidation.free_gpus", lambda: _free_gpus(ssn))
    if free + tolerance.RESOURCE < sum(t.gpus_accepted - t.gpu.mig_units for t in tasks):
        return False
    columns = list(ssn.snapshot.axis.mig_columns)
    mig_tasks = [t.request[columns] for t in tasks if t.gpu.mig]
    if mig_tasks:
        arrays = ssn.snapshot.arrays
        mig_free = arrays.free[arrays.schedulable][:, columns].sum(axis=0)
        if (mig_free + tolerance.RESOURCE < np.sum(mig_tasks, axis=0)).any():
            return False
    return preemptors.invariant_reject(ssn, job) is None


def _free_gpus(ssn: Session) -> float:
    """Idle and releasing GPUs of schedulable nodes, plus the unused portions of shared GPUs."""
    arrays = ssn.snapshot.arrays
    free = float(np.where(arrays.schedulable, arrays.free[:, GPU], 0.0).sum())
    return free + sum(gpu_sharing.shared_room(ssn).values())


def search(job: JobInfo, pool: list[JobInfo], max_jobs: int | None) -> solver.VictimSearch | None:
    """Victims: any other preemptible job, at most `max_jobs` of them; accepted only if every victim moves."""
    eligible = [v for v in pool if v.uid != job.uid]
    if not eligible:
        return None
    return solver.VictimSearch(
        NAME, eligible, lambda victim: _eviction(job), _every_victim_moves, max_victim_jobs=max_jobs
    )


def _every_victim_moves(preemptor: JobInfo, tasks: list[PodInfo], outcome: ScenarioOutcome) -> points.Reject | None:
    """Consolidation's validator: no victim left evicted."""
    if outcome.victims:
        left = ", ".join(sorted(t.key for t in outcome.victims))
        return points.Reject(NAME, constants.REASON_UNSCHEDULABLE, f"no other node for {left}")
    return None


def _eviction(preemptor: JobInfo) -> Eviction:
    return Eviction(NAME, preemptor.key, f"moved by consolidation to make room for {preemptor.key}")
