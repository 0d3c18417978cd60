"""Build one scenario task into the Pod (and, when Binding, the BindRequest) a cluster would hold.

A task's status says what stage of its life the cluster shows (BEHAVIOR.md §3.1 reads it back the same way):

| status            | pod phase | nodeName | also                                                   |
|-------------------|-----------|----------|--------------------------------------------------------|
| Pending           | Pending   | -        | a `node` is ignored (a Pending pod holds nothing)      |
| Gated             | Pending   | -        | spec.schedulingGates                                   |
| Pipelined         | Pending   | -        | status.nominatedNodeName = node (the intended node)    |
| Binding           | Pending   | -        | a BindRequest for the node                             |
| Bound             | Pending   | node     |                                                        |
| Running           | Running   | node     |                                                        |
| Releasing         | Running   | node     | deletionTimestamp = now                                |
| StuckInReleasing  | Running   | node     | deletionTimestamp = now - 10m (past the 2m threshold)  |
| Succeeded, Failed | as named  | if given |                                                        |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import bindrequest, constants, duration, quantity
from kai_scheduler.api import mig as mig_api
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.scenario import dra, meta, mig
from kai_scheduler.scenario.entry import Entry
from kai_scheduler.scenario.model import JSON, TASK_STATUSES

TASK_FIELDS = (
    "name",
    "status",
    "node",
    "gpus",
    "gpuMemory",
    "gpuDevices",
    "gpuGroups",
    "mig",
    "cpu",
    "memory",
    "subGroup",
    "labels",
    "annotations",
    "taskPriority",
    "nodeSelector",
    "nodeAffinity",
    "tolerations",
    "podAffinity",
    "podAntiAffinity",
    "preferredPodAffinity",
    "preferredPodAntiAffinity",
    "preferredNodeAffinity",
    "terminatesAfter",
    "claims",
    "draGpus",
)
TEMPLATE_FIELDS = tuple(f for f in TASK_FIELDS if f != "name")

NEEDS_NODE = ("Running", "Releasing", "StuckInReleasing", "Pipelined", "Binding", "Bound")
PLACED = ("Running", "Releasing", "StuckInReleasing", "Bound", "Succeeded", "Failed")
PHASE = {
    "Running": "Running",
    "Releasing": "Running",
    "StuckInReleasing": "Running",
    "Succeeded": "Succeeded",
    "Failed": "Failed",
}
DELETION_AGO = {"Releasing": 0.0, "StuckInReleasing": 600.0}
DELETION_GRACE_SECONDS = 30
GATE = "kai.scheduler/gated"
CONTAINER_IMAGE = "registry.k8s.io/pause:3.9"


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What every pod of one job shares."""

    name: str
    namespace: str
    queue: str
    priority_class: str
    priority: int | None
    created: float
    deleted: bool
    owner: JSON | None
    sub_groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One written task, validated; rendered once per job it is expanded into."""

    entry: Entry
    name: str  # as written; "" = named <job>-<index>
    index: int  # position in `tasks`, or replica number
    status: str
    node: str
    gpus: float
    portion: float  # of one GPU, for a Binding fraction's BindRequest
    gpu_memory: int | None
    gpu_devices: int | None
    gpu_groups: tuple[str, ...]
    requests: dict[str, str]
    labels: dict[str, str]
    annotations: dict[str, str]
    sub_group: str
    task_priority: int | None
    node_selector: dict[str, str]
    affinity: JSON
    tolerations: list[JSON]
    terminates_after: str = ""  # Go duration or "never"; "" = done before the next cycle
    mig: tuple[tuple[str, int], ...] = ()  # MIG instances requested, per profile
    claims: tuple[dra.ClaimSpec, ...] = ()  # DRA claims (scenario/dra.py)

    @property
    def is_fraction(self) -> bool:
        return 0 < self.gpus < 1 or self.gpu_memory is not None

    @property
    def resource_type(self) -> str:
        """What the binder marks a placed pod with (§1.3)."""
        return "Fraction" if self.is_fraction else "MigInstance" if self.mig else "Regular"


def read_task(e: Entry, name: str, index: int, sub_groups: frozenset[str], nodes: dict[str, int | None]) -> TaskSpec:
    """Check one task (or the template) against the job's subgroups and the scenario's nodes."""
    status = e.text("status", "Pending")
    if status not in TASK_STATUSES:
        raise e.error("status", f"unknown status {status!r}; want one of {', '.join(TASK_STATUSES)}")
    node = "" if status in ("Pending", "Gated") else e.text("node")
    if status in NEEDS_NODE and not node:
        raise e.error("node", f"a {status} task needs a node")
    if node and node not in nodes:
        raise e.error("node", f"no node named {node!r}")
    sub_group = e.text("subGroup")
    if sub_group and sub_group not in sub_groups:
        known = ", ".join(sorted(sub_groups)) or "none declared"
        raise e.error("subGroup", f"no subgroup named {sub_group!r} in the job's subGroups ({known})")
    gpus, gpu_memory, gpu_devices, groups = _gpu_fields(e)
    instances = tuple((p, n) for p, n in sorted(mig.instances(e).items()) if n)
    if instances and (0 < gpus < 1 or gpu_memory is not None):
        raise e.error("mig", "MIG instances cannot be combined with a fractional GPU (gpus below 1, gpuMemory)")
    return TaskSpec(
        entry=e,
        name=name,
        index=index,
        status=status,
        node=node,
        gpus=gpus,
        gpu_memory=gpu_memory,
        portion=_portion(e, status, node, gpus, gpu_memory, nodes),
        gpu_devices=gpu_devices,
        gpu_groups=groups,
        requests={**_requests(e, gpus), **{mig_api.RESOURCE_PREFIX + p: str(n) for p, n in instances}},
        mig=instances,
        labels=e.text_map("labels"),
        annotations=e.text_map("annotations"),
        sub_group=sub_group,
        task_priority=e.integer("taskPriority"),
        node_selector=e.text_map("nodeSelector"),
        affinity=_affinity(e),
        tolerations=e.mappings("tolerations"),
        terminates_after=_terminates_after(e),
        claims=dra.task_claims(e),
    )


def _terminates_after(e: Entry) -> str:
    """How long the pod's termination takes once it is deleted (now, or when evicted): a Go duration or never."""
    value = e.data.get("terminatesAfter")
    if value == "never":
        return "never"
    if isinstance(value, str) and not _is_go_duration(value):
        raise e.error("terminatesAfter", f'expected a Go duration such as "30s", or never, got {value!r}')
    written = e.duration("terminatesAfter")
    return "" if written is None else written[1]


