"""Workload owners for the replay: the object a user applies (a Job, a PyTorchJob…) for a scenario job, so that
the real podgrouper makes the job's PodGroup from it, as in a cluster.

`emulate(meta, podgroup, pods)` returns the owner objects of a job (top owner first) and rewrites its pods as
that owner's controller creates them (its labels, owner references, no `pod-group-name`: the podgrouper sets
it). It returns None when the owner kind cannot ask for the PodGroup the scenario wrote: subgroups or
scheduler-written annotations in the scenario, a gang for a kind that groups per pod, a kind the store does not
serve, no owner at all. Such a job keeps its PodGroup, as a user's own (external) PodGroup; the podgrouper
leaves it alone.

What each kind carries (queue, priority class, preemptibility, topology and delays ride on every owner):

| kind | pods | minMember m |
|---|---|---|
| Job | parallelism n | `kai.scheduler/batch-min-member` |
| CronJob | a Job it spawned (pods are owned by the Job) | as Job |
| PyTorchJob | Master 1, Worker n-1 | `runPolicy.schedulingPolicy.minAvailable` (m ≥ 1) |
| TFJob, XGBoostJob, JAXJob, MPIJob | Chief/Master/Launcher 1 (JAX: none), Worker the rest | `minAvailable` |
| RayCluster, RayJob, RayService | head 1, worker group `workers` n-1 | `minReplicas` m-1 (m = n, or 1 < m < n) |
| JobSet | one replicated job `workers` of parallelism n | template `batch-min-member` |
| LeaderWorkerSet | one group of size n | m = n only |
| Deployment, Knative Service | per-pod PodGroups | m = 1 only |
| StatefulSet, ReplicaSet, Notebook, Pod (one pod) | | m = 1 only |
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from kai_scheduler.api import constants
from kai_scheduler.scenario import meta as scenario_meta
from kai_scheduler.scenario.model import JobMeta
from kai_scheduler.store.interface import GVK_TO_PLURAL, JSON

# PodGroup spec fields an owner can carry to the podgrouper, and their owner metadata (label or annotation).
_CARRIED = frozenset(
    {
        "queue",
        "minMember",
        "priorityClassName",
        "preemptibility",
        "topologyConstraint",
        "preemptionDelay",
        "stalenessGracePeriod",
    }
)
WORKERS = "workers"
BARE_POD = "Pod"

Build = Callable[[JSON, list[JSON], int], bool]  # (owner, pods, minMember) → whether it can be expressed


def emulate(meta: JobMeta, podgroup: JSON | None, pods: list[JSON]) -> list[JSON] | None:
    """The job's owner objects (top first), its pods rewritten in place; None: keep the PodGroup."""
    if podgroup is None or not pods or podgroup.get("metadata", {}).get("annotations"):
        return None
    spec = podgroup.get("spec") or {}
    min_member = spec.get("minMember")
    if not set(spec) <= _CARRIED or not isinstance(min_member, int):
        return None
    if meta.owner_kind == BARE_POD:
        return _bare(meta, pods, spec, min_member)
    build = _BUILDERS.get(meta.owner_kind)
    if build is None:
        return None
    ref = next((r for r in pods[0]["metadata"].get("ownerReferences") or () if r.get("kind") == meta.owner_kind), None)
    if ref is None or (ref.get("apiVersion"), meta.owner_kind) not in GVK_TO_PLURAL:
        return None
    owner = _owner(ref, meta, spec)
    trial = copy.deepcopy(pods)
    if not build(owner, trial, min_member):
        return None
    extra = owner.pop("_children", [])
    for pod, rewritten in zip(pods, trial, strict=True):
        pod.clear()
        pod.update(rewritten)
        (pod["metadata"].get("annotations") or {}).pop(constants.ANNOTATION_POD_GROUP_NAME, None)
    return [owner, *extra]


