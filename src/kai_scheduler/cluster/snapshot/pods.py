"""What a pod yields in a snapshot: its record (what the parsed pod yields alone on one resource axis, carried
across builds while the pod object is the same), its placement and status (§3.2, with its BindRequest), its
PodInfo, and the problems of pods (on a missing node, or failed to parse)."""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass

from kai_scheduler.api import constants, mig
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import Placement, PodInfo, PodUID
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.resources import GPU, ResourceAxis, Vector, gpu_portion
from kai_scheduler.cluster.snapshot.inputs import Problem, SnapshotParams
from kai_scheduler.cluster.snapshot.model import Snapshot


@dataclass(slots=True, eq=False)
class PodRecord:
    """What one parsed pod yields on one resource axis, whatever the rest of the cluster is."""

    pod: Pod
    axis: tuple[str, ...]
    min_gpu_memory: float
    uid: PodUID
    request: Vector  # read-only: shared by the PodInfos of successive cycles
    subgroup: str
    task_priority: int | None
    memory_portion: float
    group: str | None  # the pod-group-name annotation
    placement_br: BindRequest | None = None
    placement: Placement | None = None  # when it depends on the pod and its BindRequest only
    queue_cache: tuple[float, Vector] | None = None  # the last PodInfo's, for the next (see PodInfo)


# A pod's requests as the key of its request vector: whether its GPUs go uncharged (shared devices, reservation
# pods), its resource names in the order parsed, and their amounts' bytes (0 and -0 compare equal, yet differ).
RequestKey = tuple[bool, tuple[str, ...], bytes]


def pod_record(
    axis: ResourceAxis,
    min_gpu_memory: float,
    pod: Pod,
    records: dict[str, PodRecord],
    vectors: dict[RequestKey, Vector],
) -> PodRecord:
    """The pod's record: the one in `records` while the pod, the axis and the smallest GPU memory are the same,
    else a new one, put in `records`; its request vector is shared with the pods of equal requests (`vectors`:
    one build's, on `axis`)."""
    key = pod.meta.key
    record = records.get(key)
    if (
        record is not None
        and record.pod is pod
        and record.axis == axis.names
        and record.min_gpu_memory == min_gpu_memory
    ):
        return record
    record = PodRecord(
        pod=pod,
        axis=axis.names,
        min_gpu_memory=min_gpu_memory,
        uid=PodUID(pod.meta.uid or key),
        request=request_vector(axis, pod, vectors),
        subgroup=pod.meta.labels.get(constants.LABEL_SUBGROUP_NAME, ""),
        task_priority=_task_priority(pod),
        memory_portion=_memory_portion(pod, min_gpu_memory),
        group=pod.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME),
    )
    records[key] = record
    return record


def request_vector(axis: ResourceAxis, pod: Pod, vectors: dict[RequestKey, Vector]) -> Vector:
    """The pod's request on `axis`, read-only: the vector in `vectors` of a pod with the same requests to the bit,
    else a new one put there."""
    uncharged = pod.gpu.is_shared or pod.namespace == constants.RESERVATION_NAMESPACE
    amounts = pod.requests
    key = (uncharged, tuple(amounts), struct.pack(f"{len(amounts)}d", *amounts.values()))
    request = vectors.get(key)
    if request is None:
        request = vectors[key] = _new_request(axis, amounts, uncharged)
    return request


def _new_request(axis: ResourceAxis, amounts: dict[str, float], uncharged: bool) -> Vector:
    request = axis.vector(amounts)
    if uncharged:
        request[GPU] = 0.0  # shared devices are charged through GPU groups (§6)
    request.flags.writeable = False
    return request


def record_placement(record: PodRecord, br: BindRequest | None, params: SnapshotParams) -> Placement:
    """The pod's placement; kept on its record unless it depends on the time (a pod being deleted)."""
    if record.placement is not None and record.placement_br is br:
        return record.placement
    placement = _pod_placement(record.pod, br, params)
    if record.pod.meta.deletion_timestamp is None:
        record.placement, record.placement_br = placement, br
    return placement


def new_task(record: PodRecord, placement: Placement) -> PodInfo:
    """The PodInfo of a pod from what its record keeps (a new one each build: sessions change it)."""
    pod = record.pod
    return PodInfo(
        uid=record.uid,
        name=pod.name,
        namespace=pod.namespace,
        pod=pod,
        job_uid="",
        placement=placement,
        request=record.request,
        gpu=pod.gpu,
        subgroup=record.subgroup,
        task_priority=record.task_priority,
        creation=pod.meta.creation_timestamp or 0.0,
        memory_portion=record.memory_portion,
        queue_cache=record.queue_cache,
    )


