"""LeaderWorkerSet grouper (KAI `plugins/leaderworkerset`, `leaderworkerset.x-k8s.io/v1`).

One PodGroup per group (`pg-<lws>-<uid>-group-<i>`, i from the pod's `leaderworkerset.sigs.k8s.io/group-index`
label), a gang of `spec.leaderWorkerTemplate.size` pods (default 1): SubGroups `leader` (the pod with worker
index 0) and `workers` (the others). A worker template annotated `kai.scheduler/segment-size: S` cuts the group
into segments instead (`segment-<j>` holds worker indexes jS … jS+S-1, the leader in segment 0), all mandatory.
With `spec.startupPolicy: LeaderReady` the leader starts alone: while it is not scheduled its group's PodGroup
is just the leader (minMember 1); once it is, the whole group. Every pod of the group looks at the leader pod
(itself, the leader in a worker's owner chain, else the group's pod of worker index 0), so all agree.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import SubGroup
from kai_scheduler.podgrouper import default, segments
from kai_scheduler.podgrouper.context import Context, Grouping, GroupingError, metadata_strings, read_int

LEADER, WORKERS = "leader", "workers"


def group(ctx: Context) -> Grouping:
    top, pod = ctx.top, ctx.pod
    where = f"{top.kind} {top.namespace}/{top.name}"
    group_index = segments.replica_index(pod.labels, constants.LABEL_LWS_GROUP_INDEX)
    if group_index is None:
        raise GroupingError(
            f"pod {pod.namespace}/{pod.name}: no {constants.LABEL_LWS_GROUP_INDEX} label; "
            f"cannot tell which group of {where} it belongs to"
        )
    warnings: list[str] = []
    pg = default.podgroup(ctx, warnings, name=default.name_for(top, f"-group-{group_index}"))
    grouping = Grouping(pg, warnings=warnings)
    size = read_int(top, "spec.leaderWorkerTemplate.size", 1, minimum=1) or 1
    worker_index = segments.replica_index(pod.labels, constants.LABEL_LWS_WORKER_INDEX) or 0
    if size == 1:
        return grouping
    worker_template = top.get("spec.leaderWorkerTemplate.workerTemplate")
    seg = segments.read(
        metadata_strings(worker_template, "annotations"),
        top.annotations.get(constants.ANNOTATION_TOPOLOGY, ""),
        f"{where} workerTemplate",
        warnings,
    )
    if seg is not None:
        sub_groups = tuple(segments.sub_groups(seg, size, size, where=f"{where} spec.leaderWorkerTemplate.size"))
        grouping.subgroup = segments.name("", seg.index(worker_index))
    else:
        sub_groups = (SubGroup(LEADER, min_member=1), SubGroup(WORKERS, min_member=size - 1))
        grouping.subgroup = LEADER if worker_index == 0 else WORKERS
    if top.get("spec.startupPolicy") == "LeaderReady" and not _leader_scheduled(ctx, group_index, worker_index):
        # The leader alone (minMember 1). A worker made this early keeps its subgroup label: it is placed with
        # the whole group once the leader is, not before.
        if worker_index == 0:
            grouping.subgroup = ""
        return grouping
    pg.min_member = size  # the whole group's, as KAI's grouper writes it beside the subgroups
    pg.sub_groups = sub_groups
    return grouping


def _leader_scheduled(ctx: Context, group_index: int, worker_index: int) -> bool:
    """Whether the group's leader pod is scheduled: the pod itself, else the leader in the worker's owner chain
    (LWS makes a worker's StatefulSet owned by its leader pod), else the pod of worker index 0 of the group. Every
    pod of a group so computes the same PodGroup: a worker that asked for the whole group while the leader asked for
    itself alone made the PodGroup flip between the two, and left the leader in no subgroup, never placed."""
    if worker_index == 0:
        return bool(ctx.pod.get("spec.nodeName"))
    leader = ctx.find("", "Pod")
    if leader is not None and not leader.partial:
        return bool(leader.get("spec.nodeName"))
    selector = {
        constants.LABEL_LWS_NAME: ctx.top.name,
        constants.LABEL_LWS_GROUP_INDEX: str(group_index),
        constants.LABEL_LWS_WORKER_INDEX: "0",
    }
    return any((p.get("spec") or {}).get("nodeName") for p in ctx.lookup.pods(ctx.pod.namespace, selector))
