"""The snapshot kept from one build to the next, so that a build costs in proportion to what changed.

`snapshot.build` with a `Memo` (the scheduler's path) lands here. The model (every PodInfo, JobInfo with its
subgroup tree, NodeInfo and the node ledgers, and the snapshot's dicts) stays in the memo between builds and
is brought up to date in place:

- objects are matched by identity: the cache replaces an object when its resourceVersion changes, so a pod,
  PodGroup or BindRequest that is not the same object as last time is derived again, with what depends on it
  (its job, the ledger rows of its nodes, the snapshot's dicts);
- what the last session changed is put back as the objects say: placements and GPU portions of tasks, stale
  timestamps of jobs, and the rows, tasks and GPU groups of the nodes it moved tasks on (recomputed from
  their tasks in pod order, so the ledgers are bit for bit those of a build from nothing);
- a change that reaches every record (the node set, the resource axis, the parameters, priority classes, the
  queue tree's shape, objects that failed to parse) starts a model from nothing; the per-object derivations of
  the memo still serve then.

A model is changed in place only when nobody holds the last snapshot built on it (a weak reference): a reader
that keeps a snapshot (`kai schedule` compares the first one with the last; the simulator's metrics read a
cycle's result) sees it unchanged, and the next build makes new records instead. The operations of a cycle's
result name tasks that later builds may change: their `before` and `after` placements are the record.
"""

from __future__ import annotations

import bisect
import dataclasses
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.cluster import snapshot as s
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo, charge_nodes
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import ACTIVE_USED, BITS
from kai_scheduler.cluster.queue_charge import KeptSums, QueueCharge, Rows, job_rows
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import ResourceAxis, Vector, gpu_portion

Key = tuple[str, str]  # (namespace, name): the order of pods and jobs in a snapshot
_K = TypeVar("_K", Key, str)
_BASE = frozenset(ResourceAxis().names)
_ACTIVE_USED = ACTIVE_USED.value


@dataclass(slots=True, eq=False)
class _Pod:
    """One pod in the model and what it contributes to it."""

    key: Key
    skey: str  # namespace/name
    record: s._PodRecord
    info: PodInfo
    placement: Placement  # as the objects say; a session's moves are put back to it
    portion: float  # the GPU-memory portion the objects give it
    node: str = ""  # charged on this node's ledgers
    group: str = ""  # namespace/podgroup of our pod that belongs in the snapshot's tasks
    other: bool = False  # counted in other_usage (another scheduler's active pod)
    problem: s.Problem | None = None


@dataclass(slots=True, eq=False)
class _Group:
    key: Key
    skey: str
    record: s._GroupRecord
    job: JobInfo | None = None  # None while backed off