def classify_bind_requests(
    brs: list[BindRequest], nodes: dict[str, NodeInfo]
) -> tuple[dict[str, BindRequest], list[BindRequest]]:
    """The live BindRequests by their pod's key (the last of a pod's, in the given order) and the stale ones:
    failed, or naming a node that is not in `nodes`."""
    live, stale = {}, []
    for br in brs:
        if br.is_failed or br.selected_node not in nodes:
            stale.append(br)
        else:
            live[f"{br.meta.namespace}/{br.pod_name}"] = br
    return live, stale


def missing_node(key: str, node: str) -> Problem:
    """A pod of ours on a node this snapshot does not have: the node was deleted (its pods remain until the pod
    garbage collector removes them), or it is in another node pool (`report_bad_pods` says so when the node is
    there but refused)."""
    return Problem(
        "Pod",
        key,
        "NodeDoesNotExist",
        f"pod is on node {node!r}, which does not exist or is not in this node pool",
        node=node,
    )


def report_bad_pods(snap: Snapshot, problems: list[Problem]) -> None:
    """A pod that failed to parse (e.g. gpu-fraction "1.5") is missing from its PodGroup: the job is held with
    the pod's error as its reason (`PodSchedulingErrors`), instead of silently waiting short of a pod. A pod on
    a node that failed to parse is told the node's error rather than that the node is not there."""
    refused = {p.key: p.message for p in problems if p.kind == "Node"}
    if refused:
        snap.problems = [
            dataclasses.replace(p, message=f"pod is on node {p.node!r}, which the scheduler refused: {refused[p.node]}")
            if p.reason == "NodeDoesNotExist" and p.node in refused
            else p
            for p in snap.problems
        ]
    bad: dict[str, list[Problem]] = {}
    for p in problems:
        if p.kind == "Pod" and p.pod_group:
            bad.setdefault(f"{p.key.rpartition('/')[0]}/{p.pod_group}", []).append(p)
    if not bad:
        return
    for job in snap.jobs.values():
        for p in bad.get(job.key, []):
            snap.job_problems.setdefault(job.uid, []).append(
                Problem("PodGroup", job.key, constants.REASON_POD_SCHEDULING_ERRORS, p.message)
            )


def _pod_placement(pod: Pod, br: BindRequest | None, params: SnapshotParams) -> Placement:
    if br is not None and not br.is_for(pod.meta.uid):
        br = None  # an earlier pod's of the same name: this pod has none yet (the commit replaces it)
    deleting = pod.meta.deletion_timestamp
    if pod.phase in ("Succeeded", "Failed", "Unknown"):
        return Placement(
            {"Succeeded": PodStatus.SUCCEEDED, "Failed": PodStatus.FAILED}.get(pod.phase, PodStatus.UNKNOWN),
            pod.node_name,
        )
    if deleting is not None:  # deletion first, as KAI: a pod being deleted is never placed again
        stuck = params.now - deleting > params.stuck_in_releasing_seconds
        node = pod.node_name or (br.selected_node if br is not None else "")
        groups = _gpu_groups(pod) if pod.node_name else (br.selected_gpu_groups if br is not None else ())
        recorded = _mig_record(pod, pod.meta if pod.node_name or br is None else br.meta)
        return Placement(PodStatus.STUCK_IN_RELEASING if stuck else PodStatus.RELEASING, node, groups, mig=recorded)
    if pod.phase == "Running":
        return Placement(PodStatus.RUNNING, pod.node_name, _gpu_groups(pod), mig=_mig_record(pod, pod.meta))
    if pod.node_name:
        return Placement(PodStatus.BOUND, pod.node_name, _gpu_groups(pod), mig=_mig_record(pod, pod.meta))
    if br is not None:
        return Placement(PodStatus.BINDING, br.selected_node, br.selected_gpu_groups, mig=_mig_record(pod, br.meta))
    if pod.scheduling_gated:
        return Placement(PodStatus.GATED)
    return Placement(PodStatus.PENDING)


def _mig_record(pod: Pod, meta: ObjectMeta) -> tuple[tuple[str, int], ...]:
    """The MIG instances recorded for a MIG pod on `meta` (its own, or its BindRequest's)."""
    return mig.parse_instances(meta.annotations.get(mig.ANNOTATION_INSTANCES)) if pod.gpu.mig else ()


def _gpu_groups(pod: Pod) -> tuple[str, ...]:
    if not pod.gpu.is_shared:
        return ()
    labels = pod.meta.labels
    groups = [v for k, v in sorted(labels.items()) if k.startswith(constants.LABEL_GPU_GROUP + "/")]
    if constants.LABEL_GPU_GROUP in labels:
        groups.insert(0, labels[constants.LABEL_GPU_GROUP])
    return tuple(groups)


def _task_priority(pod: Pod) -> int | None:
    raw = pod.meta.labels.get(constants.LABEL_TASK_PRIORITY)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _memory_portion(pod: Pod, min_gpu_memory: float) -> float:
    return gpu_portion(pod.gpu.memory_mib, min_gpu_memory) if pod.gpu.memory_mib else 0.0
