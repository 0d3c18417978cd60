"""The incremental build: a snapshot from the carried model, brought up to date in place, so that a build costs in
proportion to what changed.

`builder.build` with a `Memo` (the scheduler's path) lands here. The carried model (`carried.CarriedModel`:
every PodInfo, JobInfo with its subgroup tree, NodeInfo and the node ledgers, and the snapshot's dicts) stays in
the memo between builds and is brought up to date in place:

- objects are matched by identity: the cache replaces an object when its resourceVersion changes, so a pod,
  PodGroup or BindRequest that is not the same object as last time is derived again, with what depends on it
  (its job, the ledger rows of its nodes, the snapshot's dicts: `derive`);
- what the last snapshot's users changed is undone first: the model hands every snapshot its change log
  (`changes.ChangeLog`: placements and GPU portions of tasks, stale timestamps of jobs, each before and after),
  whose changes are reverted newest first; the rows, tasks and GPU groups of the nodes its moves reached are
  recomputed from their tasks in pod order, so the ledgers are bit for bit those of a build from nothing;
- a change that reaches every record (the node set, the resource axis, the parameters, priority classes, the
  queue tree's shape, objects that failed to parse) starts a model from nothing; the records of what one object
  yields alone (`pods.PodRecord`, `jobs.GroupRecord`, the pool's nodes and their fresh ledgers) still serve then.

A model is changed in place only when nobody holds the last snapshot built on it (a weak reference): a reader
that keeps a snapshot (`kai schedule` compares the first one with the last; the simulator's metrics read a
cycle's result) sees it unchanged, and the next build makes new records instead. The operations of a cycle's
result name tasks that later builds may change: their `before` and `after` placements are the record.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping

from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.cluster.node_info import NodeInfo, charge_nodes
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import ResourceAxis, Vector
from kai_scheduler.cluster.snapshot.carried import CarriedModel
from kai_scheduler.cluster.snapshot.derive import rederive
from kai_scheduler.cluster.snapshot.entries import (
    count_extended_resources,
    link_group,
    link_pod,
    pod_entry,
    unlink_group,
    unlink_pod,
)
from kai_scheduler.cluster.snapshot.inputs import ClusterObjects, Problem, SnapshotParams
from kai_scheduler.cluster.snapshot.jobs import global_default_priority, priority_values
from kai_scheduler.cluster.snapshot.memo import Memo
from kai_scheduler.cluster.snapshot.model import Snapshot
from kai_scheduler.cluster.snapshot.pods import PodRecord, RequestKey, report_bad_pods
from kai_scheduler.cluster.snapshot.pools import PoolNodes, labelled_gpu_memory, node_arrays, pool_nodes
from kai_scheduler.cluster.snapshot.queues import QueueNotes, QueueTree, access_labels, refused_queues
from kai_scheduler.cluster.snapshot.sorted_keys import SortKey


def build_incremental(objects: ClusterObjects, params: SnapshotParams, memo: Memo) -> Snapshot:
    """The snapshot of `objects` (of this pool, with their DRA device counts) from the memo's carried model,
    brought up to date in place when nobody holds its last snapshot, else made anew (and carried from then on)."""
    problems = list(objects.problems)
    problems += [Problem("Queue", q.name, "InvalidField", w) for q in objects.queues for w in q.warnings]
    pool = memo.pool_nodes = pool_nodes(objects.nodes, params, memo.pool_nodes)
    carried_tree = memo.queue_tree = QueueTree.of(objects.queues, memo.queue_tree)
    queues, queue_problems, left_out = dict(carried_tree.tree), list(carried_tree.problems), dict(carried_tree.left_out)
    notes = QueueNotes(left_out, objects.other_pool_queues, refused_queues(objects.problems))
    labels = access_labels(objects, params)
    signature = (
        dataclasses.replace(params, now=0.0),
        tuple(objects.problems),
        tuple((name, q.parent, q.is_leaf) for name, q in queues.items()),
        _access_signature(queues, labels),
        notes.signature(),
    )
    model = memo.carried
    if model is not None and _reusable(model, signature, pool, objects):
        model.queues = queues
        if not apply_changes(model, objects, params):
            model = None
    else:
        model = None
    if model is None:
        model = memo.carried = new_model(objects, params, memo, pool, signature, queues, labels, notes)
    model.marks = dict(objects.marks)
    if model.warned:  # PodGroups with warnings, in the objects' order (none: no pass over every PodGroup)
        problems += [
            Problem("PodGroup", pg.meta.key, "InvalidField", w) for pg in objects.podgroups for w in pg.warnings
        ]
    problems += queue_problems
    problems += [model.pod_problems[k] for k in sorted(model.pod_problems)]
    problems += [model.group_problems[k] for k in sorted(model.group_problems)]
    waiting = [model.jobs[uid] for uid in sorted(model.waiting, key=lambda uid: _job_sort_key(model, uid))]
    snap = Snapshot(
        now=params.now,
        params=params,
        axis=model.axis,
        nodes=model.nodes,
        node_by_name=model.node_by_name,
        arrays=model.arrays,
        tasks=model.tasks,
        jobs=model.jobs,
        queues=queues,
        priority_classes=dict(model.priorities),
        topologies={t.meta.name: t for t in objects.topologies},
        bind_requests=dict(model.bind_requests.live),
        stale_bind_requests=list(model.bind_requests.stale),
        job_problems={},
        problems=problems,
        other_usage=model.other_usage.copy() if model.other_usage is not None else model.axis.zeros(),
        min_gpu_memory=model.min_gpu_memory,
        max_gpu_memory=model.max_gpu_memory,
        node_memo=pool.memo,
        plugin_memo=memo.plugins,
        task_log=model.task_log,
        task_mark=model.task_log.end,
        waiting=waiting,
        changes=model.changes,
        anti_affine=[e.info for e in model.anti_affine.values()],
        soft_affine=[e.info for e in model.soft_affine.values()],
        queue_charges=dict(model.queue_charges),
        stale_watch=[model.jobs[uid] for uid in sorted(model.stale_watch, key=lambda uid: _job_sort_key(model, uid))],
    )
    for k in sorted(model.queue_problems):
        uid, problem = model.queue_problems[k]
        snap.job_problems[uid] = [problem]
    report_bad_pods(snap, objects.problems)
    model.last_snapshot = weakref.ref(snap)
    return snap


def _access_signature(queues: dict[str, QueueInfo], labels: dict[str, Mapping[str, str]]) -> tuple[object, ...]:
    """What access control reads (the queues' access, the namespaces' labels): a change rebuilds the model.
    Empty when access control is off (`labels` is empty then, and the queues' access is not read)."""
    if not labels and not any(q.queue.access.restricted for q in queues.values()):
        return ()
    return (
        tuple((name, q.queue.access) for name, q in queues.items()),
        tuple((ns, tuple(sorted(ls.items()))) for ns, ls in sorted(labels.items())),
    )


def _reusable(model: CarriedModel, signature: tuple[object, ...], pool: PoolNodes, objects: ClusterObjects) -> bool:
    """Whether the model may be changed in place: nobody holds its last snapshot, and nothing that every
    record depends on changed."""
    return (
        model.last_snapshot is not None
        and model.last_snapshot() is None
        and model.signature == signature
        and model.pool_nodes is pool
        and pool.axis == model.axis.names
        and len(model.priority_classes) == len(objects.priority_classes)
        and all(a is b for a, b in zip(model.priority_classes, objects.priority_classes, strict=True))
    )


def new_model(
    objects: ClusterObjects,
    params: SnapshotParams,
    memo: Memo,
    pool: PoolNodes,
    signature: tuple[object, ...],
    queues: dict[str, QueueInfo],
    labels: dict[str, Mapping[str, str]],
    notes: QueueNotes,
) -> CarriedModel:
    """A carried model from nothing (new records throughout), reusing what the objects alone yielded before."""
    old = memo.carried
    pod_records = {e.key: e.record for e in old.pods.values()} if old is not None else {}
    group_records = {g.key: g.record for g in old.groups.values()} if old is not None else {}
    axis = ResourceAxis(pool.resources | {r for p in objects.pods for r in p.requests})
    arrays, infos = node_arrays(pool, axis)
    model = CarriedModel(
        signature=signature,
        pool_nodes=pool,
        priority_classes=list(objects.priority_classes),
        priorities=priority_values(objects.priority_classes),
        default_priority=global_default_priority(objects.priority_classes),
        queues=queues,
        namespace_labels=labels,
        queue_notes=notes,
        axis=axis,
        arrays=arrays,
        nodes=infos,
        node_by_name={n.name: n for n in infos},
        min_gpu_memory=labelled_gpu_memory(arrays, min),
        max_gpu_memory=labelled_gpu_memory(arrays, max),
    )
    model.bind_requests.classify_all(objects.bind_requests, model.node_by_name, index=objects.feed is not None)
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    vectors: dict[RequestKey, Vector] = {}
    model.appending = True
    for pod in sorted(objects.pods, key=lambda p: (p.namespace, p.name)):
        e = pod_entry(model, pod, params, pod_records, vectors)
        link_pod(model, e)
        if e.node:
            charged.append((model.node_by_name[e.node], e.info, e.placement))
    model.reached.nodes.clear()
    model.reached.unlinked.clear()
    model.reached.appended.clear()
    charge_nodes(model.arrays, charged)
    for pg in objects.podgroups:
        link_group(model, pg, group_records)
    rederive(model, params)
    model.appending = False
    return model


def apply_changes(model: CarriedModel, objects: ClusterObjects, params: SnapshotParams) -> bool:
    """Bring the model up to date with `objects`; False when the resource axis changed (build from nothing)."""
    changed = _feed_changes(model, objects, "pods")
    if changed is None:  # every pod looked at: the new and the gone by identity
        current = dict(zip(map(id, objects.pods), objects.pods, strict=True))
        gone = [model.pods[i] for i in model.pods.keys() - current.keys()]
        new = [current[i] for i in current.keys() - model.pods.keys()]
    else:  # only the keys the feed says changed
        gone, new = [], []
        for key, obj in changed.items():
            old = model.by_key.get(key)
            if old is not None and old.record.pod is obj:
                continue
            if old is not None:
                gone.append(old)
            if isinstance(obj, Pod):
                new.append(obj)
    counts = dict(model.extended_resource_pods)
    for pods, step in (([e.record.pod for e in gone], -1), (new, 1)):
        for pod in pods:
            count_extended_resources(counts, pod, step)
    if ResourceAxis(model.pool_nodes.resources | {n for n, c in counts.items() if c > 0}).names != model.axis.names:
        return False
    _put_back(model)
    index = model.bind_requests
    brs = _feed_changes(model, objects, "bindrequests") if index.indexed else None
    rebound = (
        index.classify_all(objects.bind_requests, model.node_by_name, index=objects.feed is not None)
        if brs is None
        else index.classify_changed(brs, model.node_by_name)
    )
    for e in gone:
        unlink_pod(model, e)
    records: dict[str, PodRecord] = {}
    vectors: dict[RequestKey, Vector] = {}
    for pod in sorted(new, key=lambda p: (p.namespace, p.name)):
        link_pod(model, pod_entry(model, pod, params, records, vectors))
    again = {k for k in rebound if k in model.by_key} | {model.by_sort_key[k].key for k in model.deleting}
    for key in sorted(again):
        old = model.by_key[key]
        unlink_pod(model, old)
        link_pod(model, pod_entry(model, old.record.pod, params, records, vectors, old.record))
    groups = _feed_changes(model, objects, "podgroups")
    if groups is None:
        groups_now = dict(zip(map(id, objects.podgroups), objects.podgroups, strict=True))
        for i in model.groups.keys() - groups_now.keys():
            unlink_group(model, model.groups[i])
        for i in groups_now.keys() - model.groups.keys():
            link_group(model, groups_now[i], {})
    else:
        for key, pg in groups.items():
            g = model.group_by_key.get(key)
            if g is not None and g.record.podgroup is pg:
                continue
            if g is not None:
                unlink_group(model, g)
            if isinstance(pg, PodGroup):
                link_group(model, pg, {})
    rederive(model, params)
    return True


def _feed_changes(model: CarriedModel, objects: ClusterObjects, resource: str) -> dict[str, object] | None:
    """The objects of `resource` whose keys changed since the model's last build (None: gone), from the objects'
    change feed; None when there is no feed or it does not know."""
    since, until = model.marks.get(resource), objects.marks.get(resource)
    if objects.feed is None or since is None or until is None:
        return None
    return objects.feed.changed(resource, since, until)


def _put_back(model: CarriedModel) -> None:
    """Undo what the last snapshot's users changed in the records (its change log, newest first); the nodes its
    moves reached get their rows recomputed, except those it only added tasks to, which `derive.rederive` may
    keep."""
    reached = model.reached
    appended, other = model.changes.appended()
    for node, tasks in appended.items():
        reached.appended[node] = {(t.namespace, t.name): (t, placement) for t, placement in tasks}
    reached.nodes |= other
    model.changes.undo()


def _job_sort_key(model: CarriedModel, uid: str) -> SortKey:
    job = model.jobs[uid]
    return job.namespace, job.name