@dataclass(slots=True, eq=False)
class Model:
    """The records of the last build and the indexes that find what a change reaches."""

    signature: tuple[object, ...]
    pooled: s._NodesRecord
    priority_classes: list[PriorityClass]
    priorities: dict[str, int]
    default_priority: int
    queues: dict[str, QueueInfo]
    namespace_labels: dict[str, Mapping[str, str]]  # queue access control's; in the signature
    queue_notes: s.QueueNotes  # why a named queue is not in the tree; in the signature
    axis: ResourceAxis
    arrays: NodeArrays
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    min_gpu_memory: float
    max_gpu_memory: float
    pods: dict[int, _Pod] = field(default_factory=dict)  # by id() of the pod object
    by_key: dict[Key, _Pod] = field(default_factory=dict)
    by_skey: dict[str, _Pod] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)  # pods per extended resource they request
    node_pods: dict[str, dict[Key, _Pod]] = field(default_factory=dict)
    members: dict[str, dict[Key, _Pod]] = field(default_factory=dict)
    task_keys: list[Key] = field(default_factory=list)  # sorted: the order of `tasks`
    tasks: dict[str, PodInfo] = field(default_factory=dict)
    others: list[Key] = field(default_factory=list)
    other_usage: Vector | None = None
    timed: set[Key] = field(default_factory=set)  # placements that depend on the time
    pod_problems: dict[Key, s.Problem] = field(default_factory=dict)
    groups: dict[int, _Group] = field(default_factory=dict)
    warned: set[int] = field(default_factory=set)  # keys of `groups` whose PodGroups carry warnings
    group_by_skey: dict[str, _Group] = field(default_factory=dict)
    job_keys: list[Key] = field(default_factory=list)  # sorted: the order of `jobs`
    job_of: dict[str, JobInfo] = field(default_factory=dict)  # PodGroup key → its job in `jobs`
    queue_keys: dict[str, list[Key]] = field(default_factory=dict)  # queue → its jobs' keys, sorted
    charges: dict[str, QueueCharge] = field(default_factory=dict)
    rows: dict[str, Rows] = field(default_factory=dict)  # PodGroup key → its job's rows
    sums: dict[str, KeptSums] = field(default_factory=dict)  # queue → its sums after each of its jobs
    dirty_queues: dict[str, Key] = field(default_factory=dict)  # queue → the first of its job keys that changed
    group_problems: dict[Key, s.Problem] = field(default_factory=dict)  # of jobs, by job key
    queue_problems: dict[Key, tuple[str, s.Problem]] = field(default_factory=dict)  # job key → (uid, problem)
    bulk: bool = False  # a build from nothing: keys arrive in order, appended
    task_changes: dict[Key, tuple[str, str]] = field(default_factory=dict)  # key → (uid removed, uid added)
    task_log: s.TaskLog = field(default_factory=s.TaskLog)  # the uids of `task_changes`, build after build
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)
    stale_watch: set[str] = field(default_factory=set)
    live_brs: dict[str, BindRequest] = field(default_factory=dict)  # pod key → its BindRequest
    stale_brs: list[BindRequest] = field(default_factory=list)  # failed, or naming a node that is not there
    # With a change feed (`ClusterObjects.feed`): its marks at the last build, and the BindRequests indexed so
    # that a changed one is classified alone (`brs_indexed` False: not kept, every request is looked at).
    marks: dict[str, object] = field(default_factory=dict)
    brs_indexed: bool = False
    brs: dict[str, BindRequest] = field(default_factory=dict)  # by the request's own key
    br_pods: dict[str, set[str]] = field(default_factory=dict)  # pod key → keys of the requests naming it
    stale_keys: list[str] = field(default_factory=list)  # keys of `stale_brs`, sorted
    touched: set[str] = field(default_factory=set)  # nodes the last session moved tasks on
    written: set[str] = field(default_factory=set)  # jobs whose task records the last snapshot's users changed
    anti: dict[Key, _Pod] = field(default_factory=dict)  # pods on nodes or in `tasks` with pod anti-affinity
    soft: dict[Key, _Pod] = field(default_factory=dict)  # the same, with preferred pod (anti-)affinity
    last: weakref.ref[s.Snapshot] | None = None
    # Per build: what the changes reached.
    dirty_nodes: set[str] = field(default_factory=set)
    dirty_groups: set[str] = field(default_factory=set)
    jobs_added: list[Key] = field(default_factory=list)  # keys whose jobs this build appended to `jobs`
    others_changed: bool = False


def build(objects: s.ClusterObjects, params: s.SnapshotParams, memo: s.Memo) -> s.Snapshot:
    problems = list(objects.problems)
    problems += [s.Problem("Queue", q.name, "InvalidField", w) for q in objects.queues for w in q.warnings]
    pooled = s._pooled_nodes(objects.nodes, params, memo)
    queue_problems: list[s.Problem] = []
    left_out: dict[str, str] = {}
    queues = s._queue_tree(objects.queues, queue_problems, left_out)
    notes = s.QueueNotes(left_out, objects.other_pool_queues, s.refused_queues(objects.problems))
    labels = s.access_labels(objects, params)
    signature = (
        dataclasses.replace(params, now=0.0),
        tuple(objects.problems),
        tuple((name, q.parent, q.is_leaf) for name, q in queues.items()),
        _access_signature(queues, labels),
        notes.signature(),
    )
    model = memo.model
    if model is not None and _reusable(model, signature, pooled, objects):
        model.queues = queues
        if not _update(model, objects, params):
            model = None
    else:
        model = None
    if model is None:
        model = memo.model = _fresh(objects, params, memo, pooled, signature, queues, labels, notes)
    model.marks = dict(objects.marks)
    if model.warned:  # PodGroups with warnings, in the objects' order (none: no pass over every PodGroup)
        problems += [
            s.Problem("PodGroup", pg.meta.key, "InvalidField", w) for pg in objects.podgroups for w in pg.warnings
        ]
    problems += queue_problems
    problems += [model.pod_problems[k] for k in sorted(model.pod_problems)]
    problems += [model.group_problems[k] for k in sorted(model.group_problems)]
    waiting = [model.jobs[uid] for uid in sorted(model.waiting, key=lambda uid: _key_of(model, uid))]
    snap = s.Snapshot(
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
        bind_requests=dict(model.live_brs),
        stale_bind_requests=list(model.stale_brs),
        job_problems={},
        problems=problems,
        other_usage=model.other_usage.copy() if model.other_usage is not None else model.axis.zeros(),
        min_gpu_memory=model.min_gpu_memory,
        max_gpu_memory=model.max_gpu_memory,
        node_memo=pooled.memo,
        plugin_memo=memo.plugins,
        task_log=model.task_log,
        task_mark=model.task_log.end,
        waiting=waiting,
        touched=model.touched,
        written=model.written,
        anti_affine=[e.info for e in model.anti.values()],
        soft_affine=[e.info for e in model.soft.values()],
        queue_charges=dict(model.charges),
        stale_watch=[model.jobs[uid] for uid in sorted(model.stale_watch, key=lambda uid: _key_of(model, uid))],
    )
    for k in sorted(model.queue_problems):
        uid, problem = model.queue_problems[k]
        snap.job_problems[uid] = [problem]
    s._report_bad_pods(snap, objects.problems)
    model.last = weakref.ref(snap)
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


