"""Ray grouper (KAI `plugins/ray`): RayCluster, RayJob, RayService (`ray.io/v1`).

The cluster spec is the RayCluster's `spec`, a RayJob's `spec.rayClusterSpec` or a RayService's
`spec.rayClusterConfig`. SubGroups: `head` (minMember 1) and one per worker group named by its `groupName`,
with minMember = (`minReplicas` if above 0, else `replicas`) × `numOfHosts` (default 1); the gang is their sum
plus the head. Pods join by `ray.io/node-type: head`, else by their `ray.io/group` label. The top owner's
`ray.io/priority-class-name` label is the first priority class candidate.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import SubGroup
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import Context, Grouping, GroupingError, read_int, read_list, read_map

CLUSTER_SPEC = {"RayCluster": "spec", "RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}
HEAD = "head"


def group(ctx: Context) -> Grouping:
    top = ctx.top
    warnings: list[str] = []
    pg = default.podgroup(ctx, warnings, priority_labels=(constants.LABEL_RAY_PRIORITY_CLASS,))
    where = f"{top.kind} {top.namespace}/{top.name}"
    path = CLUSTER_SPEC.get(top.kind, "spec")
    if not read_map(top, f"{path}.headGroupSpec"):
        raise GroupingError(f"{where} {path}.headGroupSpec: missing (a Ray cluster needs a head group)")
    subgroups = [SubGroup(HEAD, min_member=1)]
    for i, spec in enumerate(read_list(top, f"{path}.workerGroupSpecs")):
        at = f"{path}.workerGroupSpecs[{i}]"
        name = spec.get("groupName") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not name:
            raise GroupingError(f"{where} {at}.groupName: missing worker group name")
        if any(sg.name == name for sg in subgroups):
            raise GroupingError(f"{where} {at}.groupName: duplicate (or reserved) group name {name!r}")
        minimum = read_int(top, f"{at}.minReplicas", 0) or 0
        replicas = read_int(top, f"{at}.replicas", 0) or 0
        hosts = read_int(top, f"{at}.numOfHosts", 1, minimum=1) or 1
        subgroups.append(SubGroup(name, min_member=(minimum if minimum > 0 else replicas) * hosts))
    pg.min_member = sum(sg.min_member or 0 for sg in subgroups)  # the whole gang's, as KAI's grouper writes it
    pg.sub_groups = tuple(subgroups)
    grouping = Grouping(pg, warnings=warnings)
    labels = ctx.pod.labels
    node_type = labels.get(constants.LABEL_RAY_NODE_TYPE)
    if node_type is None:
        return grouping  # not a Ray node (a RayJob's submitter): no subgroup
    if node_type == HEAD:
        grouping.subgroup = HEAD
    elif labels.get(constants.LABEL_RAY_GROUP) in {sg.name for sg in subgroups[1:]}:
        grouping.subgroup = labels[constants.LABEL_RAY_GROUP]
    else:
        warnings.append(
            f"pod label {constants.LABEL_RAY_GROUP}: {labels.get(constants.LABEL_RAY_GROUP)!r} names "
            "no worker group; the pod joins no subgroup"
        )
    return grouping
