"""Pods written for Volcano or YuniKorn, grouped and queued by their own markers (migration; not KAI's).

On only for the schedulers named in `Config.migrate_from` (`kai podgrouper --migrate-from volcano,yunikorn`).
The pod must still name this scheduler (`schedulerName`); what changes is that it needs no KAI label.

Volcano: the pod's `scheduling.k8s.io/group-name` (or `scheduling.volcano.sh/group-name`) annotation names a
Volcano PodGroup (`scheduling.volcano.sh/v1beta1`); its `spec.minMember` and `spec.queue` are used when it can
be read, else the pod's `volcano.sh/queue-name` / `scheduling.volcano.sh/queue-name` label or annotation names
the queue and minMember is 1. The KAI PodGroup is `pg-volcano-<group name>`.

YuniKorn: the pod's `applicationId` or `yunikorn.apache.org/app-id` label (or annotation) is the application:
its pods make one PodGroup, `pg-yunikorn-<application>`. The queue is the `queue` label or the
`yunikorn.apache.org/queue` annotation (`root.a.b`: its last part). Gangs: the `yunikorn.apache.org/task-groups`
annotation (a JSON list of `{name, minMember}`) gives one subgroup per task group, and `minMember` their sum; a
pod joins the one its `yunikorn.apache.org/task-group-name` annotation names.

The pod's KAI queue label, when it has one, wins; otherwise the foreign queue name goes through `queue_map`
(a name not in it becomes a Queue name as `kai migrate` writes it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from kai_scheduler.api.podgroup import SubGroup
from kai_scheduler.api.queue import queue_name
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping, GroupingError, Obj

VOLCANO = "volcano"
YUNIKORN = "yunikorn"
SOURCES = (VOLCANO, YUNIKORN)
VOLCANO_GROUP = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
VOLCANO_QUEUE = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name")
VOLCANO_PODGROUPS = "podgroups.scheduling.volcano.sh"
YUNIKORN_APP = ("applicationId", "yunikorn.apache.org/app-id")
YUNIKORN_QUEUE = ("queue", "yunikorn.apache.org/queue")
TASK_GROUPS = "yunikorn.apache.org/task-groups"
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"


def group(ctx: Context) -> Grouping | None:
    """The pod's grouping by Volcano's or YuniKorn's markers, or None (no marker, or migration off)."""
    sources = ctx.config.migrate_from
    if VOLCANO in sources and (name := _marker(ctx.pod, VOLCANO_GROUP)):
        return _volcano(ctx, name)
    if YUNIKORN in sources and (app := _marker(ctx.pod, YUNIKORN_APP)):
        return _yunikorn(ctx, app)
    return None


def _marker(pod: Obj, keys: tuple[str, ...]) -> str:
    for key in keys:
        value = pod.annotations.get(key) or pod.labels.get(key)
        if value:
            return value
    return ""


def _volcano(ctx: Context, name: str) -> Grouping:
    warnings: list[str] = []
    pg = default.podgroup(ctx, warnings, name=f"pg-volcano-{name}")
    vpg = ctx.lookup.read(VOLCANO_PODGROUPS, ctx.pod.namespace, name)
    spec = vpg.get("spec") if isinstance(vpg, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    min_member = spec.get("minMember", 1)
    if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 0:
        raise GroupingError(
            f"Volcano PodGroup {ctx.pod.namespace}/{name} spec.minMember: want a count, got {min_member!r}"
        )
    pg.min_member = min_member
    foreign = str(spec.get("queue") or _marker(ctx.pod, VOLCANO_QUEUE))
    pg.queue = _queue(ctx, foreign, pg.queue)
    return Grouping(pg, warnings=warnings)


def _yunikorn(ctx: Context, app: str) -> Grouping:
    warnings: list[str] = []
    pg = default.podgroup(ctx, warnings, name=f"pg-yunikorn-{queue_name(app)}")
    foreign = _marker(ctx.pod, YUNIKORN_QUEUE)
    pg.queue = _queue(ctx, foreign, pg.queue, last_part=True)
    groups = _task_groups(ctx)
    subgroup = ""
    if groups:
        pg.min_member = None
        pg.sub_groups = tuple(SubGroup(name=n, min_member=m) for n, m in groups)
        pg.min_sub_group = None
        subgroup = ctx.pod.annotations.get(TASK_GROUP_NAME, "")
        if subgroup and subgroup not in dict(groups):
            raise GroupingError(
                f"Pod {ctx.pod.namespace}/{ctx.pod.name} annotation {TASK_GROUP_NAME}: no task group {subgroup!r} "
                f"in {TASK_GROUPS}"
            )
    return Grouping(pg, subgroup=subgroup, warnings=warnings)


def _task_groups(ctx: Context) -> list[tuple[str, int]]:
    raw = ctx.pod.annotations.get(TASK_GROUPS) or ctx.top.annotations.get(TASK_GROUPS)
    if not raw:
        return []
    where = f"Pod {ctx.pod.namespace}/{ctx.pod.name} annotation {TASK_GROUPS}"
    try:
        items = json.loads(raw)
    except ValueError:
        raise GroupingError(f"{where}: not JSON") from None
    if not isinstance(items, list):
        raise GroupingError(f"{where}: want a JSON list of task groups")
    out: list[tuple[str, int]] = []
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        count = item.get("minMember", 0) if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise GroupingError(f"{where}[{i}].name: want a task group name")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise GroupingError(f"{where}[{i}].minMember: want a count, got {count!r}")
        out.append((queue_name(name), count))
    return out


def _queue(ctx: Context, foreign: str, kai: str, *, last_part: bool = False) -> str:
    """The KAI queue label wins; else the foreign queue through the map; else what the default grouper chose."""
    key = ctx.config.queue_label_key
    if ctx.pod.labels.get(key) or ctx.top.labels.get(key) or not foreign:
        return kai
    mapped = ctx.config.queue_map.get(foreign)
    if mapped:
        return mapped
    return queue_name(foreign.rsplit(".", 1)[-1] if last_part else foreign)
