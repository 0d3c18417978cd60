"""Explain one job: read the cluster once through a store, build the scheduler's snapshot for each node pool,
open a session on it as a cycle would, and ask it (never commit it) why the job is where it is.

The store is only read (LIST of the scheduler's resources, as its cache does on start); the sessions are the
explanation's own and every statement opened in them is discarded, so nothing is ever written.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping

from kai_scheduler.actions.common import allocation
from kai_scheduler.api import constants
from kai_scheduler.api.clock import Clock
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.explain import cycle, dryrun, lookup, model, nodes, queues, threats
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import registry
from kai_scheduler.scheduler.scheduler import Scheduler
from kai_scheduler.store.interface import ClusterStore


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    """How much the explanation shows: nodes per pod shape, jobs ahead listed, threats dry-run."""

    closest: int = 3
    ahead: int = 10
    dry_runs: int = 5


def explain(
    store: ClusterStore,
    config: SchedulerConfig,
    clock: Clock,
    ref: lookup.JobRef,
    limits: Limits | None = None,
    *,
    pool_configs: Mapping[str, SchedulerConfig] | None = None,
) -> model.Explanation:
    """Why the job `ref` names is where it is; a `lookup.JobNotFound` (a UserError) when there is no such job,
    a `lookup.ClusterError` (a UserError) when the store cannot be read. `pool_configs`: the configuration of
    each node pool's scheduler where shards differ (a sharded scenario's); the job is explained with its pool's,
    else with `config`."""
    limits = limits or Limits()
    scheduler = Scheduler(store, config, clock, whole_cluster=True)
    lookup.sync(scheduler.cache)
    objects = scheduler.cluster_objects()
    params = scheduler.snapshot_params()
    key = lookup.find(objects, ref, scheduler_name=params.scheduler_name)
    job_pool = lookup.job_pool(objects, key, params)
    config = (pool_configs or {}).get(job_pool, config)
    pools: list[model.PoolView] = []
    main: model.Explanation | None = None
    for pool in lookup.pools(objects, params.node_pool_label_key, job_pool):
        # Another pool's view is a what-if: the job and its queues as they are, over that pool's nodes.
        what_if = dataclasses.replace(params, partition_label_value=pool, pool_objects=pool == job_pool)
        snap = snapshots.build(objects, what_if)
        job = next((j for j in snap.jobs.values() if j.key == key), None)
        if job is None:  # backed off on this pool (schedulingBackoff): the pool's scheduler skips it
            if pool == job_pool:
                main = _skipped(objects, key, pool, snap.now)
            continue
        ssn = _session(snap, config)
        try:
            view = _pool_view(ssn, job, pool, pool == job_pool, limits)
            pools.append(view)
            if pool == job_pool:
                main = _explanation(ssn, job, limits)
        finally:
            ssn.close()
            ssn.release()
    assert main is not None  # the job's own pool is always among the pools
    dry = _next_cycle(objects, params, job_pool, config, key, limits)
    if dry is not None:
        main = dataclasses.replace(main, next_cycle=dry.outcome, victims=dry.plans, threats=dry.threats)
    return dataclasses.replace(main, pools=tuple(pools), summary=_summary(main, pools))


def _next_cycle(
    objects: snapshots.ClusterObjects,
    params: snapshots.SnapshotParams,
    pool: str,
    config: SchedulerConfig,
    key: str,
    limits: Limits,
) -> cycle.Dry | None:
    snap = snapshots.build(objects, dataclasses.replace(params, partition_label_value=pool))
    job = next((j for j in snap.jobs.values() if j.key == key), None)
    if job is None:
        return None
    ssn = _session(snap, config)
    try:
        return cycle.next_cycle(ssn, job, dry_runs=limits.dry_runs)
    finally:
        ssn.close()
        ssn.release()


def _session(snap: snapshots.Snapshot, config: SchedulerConfig) -> Session:
    ssn = Session(snap, config, [registry.build(p.name, p.arguments) for p in config.plugins()])
    ssn.open()
    return ssn


def _pool_view(ssn: Session, job: JobInfo, pool: str, is_job_pool: bool, limits: Limits) -> model.PoolView:
    placeable, placements, reasons = dry_allocate(ssn, job)
    blocked = any(r.plugin == "topology" for r in reasons)
    return model.PoolView(
        name=pool,
        is_job_pool=is_job_pool,
        nodes=len(ssn.snapshot.nodes),
        placeable=placeable,
        placements=placements,
        reasons=reasons,
        shapes=nodes.shapes(ssn, job, closest=limits.closest, topology_blocked=blocked) if job.has_pending() else (),
    )


def dry_allocate(ssn: Session, job: JobInfo) -> tuple[bool, tuple[model.Placement, ...], tuple[model.Reason, ...]]:
    """Allocate the job's next pods alone, in a statement that is discarded: whether they fit, where, and if
    not, the reasons allocate records for the PodGroup condition."""
    problems = ssn.snapshot.job_problems.get(job.uid)
    if problems:
        return False, (), tuple(model.Reason("snapshot", p.message) for p in problems)
    if not job.has_pending():
        return False, (), ()
    if not job.is_ready():
        return False, (), (model.Reason("allocate", cycle.WAITING),)
    stmt = ssn.statement()
    try:
        with ssn.provisional_fit_errors():
            ssn.clear_fit_errors(job)
            if allocation.allocate_job(ssn, stmt, job).placed:
                return True, dryrun.placements(job), ()
            summary = allocation.gang_summary(ssn, job)
            found = [model.Reason(r.plugin, r.message) for r in ssn.job_fit_errors.get(job.uid, [])]
            if summary:
                found.insert(0, model.Reason("allocate", summary))
            return False, (), tuple(dict.fromkeys(found))
    finally:
        stmt.discard()


def _explanation(ssn: Session, job: JobInfo, limits: Limits) -> model.Explanation:
    pending, running = job.has_pending(), job.active_allocated() > 0
    notes = []
    if ssn.config.usage_db_config:
        notes.append("time-based fair share: the usage history is not read here; fair shares ignore past usage")
    return model.Explanation(
        job=job.key,
        queue=job.queue,
        priority=job.priority,
        preemptible=job.preemptible,
        state=_state(pending, running),
        pods=_pod_counts(job),
        summary="",
        problems=tuple(p.message for p in ssn.snapshot.job_problems.get(job.uid, [])),
        queues=queues.chain(ssn, job),
        order=queues.order(ssn, job, shown=limits.ahead) if pending else None,
        pools=(),
        victims=(),  # dry-run at each victim action's turn in the next cycle (`cycle.next_cycle`)
        threats=(),  # at each victim action's turn in the next cycle (`cycle.next_cycle`)
        protection=threats.protection(ssn, job) if running else None,
        now=ssn.now,
        notes=tuple(notes),
    )


def _skipped(objects: snapshots.ClusterObjects, key: str, pool: str, now: float) -> model.Explanation:
    """A job the pool's scheduler leaves out of its snapshot (schedulingBackoff 1 after an unschedulable
    condition on this pool): what its objects say, and why it is not considered."""
    pg = next(g for g in objects.podgroups if g.meta.key == key)
    classes = {pc.meta.name: pc.value for pc in objects.priority_classes}
    priority = classes.get(pg.priority_class_name, constants.DEFAULT_PODGROUP_PRIORITY)
    preemptible = (
        pg.preemptibility == constants.PREEMPTIBLE
        if pg.preemptibility
        else priority < constants.NON_PREEMPTIBLE_PRIORITY_THRESHOLD
    )
    pods = Counter(
        p.phase
        for p in objects.pods
        if p.namespace == pg.meta.namespace and p.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME) == pg.name
    )
    said = [m for c in pg.scheduling_conditions if c.of_pool(pool) for _, m in c.reasons if m]
    where = f"node pool {pool!r}" if pool else "the unlabelled node pool"
    problem = (
        f"schedulingBackoff is 1 and the PodGroup was found unschedulable on {where}"
        + (f" ({said[0]})" if said else "")
        + ": the scheduler no longer considers it"
    )
    return model.Explanation(
        job=key,
        queue=pg.queue,
        priority=priority,
        preemptible=preemptible,
        state="pending",
        pods=tuple(sorted(pods.items())),
        summary="",
        problems=(problem,),
        queues=(),
        order=None,
        pools=(),
        victims=(),
        threats=(),
        protection=None,
        now=now,
    )


def _state(pending: bool, running: bool) -> str:
    if pending and running:
        return "partial"
    if pending:
        return "pending"
    return "running" if running else "done"


def _pod_counts(job: JobInfo) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(Counter(t.status.label for t in job.tasks).items()))


def _summary(main: model.Explanation, pools: list[model.PoolView]) -> str:
    """One line: the verdict a person reads first."""
    if main.problems:
        return f"not considered by the scheduler: {main.problems[0]}"
    own = next((p for p in pools if p.is_job_pool), None)
    nc = main.next_cycle
    parts = []
    if main.state in ("pending", "partial") and nc is not None:
        parts.append(_pending_verdict(main, nc, own))
    if main.state in ("running", "partial"):
        parts.append(_running_verdict(main, nc))
    if main.state == "done":
        parts.append("nothing left to schedule")
    return "; ".join(p for p in parts if p)


def _pending_verdict(main: model.Explanation, nc: model.NextCycle, own: model.PoolView | None) -> str:
    if nc.placements:
        nodes_used = sorted({p.node for p in nc.placements})
        where = ", ".join(nodes_used[:3]) + (" …" if len(nodes_used) > 3 else "")
        pipelined = (
            " (pipelined: once releasing pods have gone)" if any(p.status == "Pipelined" for p in nc.placements) else ""
        )
        room = ""
        if nc.made_room:
            actions = "/".join(sorted({v.action for v in nc.made_room}))
            room = f", after {actions} takes {len(nc.made_room)} pod(s) of {len({v.job for v in nc.made_room})} job(s)"
        return f"the next cycle places it on {where}{pipelined}{room}"
    verdict = "stays pending"
    if nc.reasons:
        verdict += f": {nc.reasons[0].message}"
    if own is not None and own.placeable:
        verdict += " (it would fit if it came first: jobs ahead of it take the room)"
    plan = next((v for v in main.victims if v.possible), None)
    if plan is not None:
        jobs = len({v.job for v in plan.victims})
        verdict += f"; {plan.action} could make room by taking {len(plan.victims)} pod(s) of {jobs} job(s)"
    elif main.victims:
        verdict += "; no victim action can make room for it now"
    return verdict


def _running_verdict(main: model.Explanation, nc: model.NextCycle | None) -> str:
    if nc is not None and nc.taken:
        by = ", ".join(sorted({f"{v.action} for {v.by}" for v in nc.taken}))
        return f"the next cycle takes {len(nc.taken)} of its pods ({by})"
    sure = [t for t in main.threats if t.would_evict]
    if sure:
        names = ", ".join(sorted({f"{t.preemptor} ({t.action})" for t in sure}))
        return f"running; its pods could be taken by {names}"
    if main.threats:
        return f"running; {len(main.threats)} pending job/action pair(s) may take its pods"
    return "running; nothing pending can preempt, reclaim or move it in the next cycle"
