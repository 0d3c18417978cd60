"""JobSet grouper (KAI `plugins/jobset`, `jobset.x-k8s.io/v1alpha2`): one PodGroup for the whole JobSet.

SubGroups: per replicated job `<rj>` a parent with minSubGroup = its `replicas` (default 1), and per replica a
leaf `<rj>-replica-<i>` with minMember = the Job template's `parallelism` (default 1; the replicated job's
template annotation `kai.scheduler/batch-min-member` overrides). The root needs every replicated job
(minSubGroup = their count), or only one with `startupPolicy.startupPolicyOrder: InOrder`; the JobSet's own
`kai.scheduler/batch-min-member` annotation overrides that. Pods join by their
`jobset.sigs.k8s.io/replicatedjob-name` and `jobset.sigs.k8s.io/job-index` labels.
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import SubGroup
from kai_scheduler.podgrouper import default
from kai_scheduler.podgrouper.context import (
    Context,
    Grouping,
    GroupingError,
    annotation_int,
    check_subgroups,
    read_int,
    read_list,
    template_annotations,
)


def replica_name(replicated_job: str, index: int | str) -> str:
    return f"{replicated_job}-replica-{index}"


def group(ctx: Context) -> Grouping:
    top = ctx.top
    where = f"{top.kind} {top.namespace}/{top.name}"
    grouping = default.group(ctx)
    warnings = grouping.warnings
    replicated = read_list(top, "spec.replicatedJobs")
    if not replicated:
        raise GroupingError(f"{where} spec.replicatedJobs: no replicated jobs")
    subgroups: list[SubGroup] = []
    total = 0
    for i, rj in enumerate(replicated):
        at = f"spec.replicatedJobs[{i}]"
        name = rj.get("name") if isinstance(rj, dict) else None
        if not isinstance(name, str) or not name:
            raise GroupingError(f"{where} {at}.name: missing replicated job name")
        replicas = read_int(top, f"{at}.replicas", 1) or 0
        parallelism = read_int(top, f"{at}.template.spec.parallelism", 1) or 0
        override = annotation_int(
            template_annotations(rj), constants.ANNOTATION_BATCH_MIN_MEMBER, f"{where} {at}.template", warnings
        )
        if replicas == 0:
            subgroups.append(SubGroup(name, min_member=0))
            continue
        total += replicas
        check_subgroups(f"{where} {at}.replicas", total)
        subgroups.append(SubGroup(name, min_sub_group=replicas))
        leaf_min = parallelism if override is None else override
        subgroups += [SubGroup(replica_name(name, r), min_member=leaf_min, parent=name) for r in range(replicas)]
    in_order = top.get("spec.startupPolicy.startupPolicyOrder") == "InOrder"
    root = annotation_int(top.annotations, constants.ANNOTATION_BATCH_MIN_MEMBER, where, warnings)
    pg = grouping.podgroup
    pg.min_member = None
    pg.min_sub_group = root if root is not None else 1 if in_order else len(replicated)
    pg.sub_groups = tuple(subgroups)
    labels = ctx.pod.labels
    rj_name, index = labels.get(constants.LABEL_JOBSET_REPLICATED_JOB), labels.get(constants.LABEL_JOBSET_JOB_INDEX)
    leaf = replica_name(rj_name, index) if rj_name and index else ""
    if leaf and any(sg.name == leaf for sg in subgroups):
        grouping.subgroup = leaf
    else:
        warnings.append(
            f"pod labels {constants.LABEL_JOBSET_REPLICATED_JOB}={rj_name!r}, "
            f"{constants.LABEL_JOBSET_JOB_INDEX}={index!r} name no replica; the pod joins no subgroup"
        )
    return grouping