def _reusable(model: Model, signature: tuple[object, ...], pooled: s._NodesRecord, objects: s.ClusterObjects) -> bool:
    """Whether the model may be changed in place: nobody holds its last snapshot, and nothing that every
    record depends on changed."""
    return (
        model.last is not None
        and model.last() is None
        and model.signature == signature
        and model.pooled is pooled
        and pooled.axis == model.axis.names
        and len(model.priority_classes) == len(objects.priority_classes)
        and all(a is b for a, b in zip(model.priority_classes, objects.priority_classes, strict=True))
    )


def _fresh(
    objects: s.ClusterObjects,
    params: s.SnapshotParams,
    memo: s.Memo,
    pooled: s._NodesRecord,
    signature: tuple[object, ...],
    queues: dict[str, QueueInfo],
    labels: dict[str, Mapping[str, str]],
    notes: s.QueueNotes,
) -> Model:
    """A model from nothing (new records throughout), reusing what the objects alone yielded before."""
    old = memo.model
    pod_records = {e.skey: e.record for e in old.pods.values()} if old is not None else {}
    group_records = {g.skey: g.record for g in old.groups.values()} if old is not None else {}
    axis = ResourceAxis(pooled.resources | {r for p in objects.pods for r in p.requests})
    arrays, infos = s._node_arrays(pooled, axis)
    model = Model(
        signature=signature,
        pooled=pooled,
        priority_classes=list(objects.priority_classes),
        priorities=s._priority_classes(objects.priority_classes),
        default_priority=s._default_priority(objects.priority_classes),
        queues=queues,
        namespace_labels=labels,
        queue_notes=notes,
        axis=axis,
        arrays=arrays,
        nodes=infos,
        node_by_name={n.name: n for n in infos},
        min_gpu_memory=s._gpu_memory(arrays, min),
        max_gpu_memory=s._gpu_memory(arrays, max),
    )
    _index_brs(model, objects)
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    model.bulk = True
    for pod in sorted(objects.pods, key=lambda p: (p.namespace, p.name)):
        e = _enter(model, pod, params, pod_records)
        _link(model, e)
        if e.node:
            charged.append((model.node_by_name[e.node], e.info, e.placement))
    model.dirty_nodes.clear()
    charge_nodes(model.arrays, charged)
    for pg in objects.podgroups:
        _link_group(model, pg, group_records)
    _settle(model, params)
    model.bulk = False
    return model


