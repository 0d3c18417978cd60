"""Kubeflow groupers (KAI `plugins/kubeflow`): PyTorchJob, TFJob, XGBoostJob, JAXJob, MPIJob.

All read `spec.<kind>ReplicaSpecs` (`{Master: {replicas, template}, Worker: …}`, replicas default 1):
minMember = `spec.runPolicy.schedulingPolicy.minAvailable`, else the sum of all replicas. A minimum above the
sum is kept (the job waits for pods its operator never makes) and said once on the pod (`PodGrouperWarning`).

- PyTorchJob: an elastic job's `spec.elasticPolicy.minReplicas` is the minimum unless `minAvailable` is set.
  SubGroups `master` (the Master replicas) and `worker` (the rest of the minimum); a Worker template annotated
  `kai.scheduler/segment-size` cuts the workers into segments (`worker-segment-<i>`, by the pod's
  `training.kubeflow.org/replica-index`). Pods join by `training.kubeflow.org/replica-type`.
- MPIJob (`kubeflow.org/v1` and `v2beta1`): Launcher and Worker replica specs are required; with
  `spec.launcherCreationPolicy: WaitForWorkersReady`, until the launcher pod exists the launcher replicas are
  not counted (the workers start first).
"""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON
from kai_scheduler.api.podgroup import SubGroup
from kai_scheduler.podgrouper import default, segments
from kai_scheduler.podgrouper.context import (
    Context,
    Grouping,
    GroupingError,
    Obj,
    read_int,
    read_map,
    template_annotations,
)

MASTER, WORKER, LAUNCHER = "Master", "Worker", "Launcher"
MASTER_SUBGROUP, WORKER_SUBGROUP = "master", "worker"


def pytorch(ctx: Context) -> Grouping:
    field = "pytorchReplicaSpecs"
    top = ctx.top
    grouping = default.group(ctx)
    specs, replicas = _replica_specs(top, field)
    min_available = _minimum(top, replicas, grouping.warnings, elastic=True)
    masters = replicas.get(MASTER, 0)
    subgroups: list[SubGroup] = []
    if MASTER in specs:
        subgroups.append(SubGroup(MASTER_SUBGROUP, min_member=min(masters, min_available)))
    seg = None
    if WORKER in specs:
        worker_min = max(0, min_available - masters)
        annotations = template_annotations(specs[WORKER])
        seg = segments.read(
            annotations,
            top.annotations.get(constants.ANNOTATION_TOPOLOGY, ""),
            f"{top.kind} {top.name} {WORKER} template",
            grouping.warnings,
        )
        if seg is None:
            subgroups.append(SubGroup(WORKER_SUBGROUP, min_member=worker_min))
        else:
            subgroups.append(SubGroup(WORKER_SUBGROUP))
            subgroups += segments.sub_groups(
                seg,
                replicas[WORKER],
                worker_min,
                where=f"{top.kind} {top.namespace}/{top.name} {WORKER} replicas",
                prefix=WORKER_SUBGROUP,
                parent=WORKER_SUBGROUP,
            )
    pg = grouping.podgroup
    pg.min_member = min_available  # kept beside the subgroups, as KAI's grouper writes it (the scheduler reads theirs)
    pg.sub_groups = tuple(subgroups)
    grouping.subgroup = _pytorch_subgroup(ctx.pod, seg, grouping.warnings)
    return grouping


def _pytorch_subgroup(pod: Obj, seg: segments.Segments | None, warnings: list[str]) -> str:
    labels = pod.labels
    role = labels.get(constants.LABEL_KUBEFLOW_REPLICA_TYPE, "").lower()
    if not role:
        role = MASTER_SUBGROUP if labels.get(constants.LABEL_KUBEFLOW_JOB_ROLE) == "master" else WORKER_SUBGROUP
    if role == MASTER_SUBGROUP:
        return MASTER_SUBGROUP
    if role != WORKER_SUBGROUP:
        warnings.append(f"pod label {constants.LABEL_KUBEFLOW_REPLICA_TYPE}: unknown replica type {role!r}")
        return ""
    if seg is None:
        return WORKER_SUBGROUP
    index = segments.replica_index(labels, constants.LABEL_KUBEFLOW_REPLICA_INDEX)
    if index is None:
        warnings.append(
            f"pod label {constants.LABEL_KUBEFLOW_REPLICA_INDEX}: want the worker's index for its "
            "segment; the pod joins no segment"
        )
        return ""
    return segments.name(WORKER_SUBGROUP, seg.index(index))


