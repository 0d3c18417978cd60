"""A snapshot built from nothing, every record new (§3.1): nodes → node arrays; live BindRequests; pods → PodInfo
with their status and node; queues → the tree (a queue with a missing parent, or in a parent cycle, is dropped
with its subtree and reported); PodGroups → JobInfo with priority, preemptibility and the subgroup tree. Nothing
here raises on a bad object: each problem becomes a `Problem` naming the object, and the rest is built."""

from __future__ import annotations

from collections.abc import Mapping

from kai_scheduler.api import constants
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.cluster.node_info import NodeInfo, charge_nodes
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import ACTIVE_USED, within
from kai_scheduler.cluster.queue_charge import queue_charges
from kai_scheduler.cluster.resources import ResourceAxis, Vector, gpu_portion
from kai_scheduler.cluster.snapshot.inputs import ClusterObjects, Problem, SnapshotParams
from kai_scheduler.cluster.snapshot.jobs import (
    backed_off,
    global_default_priority,
    group_record,
    new_job,
    priority_values,
    unassigned_problem,
    watches_staleness,
)
from kai_scheduler.cluster.snapshot.model import Snapshot
from kai_scheduler.cluster.snapshot.pods import (
    PodRecord,
    RequestKey,
    classify_bind_requests,
    missing_node,
    new_task,
    pod_record,
    record_placement,
    report_bad_pods,
)
from kai_scheduler.cluster.snapshot.pools import labelled_gpu_memory, node_arrays, pod_in_pool, pool_nodes
from kai_scheduler.cluster.snapshot.queues import (
    QueueNotes,
    access_labels,
    access_problem,
    queue_problem,
    queue_tree,
    refused_queues,
)


def build_full(objects: ClusterObjects, params: SnapshotParams) -> Snapshot:
    """The snapshot of `objects` (of this pool, with their DRA device counts), every record made anew."""
    problems = list(objects.problems)
    problems += [Problem("Queue", q.name, "InvalidField", w) for q in objects.queues for w in q.warnings]
    problems += [Problem("PodGroup", pg.meta.key, "InvalidField", w) for pg in objects.podgroups for w in pg.warnings]
    pool = pool_nodes(objects.nodes, params, None)
    axis = ResourceAxis(pool.resources | {r for p in objects.pods for r in p.requests})
    arrays, node_infos = node_arrays(pool, axis)
    by_name = {n.name: n for n in node_infos}
    priorities = priority_values(objects.priority_classes)
    left_out: dict[str, str] = {}
    queues = queue_tree(objects.queues, problems, left_out)
    live_brs, stale_brs = classify_bind_requests(objects.bind_requests, by_name)
    tasks: dict[str, PodInfo] = {}
    snap = Snapshot(
        now=params.now,
        params=params,
        axis=axis,
        nodes=node_infos,
        node_by_name=by_name,
        arrays=arrays,
        tasks=tasks,
        jobs={},
        queues=queues,
        priority_classes=priorities,
        topologies={t.meta.name: t for t in objects.topologies},
        bind_requests=live_brs,
        stale_bind_requests=stale_brs,
        job_problems={},
        problems=problems,
        other_usage=axis.zeros(),
        min_gpu_memory=labelled_gpu_memory(arrays, min),
        max_gpu_memory=labelled_gpu_memory(arrays, max),
        node_memo=pool.memo,
    )
    pods_by_group = _add_pods(snap, tasks, objects.pods, problems)
    labels = access_labels(objects, params)
    notes = QueueNotes(left_out, objects.other_pool_queues, refused_queues(objects.problems))
    _add_jobs(
        snap,
        objects.podgroups,
        pods_by_group,
        problems,
        global_default_priority(objects.priority_classes),
        labels,
        notes,
    )
    snap.queue_charges = queue_charges(snap.jobs.values())
    report_bad_pods(snap, objects.problems)
    return snap


def _add_pods(
    snap: Snapshot, tasks: dict[str, PodInfo], pods: list[Pod], problems: list[Problem]
) -> dict[str, list[PodInfo]]:
    """Create PodInfos (ours of a PodGroup into `tasks`, the snapshot's), charge on-node pods to their nodes;
    return our pods by PodGroup key."""
    by_group: dict[str, list[PodInfo]] = {}
    records: dict[str, PodRecord] = {}
    vectors: dict[RequestKey, Vector] = {}
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        record = pod_record(snap.axis, snap.min_gpu_memory, pod, records, vectors)
        ours = pod.scheduler_name == snap.params.scheduler_name
        placement = record_placement(record, snap.bind_requests.get(pod.meta.key) if ours else None, snap.params)
        info = new_task(record, placement)
        on_node = within(placement.status, ACTIVE_USED) and bool(placement.node)
        if on_node:
            node = snap.node_by_name.get(placement.node)
            if node is None:
                if ours and pod_in_pool(pod, snap.params):
                    problems.append(missing_node(pod.meta.key, placement.node))
                continue
            if placement.gpu_groups:
                info.memory_portion = gpu_portion(pod.gpu.memory_mib, node.gpu_memory_mib) if pod.gpu.memory_mib else 0
            charged.append((node, info, placement))
            if not ours and pod.namespace != constants.RESERVATION_NAMESPACE:
                snap.other_usage += record.request
        in_tasks = ours and bool(record.group)
        if in_tasks:
            tasks[str(info.uid)] = info
            by_group.setdefault(f"{pod.namespace}/{record.group}", []).append(info)
        if on_node or in_tasks:
            _note_affinity(snap, info)
    charge_nodes(snap.arrays, charged)
    return by_group


def _note_affinity(snap: Snapshot, info: PodInfo) -> None:
    """List a pod on a node or among the tasks if it declares pod anti-affinity or preferred pod (anti-)affinity."""
    pod = info.pod
    if pod.pod_anti_affinity:
        snap.anti_affine.append(info)
    if pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity:
        snap.soft_affine.append(info)


def _add_jobs(
    snap: Snapshot,
    podgroups: list[PodGroup],
    pods: dict[str, list[PodInfo]],
    problems: list[Problem],
    default_priority: int,
    labels: Mapping[str, Mapping[str, str]],
    notes: QueueNotes,
) -> None:
    for pg in sorted(podgroups, key=lambda g: (g.meta.namespace, g.name)):
        record = group_record(pg, {})
        if backed_off(pg, snap.params):
            continue
        job = new_job(pg, record, snap.priority_classes, default_priority, pods.get(pg.meta.key, []))
        snap.jobs[job.uid] = job
        if job.has_pending():
            snap.waiting.append(job)
        if watches_staleness(job):
            snap.stale_watch.append(job)
        if (missing := queue_problem(pg, snap.queues, notes, snap.params)) is not None:
            snap.job_problems[job.uid] = [missing]
        elif (refused := access_problem(pg, snap.queues, labels, snap.params)) is not None:
            snap.job_problems[job.uid] = [refused]
        if job.unassigned:
            problems.append(unassigned_problem(pg, job))
