"""A pod's and a PodGroup's entries in the carried model: made as a build from nothing makes their records, and
linked into the model's indexes or out of them, each noting in `CarriedModel.reached` what it reached."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.cluster.pod_status import ACTIVE_USED, BITS
from kai_scheduler.cluster.resources import ResourceAxis, Vector, gpu_portion
from kai_scheduler.cluster.snapshot.carried import CarriedGroup, CarriedModel, CarriedPod
from kai_scheduler.cluster.snapshot.inputs import SnapshotParams
from kai_scheduler.cluster.snapshot.jobs import GroupRecord, group_record
from kai_scheduler.cluster.snapshot.pods import (
    PodRecord,
    RequestKey,
    missing_node,
    new_task,
    pod_record,
    record_placement,
)
from kai_scheduler.cluster.snapshot.pools import pod_in_pool
from kai_scheduler.cluster.snapshot.sorted_keys import insert_sorted, remove_sorted

_BASE = frozenset(ResourceAxis().names)
_ACTIVE_USED = ACTIVE_USED.value


def pod_entry(
    model: CarriedModel,
    pod: Pod,
    params: SnapshotParams,
    records: dict[str, PodRecord],
    vectors: dict[RequestKey, Vector],
    record: PodRecord | None = None,
) -> CarriedPod:
    """The entry of one pod: its PodInfo as a build from nothing makes it, and where it is charged. Its record is
    `record`, else the one in `records` while still true, else a new one (its request vector from `vectors`, the
    build's)."""
    key = pod.meta.key
    if record is None:
        record = pod_record(model.axis, model.min_gpu_memory, pod, records, vectors)
    ours = pod.scheduler_name == params.scheduler_name
    placement = record_placement(record, model.bind_requests.live.get(key) if ours else None, params)
    info = new_task(record, placement)
    e = CarriedPod((pod.namespace, pod.name), key, record, info, placement)
    if BITS[placement.status] & _ACTIVE_USED and placement.node:
        node = model.node_by_name.get(placement.node)
        if node is None:
            if ours and pod_in_pool(pod, params):
                e.problem = missing_node(key, placement.node)
            return e
        if placement.gpu_groups:
            info.memory_portion = gpu_portion(pod.gpu.memory_mib, node.gpu_memory_mib) if pod.gpu.memory_mib else 0
        e.node = node.name
        e.other_scheduler = not ours and pod.namespace != constants.RESERVATION_NAMESPACE
    if ours and record.group:
        e.pod_group = f"{pod.namespace}/{record.group}"
    return e


def link_pod(model: CarriedModel, e: CarriedPod) -> None:
    """Put a pod's entry into the model's indexes."""
    reached = model.reached
    model.pods[id(e.record.pod)] = e
    model.by_sort_key[e.sort_key] = e
    model.by_key[e.key] = e
    count_extended_resources(model.extended_resource_pods, e.record.pod, 1)
    if e.node:
        model.node_pods.setdefault(e.node, {})[e.sort_key] = e
        # New on the node: neither its pod charged again nor a task the session added. A build from nothing
        # (`appending`) charges every node at once.
        if not model.appending and (
            e.sort_key not in reached.unlinked.get(e.node, ()) and e.sort_key not in reached.appended.get(e.node, ())
        ):
            reached.nodes.add(e.node)
    if e.pod_group:
        model.group_pods.setdefault(e.pod_group, {})[e.sort_key] = e
        reached.groups.add(e.pod_group)
        insert_sorted(model.task_keys, e.sort_key, appending=model.appending)
        removed = reached.task_changes.get(e.sort_key)
        reached.task_changes[e.sort_key] = (removed[0] if removed else "", str(e.info.uid))
    if e.other_scheduler:
        insert_sorted(model.other_scheduler_pods, e.sort_key, appending=model.appending)
        reached.other_usage = True
    if e.problem is not None:
        model.pod_problems[e.sort_key] = e.problem
    if e.record.pod.meta.deletion_timestamp is not None:
        model.deleting.add(e.sort_key)
    pod = e.record.pod
    if e.node or e.pod_group:
        if pod.pod_anti_affinity:
            model.anti_affine[e.sort_key] = e
        if pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity:
            model.soft_affine[e.sort_key] = e


def unlink_pod(model: CarriedModel, e: CarriedPod) -> None:
    """Take a pod's entry out of the model's indexes."""
    reached = model.reached
    del model.pods[id(e.record.pod)]
    del model.by_sort_key[e.sort_key]
    del model.by_key[e.key]
    count_extended_resources(model.extended_resource_pods, e.record.pod, -1)
    if e.node:
        del model.node_pods[e.node][e.sort_key]
        reached.unlinked.setdefault(e.node, {}).setdefault(e.sort_key, e)
    if e.pod_group:
        del model.group_pods[e.pod_group][e.sort_key]
        reached.groups.add(e.pod_group)
        remove_sorted(model.task_keys, e.sort_key)
        reached.task_changes.setdefault(e.sort_key, (str(e.info.uid), ""))
    if e.other_scheduler:
        remove_sorted(model.other_scheduler_pods, e.sort_key)
        reached.other_usage = True
    model.pod_problems.pop(e.sort_key, None)
    model.deleting.discard(e.sort_key)
    model.anti_affine.pop(e.sort_key, None)
    model.soft_affine.pop(e.sort_key, None)


def link_group(model: CarriedModel, pg: PodGroup, records: dict[str, GroupRecord]) -> None:
    """Put a PodGroup's entry into the model's indexes; its job is rebuilt by `derive.rederive`."""
    g = CarriedGroup((pg.meta.namespace, pg.name), pg.meta.key, group_record(pg, records))
    model.groups[id(pg)] = g
    if pg.warnings:
        model.warned.add(id(pg))
    model.group_by_key[g.key] = g
    model.reached.groups.add(g.key)


def unlink_group(model: CarriedModel, g: CarriedGroup) -> None:
    """Take a PodGroup's entry out of the model's indexes. Its job stays in `jobs` until the PodGroup's key is
    rebuilt: a new version of it takes the same place."""
    del model.groups[id(g.record.podgroup)]
    model.warned.discard(id(g.record.podgroup))
    if model.group_by_key.get(g.key) is g:
        del model.group_by_key[g.key]
    model.reached.groups.add(g.key)


def count_extended_resources(counts: dict[str, int], pod: Pod, step: int) -> None:
    """Add `step` to the count of each extended resource (beyond the base axis) that `pod` requests."""
    for name in pod.requests:
        if name not in _BASE:
            counts[name] = counts.get(name, 0) + step