def _bare(meta: JobMeta, pods: list[JSON], spec: JSON, min_member: int) -> list[JSON] | None:
    """A pod of its own (no owner to create): it is its own top owner, so it carries what an owner would."""
    if min_member != 1 or len(pods) != 1:
        return None
    pod_meta = pods[0]["metadata"]
    carried = _owner({"apiVersion": "v1", "name": pod_meta["name"], "uid": ""}, meta, spec)["metadata"]
    pod_meta.pop("ownerReferences", None)
    own_map(pod_meta, "labels").update(carried["labels"])
    annotations = own_map(pod_meta, "annotations")
    annotations.pop(constants.ANNOTATION_POD_GROUP_NAME, None)
    annotations.update(carried.get("annotations") or {})
    return []


def _owner(ref: JSON, meta: JobMeta, spec: JSON) -> JSON:
    labels = {constants.LABEL_QUEUE: str(spec["queue"])}
    if spec.get("preemptibility"):
        labels[constants.LABEL_PREEMPTIBILITY] = spec["preemptibility"]
    if spec.get("priorityClassName"):
        labels[constants.LABEL_PRIORITY_CLASS] = spec["priorityClassName"]
    annotations: dict[str, str] = {}
    constraint = spec.get("topologyConstraint") or {}
    for key, annotation in (
        ("topology", constants.ANNOTATION_TOPOLOGY),
        ("requiredTopologyLevel", constants.ANNOTATION_TOPOLOGY_REQUIRED),
        ("preferredTopologyLevel", constants.ANNOTATION_TOPOLOGY_PREFERRED),
    ):
        if constraint.get(key):
            annotations[annotation] = constraint[key]
    for key, annotation in (
        ("preemptionDelay", constants.ANNOTATION_PREEMPTION_DELAY),
        ("stalenessGracePeriod", constants.ANNOTATION_STALENESS_GRACE_PERIOD),
    ):
        if spec.get(key) is not None:
            annotations[annotation] = str(spec[key])
    metadata: JSON = {"name": ref["name"], "namespace": meta.namespace, "uid": ref["uid"], "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": ref["apiVersion"], "kind": meta.owner_kind, "metadata": metadata, "spec": {}}


def _template(pod: JSON) -> JSON:
    spec = {k: v for k, v in pod.get("spec", {}).items() if k not in ("nodeName", "schedulingGates")}
    return {"spec": spec}


def _label(pods: list[JSON], index: int, labels: dict[str, str]) -> None:
    own_map(pods[index]["metadata"], "labels").update(labels)


def _job(owner: JSON, pods: list[JSON], m: int) -> bool:
    owner["spec"] = {"parallelism": len(pods), "completions": len(pods), "template": _template(pods[0])}
    if m != 1:
        owner["metadata"].setdefault("annotations", {})[constants.ANNOTATION_BATCH_MIN_MEMBER] = str(m)
    return True