def _is_go_duration(text: str) -> bool:
    try:
        duration.parse_duration(text)
    except duration.DurationError:
        return False
    return True


def _gpu_fields(e: Entry) -> tuple[float, int | None, int | None, tuple[str, ...]]:
    gpus = e.number("gpus", 0.0, minimum=0) or 0.0
    if gpus >= 1 and not gpus.is_integer():
        raise e.error("gpus", f"whole GPUs must be a whole number (a fraction is below 1), got {gpus:g}")
    gpu_memory = e.integer("gpuMemory", minimum=1)
    if gpu_memory is not None and gpus > 0:
        raise e.error("gpuMemory", "gpuMemory and gpus are mutually exclusive")
    is_fraction = 0 < gpus < 1 or gpu_memory is not None
    gpu_devices = e.integer("gpuDevices", minimum=1)
    if gpu_devices is not None and not is_fraction:
        raise e.error("gpuDevices", "gpuDevices needs a fraction: gpus below 1, or gpuMemory")
    groups = e.sequence("gpuGroups")
    if groups and not is_fraction:
        raise e.error("gpuGroups", "gpuGroups needs a fraction: gpus below 1, or gpuMemory")
    for i, group in enumerate(groups):
        if not isinstance(group, str) or not group:
            raise e.error(f"gpuGroups[{i}]", f"expected a group name, got {group!r}")
    return gpus, gpu_memory, gpu_devices, tuple(groups)


def _requests(e: Entry, gpus: float) -> dict[str, str]:
    out = {}
    for key in (constants.RESOURCE_CPU, constants.RESOURCE_MEMORY):
        value = e.quantity(key)
        if value is not None:
            out[key] = value
    if gpus >= 1:
        out[constants.RESOURCE_GPU] = str(int(gpus))
    return out


def _affinity(e: Entry) -> JSON:
    """nodeAffinity: the requirements of one required term; pod (anti-)affinity: required terms as written;
    the preferred* fields: weighted terms as written (Kubernetes' preferredDuringScheduling… lists)."""
    out: JSON = {}
    node_terms = e.mappings("nodeAffinity")
    if node_terms:
        term = {"nodeSelectorTerms": [{"matchExpressions": node_terms}]}
        out["nodeAffinity"] = {_REQUIRED: term}
    if preferred_node := e.mappings("preferredNodeAffinity"):
        out.setdefault("nodeAffinity", {})[_PREFERRED] = preferred_node
    for key, preferred in (("podAffinity", "preferredPodAffinity"), ("podAntiAffinity", "preferredPodAntiAffinity")):
        part: JSON = {}
        if terms := e.mappings(key):
            part[_REQUIRED] = terms
        if weighted := e.mappings(preferred):
            part[_PREFERRED] = weighted
        if part:
            out[key] = part
    return out


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def render(task: TaskSpec, job: JobFacts, name: str, now: float) -> tuple[JSON, JSON | None]:
    """The task's Pod in `job` under pod name `name`, and its BindRequest when the task is Binding."""
    node_name = task.node if task.status in PLACED else ""
    metadata = meta.metadata(
        "Pod",
        name,
        namespace=job.namespace,
        created=job.created,
        labels=_labels(task, job, node_name),
        annotations=_annotations(task, job, node_name),
    )
    if job.owner is not None:
        metadata["ownerReferences"] = [dict(job.owner)]
    deletion_ago = DELETION_AGO.get(task.status, 0.0 if job.deleted else None)
    if deletion_ago is not None:
        metadata["deletionTimestamp"] = format_time(now - deletion_ago)
        metadata["deletionGracePeriodSeconds"] = DELETION_GRACE_SECONDS
    status: JSON = {"phase": PHASE.get(task.status, "Pending")}
    if task.status == "Pipelined":
        status["nominatedNodeName"] = task.node
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": _spec(task, job, node_name),
        "status": status,
    }
    if task.status != "Binding":
        return pod, None
    return pod, _bind_request(task, metadata, now)


