"""LeaderWorkerSet grouper (KAI `plugins/leaderworkerset`, `leaderworkerset.x-k8s.io/v1`).

One PodGroup per group (`pg-<lws>-<uid>-group-<i>`, i from the pod's `leaderworkerset.sigs.k8s.io/group-index`
label), a gang of `spec.leaderWorkerTemplate.size` pods (default 1): SubGroups `leader` (the pod with worker
index 0) and `workers` (the others). A worker template annotated `kai.scheduler/segment-size: S` cuts the group
into segments instead (`segment-<j>` holds worker indexes jS … jS+S-1, the leader in segment 0), all mandatory.
With `spec.startupPolicy: LeaderReady` the leader starts alone: while it is not scheduled its group's PodGroup
is just the leader (minMember 1); once it is, the whole group.
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
    leader_alone = top.get("spec.startupPolicy") == "LeaderReady" and worker_index == 0
    if size == 1 or (leader_alone and not pod.get("spec.nodeName")):
        return grouping
    worker_template = top.get("spec.leaderWorkerTemplate.workerTemplate")
    seg = segments.read(
        metadata_strings(worker_template, "annotations"),
        top.annotations.get(constants.ANNOTATION_TOPOLOGY, ""),
        f"{where} workerTemplate",
        warnings,
    )
    pg.min_member = None
    if seg is not None:
        pg.sub_groups = tuple(segments.sub_groups(seg, size, size, where=f"{where} spec.leaderWorkerTemplate.size"))
        grouping.subgroup = segments.name("", seg.index(worker_index))
    else:
        pg.sub_groups = (SubGroup(LEADER, min_member=1), SubGroup(WORKERS, min_member=size - 1))
        grouping.subgroup = LEADER if worker_index == 0 else WORKERS
    return grouping
