"""Action stalegangeviction: a gang that lost pods below its minimum stops holding resources
(KAI `actions/stalegangeviction/stalegangeviction.go`, BEHAVIOR.md §3.11).

For every job, in namespace/name order (the snapshot names those that can be stale or carry a timestamp):
1. stale ⇔ no Succeeded pod, some pod active-used, and some PodSet with fewer active-used pods than its
   minimum (`JobInfo.is_stale`); a job that is not stale has its stale timestamp cleared;
2. a stale job without a stale timestamp gets one now (the committer writes it to the PodGroup as
   `kai.scheduler/stale-podgroup-timestamp`);
3. the grace period is the PodGroup's `stalenessGracePeriod`, else `--default-staleness-grace-period` (60s);
   negative means never;
4. once stale for at least the grace period, every running pod of the job is evicted (one statement per job).
"""

from __future__ import annotations

from kai_scheduler.actions.common import victims
from kai_scheduler.api.duration import format_duration
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction

NAME = "stalegangeviction"


class StaleGangEviction:
    name = NAME

    def execute(self, ssn: Session) -> None:
        default_grace = ssn.config.flags.default_staleness_grace_period
        snap = ssn.snapshot
        for job in snap.stale_candidates():  # every other job is not stale, with no timestamp
            if not job.is_stale():
                snap.set_stale_since(job, None)
                continue
            since = job.stale_since
            if since is None:
                since = ssn.now
                snap.set_stale_since(job, since)
            grace = grace_period(job, default_grace)
            if grace < 0 or ssn.now - since < grace:
                continue
            evict_gang(ssn, job, grace)


def grace_period(job: JobInfo, default: float) -> float:
    """The PodGroup's staleness grace period, else the scheduler's default; negative = never evict."""
    own = job.podgroup.staleness_grace_period
    return default if own is None else own


def evict_gang(ssn: Session, job: JobInfo, grace: float) -> None:
    """Evict every committed running pod of the job, in one statement."""
    tasks = sorted((t for t in job.tasks if victims.is_evictable(t)), key=ssn.task_key)
    if not tasks:
        return
    assert job.stale_since is not None
    running = sum(ps.active_used() for ps in job.root.pod_sets())
    why = Eviction(
        NAME,
        "",
        f"gang {job.key} is stale: {running} of the {job.min_available()} pods it needs "
        f"{'is' if running == 1 else 'are'} running, for {format_duration(round(ssn.now - job.stale_since))} "
        f"(grace period {format_duration(grace)})",
    )
    stmt = ssn.statement()
    for task in tasks:
        stmt.evict(task, why)
    stmt.commit()