def _labels(task: TaskSpec, job: JobFacts, node_name: str) -> dict[str, str]:
    labels = {**task.labels, constants.LABEL_QUEUE: job.queue}
    if task.sub_group:
        labels[constants.LABEL_SUBGROUP_NAME] = task.sub_group
    if task.task_priority is not None:
        labels[constants.LABEL_TASK_PRIORITY] = str(task.task_priority)
    if node_name and task.gpu_groups:
        labels[constants.LABEL_GPU_GROUP] = task.gpu_groups[0]
        if len(task.gpu_groups) > 1:  # a multi-device fraction: one runai-gpu-group/<group> label per GPU
            labels.update({f"{constants.LABEL_GPU_GROUP}/{g}": g for g in task.gpu_groups})
    return labels


def _annotations(task: TaskSpec, job: JobFacts, node_name: str) -> dict[str, str]:
    annotations = {**task.annotations, constants.ANNOTATION_POD_GROUP_NAME: job.name}
    if 0 < task.gpus < 1:
        annotations[constants.ANNOTATION_GPU_FRACTION] = quantity.format_count(task.gpus)
    if task.gpu_memory is not None:
        annotations[constants.ANNOTATION_GPU_MEMORY] = str(task.gpu_memory)
    if task.gpu_devices is not None:
        annotations[constants.ANNOTATION_GPU_FRACTION_NUM_DEVICES] = str(task.gpu_devices)
    if task.terminates_after:
        annotations[constants.ANNOTATION_FAKE_TERMINATES_AFTER] = task.terminates_after
    if node_name and (task.is_fraction or task.mig):  # the binder marks what it bound
        annotations[constants.ANNOTATION_RECEIVED_RESOURCE_TYPE] = task.resource_type
    return annotations


def _spec(task: TaskSpec, job: JobFacts, node_name: str) -> JSON:
    resources: dict[str, Any] = {}
    if task.requests:
        resources["requests"] = dict(task.requests)
    limits = {n: v for n, v in task.requests.items() if n == constants.RESOURCE_GPU or mig_api.is_mig_resource(n)}
    if limits:  # extended resources are requested through limits
        resources["limits"] = limits
    spec: JSON = {"schedulerName": constants.DEFAULT_SCHEDULER_NAME}
    if job.priority_class:
        spec["priorityClassName"] = job.priority_class
        spec["priority"] = job.priority
    container: JSON = {"name": "main", "image": CONTAINER_IMAGE}
    if resources:
        container["resources"] = resources
    spec["containers"] = [container]
    if node_name:
        spec["nodeName"] = node_name
    if task.node_selector:
        spec["nodeSelector"] = dict(task.node_selector)
    if task.affinity:
        spec["affinity"] = task.affinity
    if task.tolerations:
        spec["tolerations"] = task.tolerations
    if task.status == "Gated":
        spec["schedulingGates"] = [{"name": GATE}]
    return spec


def _bind_request(task: TaskSpec, pod_metadata: JSON, now: float) -> JSON:
    """The scheduler's BindRequest for a Binding task (§1.3): Regular, Fraction with its portion, or
    MigInstance."""
    pod_meta = ObjectMeta(name=pod_metadata["name"], namespace=pod_metadata["namespace"], uid=pod_metadata["uid"])
    if task.is_fraction:
        count, portion, kind = task.gpu_devices or 1, task.portion, "Fraction"
    else:
        count, portion, kind = int(task.gpus), 1.0 if task.gpus else 0.0, task.resource_type
    request = bindrequest.for_pod(
        pod_meta, task.node, gpu_count=count, portion=portion, groups=task.gpu_groups, resource_type=kind
    ).to_dict()
    written = request["metadata"]
    request["metadata"] = {
        **meta.metadata("BindRequest", pod_meta.name, namespace=pod_meta.namespace, created=now),
        **written,
    }
    return request


def _portion(
    e: Entry, status: str, node: str, gpus: float, gpu_memory: int | None, nodes: dict[str, int | None]
) -> float:
    """The GPU portion a BindRequest carries: `gpus`, or gpuMemory over the node's per-GPU memory.

    KAI rejects `gpu-memory` on a node without the GPU memory label, so a Binding one there is an error."""
    if gpu_memory is None or status != "Binding":
        return gpus
    node_memory = nodes.get(node)
    if not node_memory:
        raise e.error("gpuMemory", f"node {node!r} has no gpuMemory to take {gpu_memory} MiB from")
    return min(1.0, gpu_memory / node_memory)