def _cronjob(owner: JSON, pods: list[JSON], m: int) -> bool:
    """The CronJob and the Job it spawned; the pods belong to the Job."""
    meta = owner["metadata"]
    name = f"{meta['name']}-1"
    job: JSON = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": scenario_meta.uid("Job", meta["namespace"], name),
            "labels": dict(meta["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": "CronJob",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {},
    }
    if meta.get("annotations"):
        job["metadata"]["annotations"] = dict(meta["annotations"])
    _job(job, pods, m)
    owner["spec"] = {"schedule": "@hourly", "jobTemplate": {"spec": job["spec"]}}
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for pod in pods:
        pod["metadata"]["ownerReferences"] = [ref]
    owner["_children"] = [job]
    return True


def _kubeflow(field: str, first: str | None, *, subgroups: bool = False) -> Build:
    """A Kubeflow job: replica type `first` (one replica, the first pod) and Workers, minAvailable m."""

    def build(owner: JSON, pods: list[JSON], m: int) -> bool:
        if subgroups and m < 1:
            return False  # the master's subgroup needs it whatever the minimum
        specs: JSON = {}
        workers = pods
        if first is not None:
            specs[first] = {"replicas": 1, "template": _template(pods[0])}
            _label(
                pods,
                0,
                {constants.LABEL_KUBEFLOW_REPLICA_TYPE: first.lower(), constants.LABEL_KUBEFLOW_REPLICA_INDEX: "0"},
            )
            workers = pods[1:]
        if workers or first is None or first == "Launcher":
            specs["Worker"] = {"replicas": len(workers), "template": _template(workers[0] if workers else pods[0])}
        for index, pod in enumerate(workers):
            own_map(pod["metadata"], "labels").update(
                {constants.LABEL_KUBEFLOW_REPLICA_TYPE: "worker", constants.LABEL_KUBEFLOW_REPLICA_INDEX: str(index)}
            )
        for pod in pods:
            pod["metadata"]["labels"][constants.LABEL_KUBEFLOW_JOB_NAME] = owner["metadata"]["name"]
        owner["spec"] = {field: specs, "runPolicy": {"schedulingPolicy": {"minAvailable": m}}}
        return True

    return build


def _ray(path: tuple[str, ...]) -> Build:
    def build(owner: JSON, pods: list[JSON], m: int) -> bool:
        workers = len(pods) - 1
        if not (m == len(pods) or 1 < m < len(pods)):
            return False
        cluster: JSON = {"headGroupSpec": {"rayStartParams": {}, "template": _template(pods[0])}}
        if workers:
            group: JSON = {
                "groupName": WORKERS,
                "replicas": workers,
                "maxReplicas": workers,
                "rayStartParams": {},
                "template": _template(pods[1]),
            }
            if m < len(pods):
                group["minReplicas"] = m - 1
            cluster["workerGroupSpecs"] = [group]
        _label(pods, 0, {constants.LABEL_RAY_GROUP: "headgroup"})
        for index in range(1, len(pods)):
            _label(pods, index, {constants.LABEL_RAY_GROUP: WORKERS})
        spec: JSON = cluster
        for key in reversed(path):
            spec = {key: spec}
        owner["spec"] = spec
        return True

    return build


def _jobset(owner: JSON, pods: list[JSON], m: int) -> bool:
    template = {
        "metadata": {"annotations": {constants.ANNOTATION_BATCH_MIN_MEMBER: str(m)}},
        "spec": {"parallelism": len(pods), "completions": len(pods), "template": _template(pods[0])},
    }
    owner["spec"] = {"replicatedJobs": [{"name": WORKERS, "replicas": 1, "template": template}]}
    for index in range(len(pods)):
        _label(pods, index, {constants.LABEL_JOBSET_REPLICATED_JOB: WORKERS, constants.LABEL_JOBSET_JOB_INDEX: "0"})
    return True


def _lws(owner: JSON, pods: list[JSON], m: int) -> bool:
    if m != len(pods):
        return False
    owner["spec"] = {"replicas": 1, "leaderWorkerTemplate": {"size": len(pods), "workerTemplate": _template(pods[0])}}
    for index in range(len(pods)):
        _label(pods, index, {constants.LABEL_LWS_GROUP_INDEX: "0", constants.LABEL_LWS_WORKER_INDEX: str(index)})
    return True


def _single(owner: JSON, pods: list[JSON], m: int) -> bool:
    """Kinds grouped with minMember 1 (one PodGroup for the owner, or one per pod)."""
    owner["spec"] = {"replicas": len(pods), "template": _template(pods[0])}
    return m == 1


_BUILDERS: dict[str, Build] = {
    "Job": _job,
    "CronJob": _cronjob,
    "PyTorchJob": _kubeflow("pytorchReplicaSpecs", "Master", subgroups=True),
    "TFJob": _kubeflow("tfReplicaSpecs", "Chief"),
    "XGBoostJob": _kubeflow("xgbReplicaSpecs", "Master"),
    "JAXJob": _kubeflow("jaxReplicaSpecs", None),
    "MPIJob": _kubeflow("mpiReplicaSpecs", "Launcher"),
    "RayCluster": _ray(()),
    "RayJob": _ray(("rayClusterSpec",)),
    "RayService": _ray(("rayClusterConfig",)),
    "JobSet": _jobset,
    "LeaderWorkerSet": _lws,
    "Deployment": _single,
    "Service": _single,
    "StatefulSet": _single,
    "ReplicaSet": _single,
    "Notebook": _single,
}


def own_map(meta: JSON, key: str) -> JSON:
    """`meta[key]` to write into: made empty when missing or null (a manifest may say `annotations: null`)."""
    value = meta.get(key)
    if value is None:
        value = meta[key] = {}
    return value