def _update(model: Model, objects: s.ClusterObjects, params: s.SnapshotParams) -> bool:
    """Bring the model up to date with `objects`; False when the resource axis changed (build from nothing)."""
    changed = _changes(model, objects, "pods")
    if changed is None:  # every pod looked at: the new and the gone by identity
        current = dict(zip(map(id, objects.pods), objects.pods, strict=True))
        gone = [model.pods[i] for i in model.pods.keys() - current.keys()]
        new = [current[i] for i in current.keys() - model.pods.keys()]
    else:  # only the keys the feed says changed
        gone, new = [], []
        for key, obj in changed.items():
            old = model.by_skey.get(key)
            if old is not None and old.record.pod is obj:
                continue
            if old is not None:
                gone.append(old)
            if isinstance(obj, Pod):
                new.append(obj)
    names = dict(model.resources)
    for pods, step in (([e.record.pod for e in gone], -1), (new, 1)):
        for pod in pods:
            for name in pod.requests:
                if name not in _BASE:
                    names[name] = names.get(name, 0) + step
    if ResourceAxis(model.pooled.resources | {n for n, c in names.items() if c > 0}).names != model.axis.names:
        return False
    _put_back(model)
    brs = _changes(model, objects, "bindrequests") if model.brs_indexed else None
    rebound = _index_brs(model, objects) if brs is None else _change_brs(model, brs)
    for e in gone:
        _unlink(model, e)
    records: dict[str, s._PodRecord] = {}
    for pod in sorted(new, key=lambda p: (p.namespace, p.name)):
        _link(model, _enter(model, pod, params, records))
    again = {k for k in rebound if k in model.by_skey} | {model.by_key[k].skey for k in model.timed}
    for skey in sorted(again):
        old = model.by_skey[skey]
        _unlink(model, old)
        _link(model, _enter(model, old.record.pod, params, records, old.record))
    groups = _changes(model, objects, "podgroups")
    if groups is None:
        groups_now = dict(zip(map(id, objects.podgroups), objects.podgroups, strict=True))
        for i in model.groups.keys() - groups_now.keys():
            _unlink_group(model, model.groups[i])
        for i in groups_now.keys() - model.groups.keys():
            _link_group(model, groups_now[i], {})
    else:
        for key, pg in groups.items():
            g = model.group_by_skey.get(key)
            if g is not None and g.record.podgroup is pg:
                continue
            if g is not None:
                _unlink_group(model, g)
            if isinstance(pg, PodGroup):
                _link_group(model, pg, {})
    _settle(model, params)
    return True


def _changes(model: Model, objects: s.ClusterObjects, resource: str) -> dict[str, object] | None:
    """The objects of `resource` whose keys changed since the model's last build (None: gone), from the objects'
    change feed; None when there is no feed or it does not know."""
    since, until = model.marks.get(resource), objects.marks.get(resource)
    if objects.feed is None or since is None or until is None:
        return None
    return objects.feed.changed(resource, since, until)


def _index_brs(model: Model, objects: s.ClusterObjects) -> set[str]:
    """Classify every BindRequest (live for its pod, or stale); the keys of the pods whose live one changed."""
    live, model.stale_brs = s._bind_requests(objects.bind_requests, model.node_by_name)
    rebound = {k for k in model.live_brs.keys() | live.keys() if model.live_brs.get(k) is not live.get(k)}
    model.live_brs = live
    model.brs_indexed = objects.feed is not None  # kept for the next build's changes only
    model.brs, model.br_pods, model.stale_keys = {}, {}, []
    if model.brs_indexed:
        for br in objects.bind_requests:
            key = br.meta.key
            model.brs[key] = br
            model.br_pods.setdefault(_br_pod(br), set()).add(key)
        model.stale_keys = [br.meta.key for br in model.stale_brs]
    return rebound


def _change_brs(model: Model, changes: dict[str, object]) -> set[str]:
    """`_index_brs` for the changed requests alone: the same live and stale requests, stale ones in key order,
    and for a pod named by several the last live one in key order, as a classification of all."""
    pods: set[str] = set()
    for key, br in changes.items():
        old = model.brs.get(key)
        if old is br:
            continue
        if old is not None:
            del model.brs[key]
            pod = _br_pod(old)
            model.br_pods[pod].discard(key)
            if not model.br_pods[pod]:
                del model.br_pods[pod]
            _remove_sorted(model.stale_keys, key)
            pods.add(pod)
        if isinstance(br, BindRequest):
            model.brs[key] = br
            pod = _br_pod(br)
            model.br_pods.setdefault(pod, set()).add(key)
            if _stale(model, br):
                bisect.insort(model.stale_keys, key)
            pods.add(pod)
    rebound = set()
    for pod in pods:
        live = None
        for key in sorted(model.br_pods.get(pod, ())):
            if not _stale(model, model.brs[key]):
                live = model.brs[key]
        if model.live_brs.get(pod) is not live:
            rebound.add(pod)
            if live is None:
                del model.live_brs[pod]
            else:
                model.live_brs[pod] = live
    model.stale_brs = [model.brs[k] for k in model.stale_keys]
    return rebound


