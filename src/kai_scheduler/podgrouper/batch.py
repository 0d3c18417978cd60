"""`batch/v1` Job and CronJob groupers (KAI `plugins/job`, `plugins/cronjobs`).

A Job is one PodGroup with minMember 1, unless the Job carries `kai.scheduler/batch-min-member: N`: then N
(a gang of N pods). Older KAI gave each pod of a Job its own PodGroup, `pg-<pod>-<job uid>`: a pod whose such
PodGroup exists keeps it, with minMember 1, so that an upgrade regroups no running pod (KAI's job grouper, with
its `--search-legacy-pg` default); the Job's later pods join `pg-<job>-<job uid>`.

A CronJob's pods are grouped by the Job it spawned (`pg-<job>-<job uid>`), so each run is its own workload; a
pod owned by the CronJob itself is grouped by the CronJob.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping, annotation_int


def job(ctx: Context) -> Grouping:
    """The pod's PodGroup of an older KAI if it exists (a watched one: read from the grouper's copy), else the
    Job's."""
    legacy = f"{default.PREFIX}-{ctx.pod.name}-{ctx.top.uid}"
    if legacy != default.name_for(ctx.top) and ctx.lookup.podgroup_exists(ctx.pod.namespace, legacy):
        warnings: list[str] = []
        return Grouping(default.podgroup(ctx, warnings, name=legacy), warnings=warnings)
    return _unified(ctx)


def _unified(ctx: Context) -> Grouping:
    """One PodGroup for the Job, minMember from `kai.scheduler/batch-min-member` (else 1)."""
    grouping = default.group(ctx)
    top = ctx.top
    min_member = annotation_int(
        top.annotations, constants.ANNOTATION_BATCH_MIN_MEMBER, f"{top.kind} {top.name}", grouping.warnings
    )
    if min_member is not None:
        grouping.podgroup.min_member = min_member
    return grouping


def cronjob(ctx: Context) -> Grouping:
    if ctx.find("batch", "Job") is None:
        return default.group(ctx)
    spawned = ctx.below_top()
    while spawned.top.group_kind != ("batch", "Job"):
        spawned = spawned.below_top()
    grouping = _unified(spawned)
    grouping.podgroup.meta.annotations[constants.ANNOTATION_TOP_OWNER_METADATA] = default.top_owner_metadata(ctx.top)
    return grouping