def tfjob(ctx: Context) -> Grouping:
    return _flat(ctx, "tfReplicaSpecs")


def xgboost(ctx: Context) -> Grouping:
    return _flat(ctx, "xgbReplicaSpecs")


def jax(ctx: Context) -> Grouping:
    return _flat(ctx, "jaxReplicaSpecs")


def mpijob(ctx: Context) -> Grouping:
    top = ctx.top
    grouping = _flat(ctx, "mpiReplicaSpecs")
    specs, replicas = _replica_specs(top, "mpiReplicaSpecs")
    missing = [name for name in (LAUNCHER, WORKER) if name not in specs]
    if missing:
        raise GroupingError(
            f"{top.kind} {top.namespace}/{top.name} spec.mpiReplicaSpecs: missing "
            f"{' and '.join(missing)} (an MPIJob needs a Launcher and Workers)"
        )
    pg = grouping.podgroup
    if top.get("spec.launcherCreationPolicy") == "WaitForWorkersReady" and not _launcher_exists(ctx):
        pg.min_member = max(0, (pg.min_member or 0) - replicas[LAUNCHER])
    return grouping


def _launcher_exists(ctx: Context) -> bool:
    if ctx.pod.labels.get(constants.LABEL_KUBEFLOW_JOB_ROLE) == "launcher":
        return True
    selector = {constants.LABEL_KUBEFLOW_JOB_NAME: ctx.top.name, constants.LABEL_KUBEFLOW_JOB_ROLE: "launcher"}
    return bool(ctx.lookup.pods(ctx.pod.namespace, selector))


def _flat(ctx: Context, field: str) -> Grouping:
    """minAvailable, else the sum of all replicas; no subgroups."""
    top = ctx.top
    grouping = default.group(ctx)
    _, replicas = _replica_specs(top, field)
    grouping.podgroup.min_member = _minimum(top, replicas, grouping.warnings)
    return grouping


MIN_AVAILABLE, ELASTIC_MIN = "spec.runPolicy.schedulingPolicy.minAvailable", "spec.elasticPolicy.minReplicas"


def _minimum(top: Obj, replicas: dict[str, int], warnings: list[str], *, elastic: bool = False) -> int:
    """The gang minimum: `minAvailable`, else (PyTorchJob) the elastic `minReplicas`, else all replicas. A
    minimum above the replicas the job declares is kept, as KAI keeps it, with a warning: the gang cannot start
    until that many pods exist, which its operator never creates, and the scheduler says nothing of a gang
    still short of pods."""
    total = sum(replicas.values())
    for path in (MIN_AVAILABLE, ELASTIC_MIN) if elastic else (MIN_AVAILABLE,):
        minimum = read_int(top, path)
        if minimum is None:
            continue
        if minimum > total:
            warnings.append(
                f"{top.kind} {top.namespace}/{top.name} {path}: {minimum} is more than the {total} replicas of "
                "the job; it will not start until that many pods exist"
            )
        return minimum
    return total


def _replica_specs(top: Obj, field: str) -> tuple[dict[str, JSON], dict[str, int]]:
    """The replica specs by replica type, and their replica counts."""
    raw = read_map(top, f"spec.{field}")
    if not raw:
        raise GroupingError(f"{top.kind} {top.namespace}/{top.name} spec.{field}: no replica specs")
    specs: dict[str, JSON] = {}
    replicas: dict[str, int] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise GroupingError(
                f"{top.kind} {top.namespace}/{top.name} spec.{field}.{name}: expected a replica spec, got {spec!r}"
            )
        specs[name] = spec
        replicas[name] = read_int(top, f"spec.{field}.{name}.replicas", 1) or 0
    return specs, replicas