def _br_pod(br: BindRequest) -> str:
    return f"{br.meta.namespace}/{br.pod_name}"


def _stale(model: Model, br: BindRequest) -> bool:
    return br.is_failed or br.selected_node not in model.node_by_name


def _put_back(model: Model) -> None:
    """Undo what the last session (or a reader of the last snapshot) changed in the records."""
    dirty = model.dirty_nodes
    for e in _written(model):
        info = e.info
        if info.placement is not e.placement or info.memory_portion != e.portion:
            info.placement, info.memory_portion = e.placement, e.portion
            if e.node:
                dirty.add(e.node)
    # Stale timestamps: stalegangeviction sets them on the snapshot's stale candidates only (the jobs watched at
    # the last build and those a session moved tasks of, which `written` holds); any other writer names the job
    # in `Snapshot.written`. Every other job still has its PodGroup's.
    for uid in model.stale_watch | model.written:
        job = model.jobs.get(uid)
        if job is None:
            continue
        g = model.group_by_skey.get(job.podgroup.meta.key)
        if g is not None and g.job is job and job.stale_since != g.record.stale_since:
            job.stale_since = g.record.stale_since
    model.written.clear()
    dirty |= model.touched
    model.touched.clear()


def _written(model: Model) -> Iterable[_Pod]:
    """The entries whose records the last snapshot's users may have changed: the tasks of the jobs it says
    were written (`Snapshot.written`), or every pod when one of those is not a job of the model."""
    entries: list[_Pod] = []
    for uid in model.written:
        job = model.jobs.get(uid)
        if job is None:
            return model.pods.values()
        for task in (*job.tasks, *job.unassigned):
            e = model.by_skey.get(task.key)
            if e is None or e.info is not task:
                return model.pods.values()
            entries.append(e)
    return entries


def _enter(
    model: Model,
    pod: Pod,
    params: s.SnapshotParams,
    records: dict[str, s._PodRecord],
    record: s._PodRecord | None = None,
) -> _Pod:
    """The entry of one pod: its PodInfo as a build from nothing makes it, and where it is charged."""
    skey = pod.meta.key
    if record is None:
        record = s._pod_record(model.axis, model.min_gpu_memory, pod, records)
    ours = pod.scheduler_name == params.scheduler_name
    placement = s._placement(record, model.live_brs.get(skey) if ours else None, params)
    info = s._task(record, placement)
    e = _Pod((pod.namespace, pod.name), skey, record, info, placement, record.memory_portion)
    if BITS[placement.status] & _ACTIVE_USED and placement.node:
        node = model.node_by_name.get(placement.node)
        if node is None:
            if ours and s.pod_in_pool(pod, params):
                e.problem = s.missing_node(skey, placement.node)
            return e
        if placement.gpu_groups:
            info.memory_portion = e.portion = (
                gpu_portion(pod.gpu.memory_mib, node.gpu_memory_mib) if pod.gpu.memory_mib else 0
            )
        e.node = node.name
        e.other = not ours and pod.namespace != constants.RESERVATION_NAMESPACE
    if ours and record.group:
        e.group = f"{pod.namespace}/{record.group}"
    return e


def _link(model: Model, e: _Pod) -> None:
    model.pods[id(e.record.pod)] = e
    model.by_key[e.key] = e
    model.by_skey[e.skey] = e
    _count(model.resources, e.record.pod, 1)
    if e.node:
        model.node_pods.setdefault(e.node, {})[e.key] = e
        model.dirty_nodes.add(e.node)
    if e.group:
        model.members.setdefault(e.group, {})[e.key] = e
        model.dirty_groups.add(e.group)
        _insert(model, model.task_keys, e.key)
        removed = model.task_changes.get(e.key)
        model.task_changes[e.key] = (removed[0] if removed else "", str(e.info.uid))
    if e.other:
        _insert(model, model.others, e.key)
        model.others_changed = True
    if e.problem is not None:
        model.pod_problems[e.key] = e.problem
    if e.record.pod.meta.deletion_timestamp is not None:
        model.timed.add(e.key)
    pod = e.record.pod
    if e.node or e.group:
        if pod.pod_anti_affinity:
            model.anti[e.key] = e
        if pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity:
            model.soft[e.key] = e


def _unlink(model: Model, e: _Pod) -> None:
    del model.pods[id(e.record.pod)]
    del model.by_key[e.key]
    del model.by_skey[e.skey]
    _count(model.resources, e.record.pod, -1)
    if e.node:
        del model.node_pods[e.node][e.key]
        model.dirty_nodes.add(e.node)
    if e.group:
        del model.members[e.group][e.key]
        model.dirty_groups.add(e.group)
        _remove_sorted(model.task_keys, e.key)
        model.task_changes.setdefault(e.key, (str(e.info.uid), ""))
    if e.other:
        _remove_sorted(model.others, e.key)
        model.others_changed = True
    model.pod_problems.pop(e.key, None)
    model.timed.discard(e.key)
    model.anti.pop(e.key, None)
    model.soft.pop(e.key, None)


def _link_group(model: Model, pg: PodGroup, records: dict[str, s._GroupRecord]) -> None:
    g = _Group((pg.meta.namespace, pg.name), pg.meta.key, s._group_record(pg, records))
    model.groups[id(pg)] = g
    if pg.warnings:
        model.warned.add(id(pg))
    model.group_by_skey[g.skey] = g
    model.dirty_groups.add(g.skey)


def _unlink_group(model: Model, g: _Group) -> None:
    """Its job stays in `jobs` until the PodGroup's key is rebuilt: a new version of it takes the same place."""
    del model.groups[id(g.record.podgroup)]
    model.warned.discard(id(g.record.podgroup))
    if model.group_by_skey.get(g.skey) is g:
        del model.group_by_skey[g.skey]
    model.dirty_groups.add(g.skey)


def _settle(model: Model, params: s.SnapshotParams) -> None:
    """Rebuild what the changes reached: jobs, node rows, the snapshot's dicts in their order."""
    for skey in sorted(model.dirty_groups, key=_split):  # in a build from nothing, keys arrive in order
        _rebuild_job(model, skey, params)
    model.dirty_groups.clear()
    if model.dirty_nodes:
        _recharge(model, model.dirty_nodes)
        model.dirty_nodes.clear()
    changes = model.task_changes
    if changes:
        model.task_log.add(
            (uid for pair in changes.values() for uid in pair if uid), limit=2 * len(model.task_keys) + 1024
        )
    if changes and all(before == after for before, after in changes.values()):
        for k in changes:  # the same tasks, new records: each keeps its place
            e = model.by_key[k]
            model.tasks[str(e.info.uid)] = e.info
    elif changes and not _tasks_appended(model):
        tasks = {str((e := model.by_key[k]).info.uid): e.info for k in model.task_keys}
        model.tasks.clear()  # the same dict object: the last snapshot, unread now, held it too
        model.tasks.update(tasks)
    changes.clear()
    added = model.jobs_added
    if added and model.job_keys[-len(added) :] != added:  # not all after the others: put them in their place
        jobs = {(job := model.job_of[_skey(k)]).uid: job for k in model.job_keys}
        model.jobs.clear()
        model.jobs.update(jobs)
    added.clear()
    for queue, first in model.dirty_queues.items():  # summed again from the first job that changed on
        keys = model.queue_keys.get(queue, [])
        start = bisect.bisect_left(keys, first)
        sums = model.sums.get(queue) or model.sums.setdefault(queue, KeptSums())
        model.charges[queue] = sums.update(start, (model.rows[_skey(k)] for k in keys[start:]))
    model.dirty_queues.clear()
    if model.others_changed or model.other_usage is None:
        usage = model.axis.zeros()
        for k in model.others:
            usage += model.by_key[k].record.request
        model.other_usage = usage
        model.others_changed = False


def _tasks_appended(model: Model) -> bool:
    """Change `tasks` in place when that keeps it in key order: tasks removed, tasks replaced by records of the
    same uid, and new tasks whose keys all come after every other (arrivals named in order, as a trace's
    are). False, changing nothing, for any other change."""
    changes = model.task_changes
    added = sorted(k for k, (before, after) in changes.items() if after and before != after)
    if any(before and after and before != after for before, after in changes.values()):
        return False
    if added and model.task_keys[-len(added) :] != added:
        return False
    for k, (before, after) in changes.items():
        if not after:
            del model.tasks[before]
        elif before == after:
            model.tasks[after] = model.by_key[k].info
    for k in added:
        info = model.by_key[k].info
        model.tasks[str(info.uid)] = info
    return True


def _rebuild_job(model: Model, skey: str, params: s.SnapshotParams) -> None:
    """The job of PodGroup `skey` from its PodGroup and its pods, as a build from nothing makes it."""
    g = model.group_by_skey.get(skey)
    members = model.members.get(skey, {})
    job = _make_job(model, g, members, params) if g is not None else None
    key = g.key if g is not None else _split(skey)
    old = model.job_of.get(skey)
    if old is not None:
        _forget(model, skey, key, old, keep_place=job is not None and job.uid == old.uid)
    if job is None:
        for e in members.values():
            e.info.job_uid = ""
        if g is not None:
            g.job = None
        return
    assert g is not None
    uid = job.uid
    model.jobs[uid] = job  # a job of the same uid keeps its place in the order
    model.job_of[skey] = g.job = job
    if old is None or old.uid != uid:
        _insert(model, model.job_keys, key)
        model.jobs_added.append(key)  # at the end of `jobs`: moved into place by `_settle` if need be
    _insert(model, model.queue_keys.setdefault(job.queue, []), key)
    _dirty_queue(model, job.queue, key)
    model.rows[skey] = job_rows(job)
    for e in members.values():
        e.record.queue_cache = e.info.queue_cache
    if job.has_pending():
        model.waiting.add(uid)
    if s.watches_staleness(job):
        model.stale_watch.add(uid)
    pg = g.record.podgroup
    if (missing := s.queue_problem(pg, model.queues, model.queue_notes, params)) is not None:
        model.queue_problems[key] = (uid, missing)
    elif (refused := s.access_problem(pg, model.queues, model.namespace_labels, params)) is not None:
        model.queue_problems[key] = (uid, refused)
    if job.unassigned:
        model.group_problems[key] = s.unassigned_problem(pg, job)


def _forget(model: Model, skey: str, key: Key, old: JobInfo, *, keep_place: bool) -> None:
    """Take the old job of PodGroup `skey` out of every index; `keep_place`: a job of its uid replaces it."""
    _remove_sorted(model.queue_keys[old.queue], key)
    _dirty_queue(model, old.queue, key)
    del model.rows[skey]
    model.waiting.discard(old.uid)
    model.stale_watch.discard(old.uid)
    model.queue_problems.pop(key, None)
    model.group_problems.pop(key, None)
    del model.job_of[skey]
    if not keep_place:
        del model.jobs[old.uid]
        _remove_sorted(model.job_keys, key)


def _dirty_queue(model: Model, queue: str, key: Key) -> None:
    first = model.dirty_queues.get(queue)
    if first is None or key < first:
        model.dirty_queues[queue] = key


def _make_job(model: Model, g: _Group, members: dict[Key, _Pod], params: s.SnapshotParams) -> JobInfo | None:
    pg, record = g.record.podgroup, g.record
    if s._backed_off(pg, params):
        return None
    ordered = members.values() if len(members) < 2 else [members[k] for k in sorted(members)]
    return s._job(pg, record, model.priorities, model.default_priority, [e.info for e in ordered])


def _recharge(model: Model, names: set[str]) -> None:
    """Recompute the ledger rows, tasks and GPU groups of these nodes from their pods, in pod order."""
    a, pristine = model.arrays, model.pooled.arrays
    assert pristine is not None
    nodes = [model.node_by_name[n] for n in sorted(names) if n in model.node_by_name]
    rows = [n.row for n in nodes]
    for ledger in ("idle", "used", "releasing", "shared_free"):
        getattr(a, ledger)[rows] = getattr(pristine, ledger)[rows]
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    for node in nodes:
        node.clear_tasks()
        pods = model.node_pods.get(node.name, {})
        charged += [(node, (e := pods[k]).info, e.placement) for k in sorted(pods)]
    charge_nodes(a, charged)
    a.refresh()
    a.stamp(rows)


def _skey(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def _split(skey: str) -> Key:
    namespace, _, name = skey.partition("/")
    return namespace, name


def _key_of(model: Model, uid: str) -> Key:
    job = model.jobs[uid]
    return job.namespace, job.name


def _count(counts: dict[str, int], pod: Pod, step: int) -> None:
    for name in pod.requests:
        if name not in _BASE:
            counts[name] = counts.get(name, 0) + step


def _insert(model: Model, keys: list[Key], key: Key) -> None:
    if model.bulk and (not keys or keys[-1] < key):
        keys.append(key)
    else:
        bisect.insort(keys, key)


def _remove_sorted(keys: list[_K], key: _K) -> None:
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
