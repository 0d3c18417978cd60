"""Snapshot: the cluster as one cycle sees it, built fresh from typed objects (KAI `cache/cluster_info`).

Steps as in §3.1: nodes → node arrays; live BindRequests; pods → PodInfo with their status and node;
queues → the tree (a queue with a missing parent, or in a parent cycle, is dropped with its subtree and
reported); PodGroups → JobInfo with priority, preemptibility and the subgroup tree. Nothing here raises on a
bad object: each problem becomes a `Problem` naming the object, and the rest is built.

`build` without a memo makes every record here. With a `Memo` kept across cycles (the scheduler's), `kept`
keeps the whole model (PodInfo, JobInfo, nodes and their ledgers) and updates only what changed, while nobody
holds the last snapshot; the records of what one parsed object yields alone (`_PodRecord`, `_GroupRecord`, the
pool's nodes and their fresh ledgers) serve both.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from kai_scheduler.api import constants, mig
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue, namespace_refusal
from kai_scheduler.api.topology import Topology
from kai_scheduler.cluster.dra import (
    DraDerived,
    DraObjects,
    DraState,
    is_claim_charged,
    network_gpus,
    with_device_counts,
)
from kai_scheduler.cluster.dra import Owner as DraOwner
from kai_scheduler.cluster.job_info import JobInfo, build_tree
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo, charge_nodes
from kai_scheduler.cluster.node_labels import LabelColumns
from kai_scheduler.cluster.node_set_values import NodeSetValues
from kai_scheduler.cluster.pod_info import Placement, PodInfo, PodUID
from kai_scheduler.cluster.pod_status import ACTIVE_USED, ON_NODE, PodStatus, within
from kai_scheduler.cluster.queue_charge import QueueCharge
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import GPU, ResourceAxis, Vector, gpu_portion

if TYPE_CHECKING:
    from kai_scheduler.cluster.kept import Model


@dataclass(frozen=True, slots=True)
class Problem:
    """A bad or unusable object, reported on that object; it never stops the cycle."""

    kind: str
    key: str
    reason: str
    message: str
    pod_group: str = ""  # a bad pod's pod-group-name annotation: its PodGroup is told why the pod is missing
    node: str = ""  # a NodeDoesNotExist problem's node: when the node was refused, the pod is told why


def missing_node(key: str, node: str) -> Problem:
    """A pod of ours on a node this snapshot does not have: the node was deleted (its pods remain until the pod
    garbage collector removes them), or it is in another node pool (`_report_bad_pods` says so when the node is
    there but refused)."""
    return Problem(
        "Pod",
        key,
        "NodeDoesNotExist",
        f"pod is on node {node!r}, which does not exist or is not in this node pool",
        node=node,
    )


@dataclass(slots=True)
class ClusterObjects:
    """The typed objects a snapshot is built from (the cache's view, or a scenario's)."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    bind_requests: list[BindRequest] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    topologies: list[Topology] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # objects that failed to parse
    dra: DraObjects = field(default_factory=DraObjects)
    namespaces: list[Namespace] = field(default_factory=list)  # their labels: affinity terms, queue access control
    # Queues of other node pools, name → their node-pool label value ("" for none): left out of the tree, named
    # only to say why a job of this pool that names one waits (`queue_problem`).
    other_pool_queues: dict[str, str] = field(default_factory=dict)
    # Where the objects came from, for a kept model to look at what changed only (`kept`): the source's change
    # feed and its marks (per resource of `FED_RESOURCES`) taken with these lists. None: look at every object.
    feed: ChangeFeed | None = None
    marks: dict[str, object] = field(default_factory=dict)


FED_RESOURCES = ("pods", "podgroups", "bindrequests")


class ChangeFeed(Protocol):
    """What changed in a source of typed objects between two of its marks (`store.cache.ObjectCache`)."""

    def changed(self, resource: str, since: object, until: object) -> dict[str, Any] | None:
        """The objects of `resource` whose keys changed between the marks, as they are at `until` (None:
        gone), or None when that is not known."""


@dataclass(frozen=True, slots=True)
class SnapshotParams:
    now: float
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    node_pool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    partition_label_value: str = ""
    stuck_in_releasing_seconds: float = 120.0
    queue_access_control: bool = False  # a job whose queue does not admit its namespace is unschedulable
    # Leave out the queues, PodGroups and BindRequests of other node pools, as the pool's scheduler does. Off
    # only for a what-if over another pool's nodes (`kai explain` shows where else a job would fit).
    pool_objects: bool = True
    # Every node pool at once (nodes and objects): a view of a sharded cluster as a whole (`kai schedule`'s
    # report over several shards), never a scheduling cycle's.
    all_pools: bool = False


@dataclass(slots=True, eq=False)
class TaskLog:
    """A kept model's record of the uids whose task records changed (new, replaced or gone), in order. A reader
    that derived something from `tasks` at one `end` finds what changed since in `since` (None: not known)."""

    uids: list[str] = field(default_factory=list)
    start: int = 0  # the position of uids[0]: older entries were dropped

    @property
    def end(self) -> int:
        return self.start + len(self.uids)

    def add(self, uids: Iterable[str], limit: int) -> None:
        """Log `uids`; past `limit` entries the older half is dropped."""
        self.uids.extend(uids)
        if len(self.uids) > limit:
            drop = len(self.uids) - limit // 2
            del self.uids[:drop]
            self.start += drop

    def since(self, mark: int, end: int) -> list[str] | None:
        """The uids logged from `mark` to `end` (a snapshot's `task_mark`); None when the log does not reach
        back to `mark` or `mark` is past `end`."""
        if mark < self.start or mark > end or end > self.end:
            return None
        return self.uids[mark - self.start : end - self.start]


@dataclass(slots=True, eq=False, weakref_slot=True)
class Snapshot:
    now: float
    params: SnapshotParams
    axis: ResourceAxis
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    arrays: NodeArrays
    tasks: dict[str, PodInfo]
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    priority_classes: dict[str, int]
    topologies: dict[str, Topology]
    bind_requests: dict[str, BindRequest]
    stale_bind_requests: list[BindRequest]
    job_problems: dict[str, list[Problem]]  # job uid → reasons it cannot be scheduled at all
    problems: list[Problem]
    other_usage: Vector  # requests of active pods of other schedulers
    min_gpu_memory: float
    max_gpu_memory: float
    queue_usage: dict[str, Vector] = field(default_factory=dict)  # time-based usage (§5.5), set by the scheduler
    # Values plugins derive from the node objects alone, shared with the snapshots built from the same nodes.
    node_memo: NodeSetValues = field(default_factory=NodeSetValues)
    # Jobs with a Pending task when the snapshot was built, in `jobs` order. A session never makes a task
    # Pending (it allocates, pipelines, evicts to Releasing or rolls back), so every job that has a pending task
    # during the session is here: the actions look for work among these, not among every job of the cluster.
    waiting: list[JobInfo] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # nodes a session moved tasks on (a kept model redoes them)
    # Jobs some of whose task records were changed in place (placement or GPU-memory portion): by `move`, by
    # GPU sharing's choice of a portion, by `show`; a kept model puts back their tasks only. A job's stale
    # timestamp may be changed on `stale_candidates()` (as stalegangeviction does) or on a job named here: a kept
    # model puts back those only.
    written: set[str] = field(default_factory=set)
    # The pods on nodes or among `tasks` that declare pod anti-affinity, as built (a kept model keeps the list);
    # None: found by a pass over every pod (`pod_affinity.anti_affine_pods`).
    anti_affine: list[PodInfo] | None = None
    # Likewise the pods that declare preferred pod (anti-)affinity (`podaffinity` scores toward them).
    soft_affine: list[PodInfo] | None = None
    # Jobs stale when the snapshot was built, or whose PodGroup carries a stale timestamp, in `jobs` order; with
    # the jobs a session moved tasks of, these are all the jobs whose staleness can be new (`stale_candidates`).
    stale_watch: list[JobInfo] = field(default_factory=list)
    moved_jobs: set[str] = field(default_factory=set)
    # Per queue, what its jobs held and waited for at the build (a kept model's; None: the reader sums them).
    queue_charges: dict[str, QueueCharge] | None = None
    dra_objects: DraObjects = field(default_factory=DraObjects)
    dra_memo: DraDerived = field(default_factory=DraDerived)
    _dra: DraState | None = None
    namespace_objects: list[Namespace] = field(default_factory=list)
    _namespace_labels: dict[str, Mapping[str, str]] | None = None
    # Bumped by every `move`: a value derived from the placements (free capacity, a job's elastic band) and
    # stored with the version it was computed at is still true while the version is the same.
    version: int = 0
    # What plugins keep from one cycle to the next, by plugin: a kept model hands every snapshot it builds the
    # same dict (`Memo.plugins`), a build without a memo an empty one. A plugin checks what it finds against the
    # snapshot it is given (another snapshot may have been built in between, or the model from nothing).
    plugin_memo: dict[str, object] = field(default_factory=dict)
    # A kept model's log of changed task records and its end at this build: `tasks` is the log's `tasks` at
    # `task_mark` (None: a build without a kept model).
    task_log: TaskLog | None = None
    task_mark: int = 0

    def namespace_labels(self) -> Mapping[str, Mapping[str, str]]:
        """Each namespace's labels by name, made on first use (only pod affinity terms with a namespace
        selector read them)."""
        if self._namespace_labels is None:
            self._namespace_labels = {ns.name: ns.meta.labels for ns in self.namespace_objects}
        return self._namespace_labels

    def dra_state(self) -> DraState:
        """The DRA devices and claims of this cycle, built on first use (a session changes them)."""
        if self._dra is None:
            self._dra = DraState.build(
                self.dra_objects,
                self.dra_memo,
                [n.node for n in self.nodes],
                self.tasks.values(),
                self.bind_requests,
                self.claim_owner,
            )
        return self._dra

    def claim_owner(self, task: PodInfo) -> DraOwner | None:
        """Whom a DRA claim that `task` makes hold its devices charges: the task's job's queue."""
        job = self.jobs.get(task.job_uid)
        return None if job is None else DraOwner(job.queue, not job.preemptible)

    def dra_charges(self) -> dict[str, tuple[float, float, float]]:
        """Per queue, the GPUs DRA claims charge themselves (shared claims, `All` requests; docs/dra.md): held
        now, of those by non-preemptible jobs, and asked by the shared claims of Pending tasks (each once).
        Empty, and nothing built, when no claim charges itself."""
        if not any(map(is_claim_charged, self.dra_objects.claims)):
            return {}
        state = self.dra_state()
        out = {queue: (gpus, non_preemptible, 0.0) for queue, (gpus, non_preemptible) in state.held_charges().items()}
        asked: set[str] = set()
        for job in self.waiting:
            for task in job.tasks:
                if task.status != PodStatus.PENDING or not task.pod.resource_claims:
                    continue
                for key, gpus in state.shared_demand(task):
                    if key not in asked:
                        asked.add(key)
                        held, non_preemptible, pending = out.get(job.queue, (0.0, 0.0, 0.0))
                        out[job.queue] = (held, non_preemptible, pending + gpus)
        return out

    def total_capacity(self) -> Vector:
        """Allocatable of schedulable nodes minus what other schedulers' pods use (§5.1); MIG instances add
        their GPU units (their profiles' compute slices) to the GPU column, as KAI's `GetSumGPUs` does; so do
        the GPUs of network-attached DRA pools that a schedulable node reaches (docs/dra.md)."""
        total: Vector = self.arrays.allocatable[self.arrays.schedulable].sum(axis=0) - self.other_usage
        if self.axis.mig_columns:
            total[GPU] += float(total @ self.axis.mig_units)
        if self.dra_memo.network:  # GPUs of network-attached DRA pools: on no node, in the total
            total[GPU] += network_gpus(
                self.dra_memo, [n.node for n, ok in zip(self.nodes, self.arrays.schedulable, strict=True) if ok]
            )
        return total

    def mig_nodes(self) -> npt.NDArray[np.bool_]:
        """Nodes that expose MIG instances (the mixed strategy: its label, or `nvidia.com/mig-*` allocatable):
        a MIG node takes no fractional GPU request (§6). Kept in the node memo (read-only)."""

        def compute() -> npt.NDArray[np.bool_]:
            columns = list(self.axis.mig_columns)
            mask: npt.NDArray[np.bool_] = np.array(
                [n.labels.get(constants.LABEL_MIG_STRATEGY) == mig.STRATEGY_MIXED for n in self.nodes], dtype=bool
            )
            if columns:
                mask |= (self.arrays.allocatable[:, columns] > 0).any(axis=1)
            mask.flags.writeable = False
            return mask

        return self.node_memo.get("snapshot.mig_nodes", compute)

    def node_labels(self) -> LabelColumns:
        """The nodes' labels as integer-coded columns, kept in the node memo: one per node set, shared by every
        reader (the predicates' node filters, podaffinity's topology domains)."""
        return self.node_memo.get("snapshot.node_labels", lambda: LabelColumns([n.node for n in self.nodes]))

    def stale_candidates(self) -> list[JobInfo]:
        """The jobs whose staleness or stale timestamp may differ from their PodGroup's now, in `jobs` order;
        every other job is not stale and has no stale timestamp."""
        moved = [self.jobs[uid] for uid in self.moved_jobs if uid in self.jobs]
        if not moved:
            return list(self.stale_watch)
        return sorted({id(j): j for j in (*self.stale_watch, *moved)}.values(), key=lambda j: (j.namespace, j.name))

    def show(self, task: PodInfo, placement: Placement) -> None:
        """Show `task` at `placement` for a reader of this snapshot, leaving the ledgers as they are."""
        self.written.add(task.job_uid)
        task.placement = placement

    def move(self, task: PodInfo, after: Placement) -> None:
        """Move `task` to `after`: off its old node's ledgers, onto the new node's (statements call this)."""
        before = task.placement
        nodes = self.node_by_name
        if before.status._value_ & _ON_NODE and before.node:
            nodes[before.node].remove_task(task, before)
            self.touched.add(before.node)
        task.placement = after
        self.version += 1
        self.moved_jobs.add(task.job_uid)
        self.written.add(task.job_uid)
        if after.status._value_ & _ON_NODE and after.node:
            nodes[after.node].add_task(task, after)
            self.touched.add(after.node)


_ON_NODE = ON_NODE.value


@dataclass(slots=True, eq=False)
class _PodRecord:
    """What one parsed pod yields on one resource axis, whatever the rest of the cluster is."""

    pod: Pod
    axis: tuple[str, ...]
    min_gpu_memory: float
    uid: PodUID
    request: Vector  # read-only: shared by the PodInfos of successive cycles
    subgroup: str
    task_priority: int | None
    memory_portion: float
    group: str | None
    placement_br: BindRequest | None = None
    placement: Placement | None = None  # when it depends on the pod and its BindRequest only
    queue_cache: tuple[float, Vector] | None = None  # the last PodInfo's, for the next (see PodInfo)


@dataclass(slots=True, eq=False)
class _GroupRecord:
    podgroup: PodGroup
    last_start: float | None
    last_eviction: float | None
    stale_since: float | None


@dataclass(slots=True, eq=False)
class _NodesRecord:
    """The pool's nodes in name order and their fresh ledgers, while the cache hands the same node objects (or later
    versions of them that differ in their resourceVersion alone: `_same_but_version`)."""

    given: list[Node]
    pool: tuple[str, str, bool]
    nodes: list[Node]
    resources: set[str]
    axis: tuple[str, ...] = ()
    arrays: NodeArrays | None = None  # never written: each build works on a copy
    memo: NodeSetValues = field(default_factory=NodeSetValues)  # new with the arrays: allocatable is an input


@dataclass(slots=True, eq=False)
class Memo:
    """What earlier builds made, kept for the next (see the module doc and `kept`); empty = a full build."""

    nodes: _NodesRecord | None = None
    model: Model | None = None
    dra: DraDerived = field(default_factory=DraDerived)
    plugins: dict[str, object] = field(default_factory=dict)  # `Snapshot.plugin_memo`


def build(objects: ClusterObjects, params: SnapshotParams, memo: Memo | None = None) -> Snapshot:
    """Build the cycle's snapshot; every problem with an object is collected, never raised. With a `memo`
    from earlier builds, the records of what did not change are kept (`kept`); the result is the same as
    without."""
    dra_memo = memo.dra if memo is not None else DraDerived()
    nodes, pods = with_device_counts(objects.nodes, objects.pods, objects.dra, dra_memo)
    if nodes is not objects.nodes or pods is not objects.pods:
        # Pods with their claims' GPUs change when a claim does: the feed's pod keys no longer tell what changed.
        marks = {r: m for r, m in objects.marks.items() if r != "pods" or pods is objects.pods}
        objects = dataclasses.replace(objects, nodes=nodes, pods=pods, marks=marks)
    objects = pool_objects(objects, params)
    if memo is not None:
        from kai_scheduler.cluster import kept  # kept builds on this module's steps

        snap = kept.build(objects, params, memo)
        snap.dra_objects, snap.dra_memo = objects.dra, dra_memo
        snap.namespace_objects = objects.namespaces
        return snap
    memo = Memo()
    problems = list(objects.problems)
    problems += [Problem("Queue", q.name, "InvalidField", w) for q in objects.queues for w in q.warnings]
    problems += [Problem("PodGroup", pg.meta.key, "InvalidField", w) for pg in objects.podgroups for w in pg.warnings]
    pooled = _pooled_nodes(objects.nodes, params, memo)
    axis = ResourceAxis(pooled.resources | {r for p in objects.pods for r in p.requests})
    arrays, node_infos = _node_arrays(pooled, axis)
    by_name = {n.name: n for n in node_infos}
    priorities = _priority_classes(objects.priority_classes)
    left_out: dict[str, str] = {}
    queues = _queue_tree(objects.queues, problems, left_out)
    live_brs, stale_brs = _bind_requests(objects.bind_requests, by_name)
    snap = Snapshot(
        now=params.now,
        params=params,
        axis=axis,
        nodes=node_infos,
        node_by_name=by_name,
        arrays=arrays,
        tasks={},
        jobs={},
        queues=queues,
        priority_classes=priorities,
        topologies={t.meta.name: t for t in objects.topologies},
        bind_requests=live_brs,
        stale_bind_requests=stale_brs,
        job_problems={},
        problems=problems,
        other_usage=axis.zeros(),
        min_gpu_memory=_gpu_memory(arrays, min),
        max_gpu_memory=_gpu_memory(arrays, max),
        node_memo=pooled.memo,
    )
    pods_by_group = _add_pods(snap, objects.pods, problems)
    labels = access_labels(objects, params)
    notes = QueueNotes(left_out, objects.other_pool_queues, refused_queues(objects.problems))
    _add_jobs(
        snap, objects.podgroups, pods_by_group, problems, _default_priority(objects.priority_classes), labels, notes
    )
    _report_bad_pods(snap, objects.problems)
    snap.dra_objects, snap.dra_memo = objects.dra, dra_memo
    snap.namespace_objects = objects.namespaces
    return snap


@dataclass(frozen=True, slots=True)
class QueueNotes:
    """Why a queue a job names is not in the tree: `left_out` (name → the parent problem that dropped it) and
    `other_pools` (name → the node-pool label value of a queue of another pool)."""

    left_out: Mapping[str, str] = field(default_factory=dict)
    other_pools: Mapping[str, str] = field(default_factory=dict)
    invalid: Mapping[str, str] = field(default_factory=dict)  # name → the parse error of a queue the cache refused

    def signature(self) -> tuple[object, ...]:
        return (
            tuple(sorted(self.left_out.items())),
            tuple(sorted(self.other_pools.items())),
            tuple(sorted(self.invalid.items())),
        )


def refused_queues(problems: Iterable[Problem]) -> dict[str, str]:
    """The queues that failed to parse (name → their error), for the jobs that name them."""
    return {p.key: p.message for p in problems if p.kind == "Queue" and p.reason == "InvalidObject"}


def queue_problem(
    pg: PodGroup, queues: Mapping[str, QueueInfo], notes: QueueNotes, params: SnapshotParams
) -> Problem | None:
    """The PodGroup's `QueueDoesNotExist` problem when its queue is not a leaf of this pool's tree, saying why:
    missing, left out for its parents, of another node pool (a shard sees only its pool's queues), or not a
    leaf."""
    queue = queues.get(pg.queue)
    if queue is not None and queue.is_leaf:
        return None
    if queue is not None:
        why = "is not a leaf queue"
    elif pg.queue in notes.invalid:
        why = f"is invalid: {notes.invalid[pg.queue]}"
    elif pg.queue in notes.left_out:
        why = f"is left out of the queue tree: {notes.left_out[pg.queue]}"
    elif pg.queue in notes.other_pools:
        key, pool = params.node_pool_label_key, params.partition_label_value
        theirs = (
            f"is labelled {key}={notes.other_pools[pg.queue]}" if notes.other_pools[pg.queue] else f"has no {key} label"
        )
        ours = f"node pool {pool!r}" if pool else f"the node pool of objects without {key}"
        why = f"is not in {ours}, which schedules this job: the queue {theirs} (label the queue and the job alike)"
    else:
        why = "does not exist"
    return Problem("PodGroup", pg.meta.key, constants.REASON_QUEUE_DOES_NOT_EXIST, f"queue {pg.queue!r} {why}")


def access_labels(objects: ClusterObjects, params: SnapshotParams) -> dict[str, Mapping[str, str]]:
    """Each namespace's labels, when queue access control is on (else empty: nothing reads them)."""
    if not params.queue_access_control:
        return {}
    return {ns.name: ns.meta.labels for ns in objects.namespaces}


def access_problem(
    pg: PodGroup, queues: Mapping[str, QueueInfo], labels: Mapping[str, Mapping[str, str]], params: SnapshotParams
) -> Problem | None:
    """The PodGroup's problem when access control is on and its queue (or an ancestor) refuses its namespace."""
    if not params.queue_access_control:
        return None
    namespace = pg.meta.namespace

    def lookup(name: str) -> Queue | None:
        info = queues.get(name)
        return info.queue if info is not None else None

    why = namespace_refusal(pg.queue, namespace, lookup, lambda: labels.get(namespace))
    if why is None:
        return None
    return Problem("PodGroup", pg.meta.key, constants.REASON_NAMESPACE_NOT_ALLOWED, why)


def in_pool(labels: Mapping[str, str], key: str, value: str) -> bool:
    """Whether an object with these labels belongs to the node pool `value` of the label `key` (§1.5): the
    objects carrying `key=value`, or for the empty value the objects without the label."""
    return labels.get(key) == value if value else key not in labels


def pool_objects(objects: ClusterObjects, params: SnapshotParams) -> ClusterObjects:
    """The objects a scheduler of the pool `params.partition_label_value` schedules: the queues, PodGroups
    and BindRequests of that pool (nodes are kept by `_pooled_nodes`; pods belong to their PodGroups). Another
    pool's BindRequests are its scheduler's to keep or delete, never this one's. The same lists when every
    object is in the pool (a cache that keeps only this pool's objects)."""
    if not params.pool_objects or params.all_pools:
        return objects
    key, value = params.node_pool_label_key, params.partition_label_value
    queues = [q for q in objects.queues if in_pool(q.meta.labels, key, value)]
    podgroups = [pg for pg in objects.podgroups if in_pool(pg.meta.labels, key, value)]
    brs = [br for br in objects.bind_requests if in_pool(br.meta.labels, key, value)]
    if (
        len(queues) == len(objects.queues)
        and len(podgroups) == len(objects.podgroups)
        and len(brs) == len(objects.bind_requests)
    ):
        return objects
    # The change feed names every pool's objects: with some left out, the kept model compares instead.
    marks = {r: m for r, m in objects.marks.items() if r not in ("queues", "podgroups", "bindrequests")}
    others = dict(objects.other_pool_queues)
    others.update(
        (q.name, q.meta.labels.get(key, "")) for q in objects.queues if not in_pool(q.meta.labels, key, value)
    )
    return dataclasses.replace(
        objects, queues=queues, podgroups=podgroups, bind_requests=brs, marks=marks, other_pool_queues=others
    )


def pod_in_pool(pod: Pod, params: SnapshotParams) -> bool:
    """Whether a pod is this pool's by its own node-pool label (the scheduler writes it at bind, §8.1)."""
    return in_pool(pod.meta.labels, params.node_pool_label_key, params.partition_label_value)


def _in_pool(nodes: list[Node], params: SnapshotParams) -> list[Node]:
    key, value = params.node_pool_label_key, params.partition_label_value
    if params.all_pools:
        return nodes
    return [n for n in nodes if in_pool(n.meta.labels, key, value)]


def _pooled_nodes(given: list[Node], params: SnapshotParams, memo: Memo) -> _NodesRecord:
    pool = (params.node_pool_label_key, params.partition_label_value, params.all_pools)
    kept = memo.nodes
    if kept is not None and kept.pool == pool and len(kept.given) == len(given):
        if all(map(operator.is_, kept.given, given)):
            return kept
        if all(map(_same_but_version, kept.given, given)):
            # Only their resourceVersions moved (a kubelet's status heartbeat): the nodes kept are the same nodes,
            # and the model built on them stays. The next look compares with these objects.
            kept.given = list(given)
            return kept
    nodes = _in_pool(sorted(given, key=lambda n: n.name), params)
    memo.nodes = _NodesRecord(list(given), pool, nodes, {r for n in nodes for r in n.allocatable})
    return memo.nodes


def _same_but_version(kept: Node, given: Node) -> bool:
    """The same object, or a later version of it that differs in nothing but its resourceVersion: every field the
    scheduler reads (labels, annotations, taints, allocatable, capacity, readiness, cordon) is equal."""
    if kept is given:
        return True
    if kept.meta.uid != given.meta.uid or kept.meta.resource_version == given.meta.resource_version:
        return kept == given
    return kept == dataclasses.replace(
        given, meta=dataclasses.replace(given.meta, resource_version=kept.meta.resource_version)
    )


def _node_arrays(pooled: _NodesRecord, axis: ResourceAxis) -> tuple[NodeArrays, list[NodeInfo]]:
    """Fill the ledgers column by column (one list of floats per resource), not node by node: building a
    vector per node was most of a small cycle's cost on a 1,500-node cluster. Kept while the nodes and the
    axis are the same; each build gets a copy."""
    nodes = pooled.nodes
    if pooled.arrays is None or pooled.axis != axis.names:
        arrays = NodeArrays.empty(len(nodes), len(axis))
        for column, name in enumerate(axis.names):
            arrays.allocatable[:, column] = [n.allocatable.get(name, 0.0) for n in nodes]
        arrays.schedulable[:] = [n.ready and not n.unschedulable for n in nodes]
        arrays.gpu_memory[:] = [n.gpu_memory_mib or 0 for n in nodes]
        arrays.idle[:] = arrays.allocatable
        arrays.refresh()
        pooled.arrays, pooled.axis, pooled.memo = arrays, axis.names, NodeSetValues()
    arrays = pooled.arrays.copy()
    infos = [NodeInfo(name=node.name, node=node, row=row, arrays=arrays) for row, node in enumerate(nodes)]
    return arrays, infos


def _gpu_memory(arrays: NodeArrays, pick: Callable[[Any], Any]) -> float:
    labelled = arrays.gpu_memory[arrays.gpu_memory > 0]
    return float(pick(labelled)) if labelled.size else float(constants.DEFAULT_NODE_GPU_MEMORY_MIB)


def _priority_classes(classes: list[PriorityClass]) -> dict[str, int]:
    return {pc.meta.name: pc.value for pc in classes}


def _default_priority(classes: list[PriorityClass]) -> int:
    """A PodGroup without a known class gets the globalDefault class's value, else 50 (§1.2)."""
    defaults = sorted((pc.meta.name, pc.value) for pc in classes if pc.global_default)
    return defaults[0][1] if defaults else constants.DEFAULT_PODGROUP_PRIORITY


def _queue_tree(
    queues: list[Queue], problems: list[Problem], left_out: dict[str, str] | None = None
) -> dict[str, QueueInfo]:
    """The queue tree; a queue with a missing parent or in a parent cycle is dropped with its subtree, with a
    problem on the queue, and (into `left_out`, name → why) the reason a job naming it is told."""
    infos = {q.name: QueueInfo.from_queue(q) for q in sorted(queues, key=lambda q: q.name)}
    dropped: dict[str, str] = {}
    for name, q in infos.items():
        seen, cur = [name], q.parent
        while cur:
            if cur not in infos:
                why = f"parent queue {cur!r} of queue {seen[-1]!r} does not exist"
                problems.append(Problem("Queue", name, "ParentQueueDoesNotExist", why))
                dropped[name] = why
                break
            if cur in seen:
                why = f"queue {name!r} is in a parent cycle (spec.parentQueue): {' → '.join([*seen, cur])}"
                problems.append(Problem("Queue", name, "QueueCycle", why))
                dropped[name] = why
                break
            seen.append(cur)
            cur = infos[cur].parent
    if left_out is not None:
        left_out.update(dropped)
    kept = {n: q for n, q in infos.items() if n not in dropped}
    for name, q in kept.items():
        if q.parent:
            kept[q.parent].children.append(name)
    return kept


def _bind_requests(
    brs: list[BindRequest], nodes: dict[str, NodeInfo]
) -> tuple[dict[str, BindRequest], list[BindRequest]]:
    live, stale = {}, []
    for br in brs:
        if br.is_failed or br.selected_node not in nodes:
            stale.append(br)
        else:
            live[f"{br.meta.namespace}/{br.pod_name}"] = br
    return live, stale


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
        groups = _pod_groups(pod) if pod.node_name else (br.selected_gpu_groups if br is not None else ())
        recorded = _mig_record(pod, pod.meta if pod.node_name or br is None else br.meta)
        return Placement(PodStatus.STUCK_IN_RELEASING if stuck else PodStatus.RELEASING, node, groups, mig=recorded)
    if pod.phase == "Running":
        return Placement(PodStatus.RUNNING, pod.node_name, _pod_groups(pod), mig=_mig_record(pod, pod.meta))
    if pod.node_name:
        return Placement(PodStatus.BOUND, pod.node_name, _pod_groups(pod), mig=_mig_record(pod, pod.meta))
    if br is not None:
        return Placement(PodStatus.BINDING, br.selected_node, br.selected_gpu_groups, mig=_mig_record(pod, br.meta))
    if pod.scheduling_gated:
        return Placement(PodStatus.GATED)
    return Placement(PodStatus.PENDING)


def _mig_record(pod: Pod, meta: ObjectMeta) -> tuple[tuple[str, int], ...]:
    """The MIG instances recorded for a MIG pod on `meta` (its own, or its BindRequest's)."""
    return mig.parse_instances(meta.annotations.get(mig.ANNOTATION_INSTANCES)) if pod.gpu.mig else ()


def _pod_groups(pod: Pod) -> tuple[str, ...]:
    if not pod.gpu.is_shared:
        return ()
    labels = pod.meta.labels
    groups = [v for k, v in sorted(labels.items()) if k.startswith(constants.LABEL_GPU_GROUP + "/")]
    if constants.LABEL_GPU_GROUP in labels:
        groups.insert(0, labels[constants.LABEL_GPU_GROUP])
    return tuple(groups)


def _pod_record(axis: ResourceAxis, min_gpu_memory: float, pod: Pod, memo: dict[str, _PodRecord]) -> _PodRecord:
    key = pod.meta.key
    record = memo.get(key)
    if (
        record is not None
        and record.pod is pod
        and record.axis == axis.names
        and record.min_gpu_memory == min_gpu_memory
    ):
        return record
    request = axis.vector(pod.requests)
    if pod.gpu.is_shared or pod.namespace == constants.RESERVATION_NAMESPACE:
        request[GPU] = 0.0  # shared devices are charged through GPU groups (§6)
    request.flags.writeable = False
    record = _PodRecord(
        pod=pod,
        axis=axis.names,
        min_gpu_memory=min_gpu_memory,
        uid=PodUID(pod.meta.uid or key),
        request=request,
        subgroup=pod.meta.labels.get(constants.LABEL_SUBGROUP_NAME, ""),
        task_priority=_task_priority(pod),
        memory_portion=_memory_portion(pod, min_gpu_memory),
        group=pod.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME),
    )
    memo[key] = record
    return record


def _placement(record: _PodRecord, br: BindRequest | None, params: SnapshotParams) -> Placement:
    """The pod's placement; kept on its record unless it depends on the time (a pod being deleted)."""
    if record.placement is not None and record.placement_br is br:
        return record.placement
    placement = _pod_placement(record.pod, br, params)
    if record.pod.meta.deletion_timestamp is None:
        record.placement, record.placement_br = placement, br
    return placement


def _task(record: _PodRecord, placement: Placement) -> PodInfo:
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


def _add_pods(snap: Snapshot, pods: list[Pod], problems: list[Problem]) -> dict[str, list[PodInfo]]:
    """Create PodInfos, charge on-node pods to their nodes; return our pods by PodGroup key."""
    by_group: dict[str, list[PodInfo]] = {}
    records: dict[str, _PodRecord] = {}
    charged: list[tuple[NodeInfo, PodInfo, Placement]] = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        record = _pod_record(snap.axis, snap.min_gpu_memory, pod, records)
        ours = pod.scheduler_name == snap.params.scheduler_name
        placement = _placement(record, snap.bind_requests.get(pod.meta.key) if ours else None, snap.params)
        info = _task(record, placement)
        if within(placement.status, ACTIVE_USED) and placement.node:
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
        if not ours:
            continue
        if record.group:
            snap.tasks[str(info.uid)] = info
            by_group.setdefault(f"{pod.namespace}/{record.group}", []).append(info)
    charge_nodes(snap.arrays, charged)
    return by_group


def _report_bad_pods(snap: Snapshot, problems: list[Problem]) -> None:
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


def _task_priority(pod: Pod) -> int | None:
    raw = pod.meta.labels.get(constants.LABEL_TASK_PRIORITY)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _memory_portion(pod: Pod, min_gpu_memory: float) -> float:
    return gpu_portion(pod.gpu.memory_mib, min_gpu_memory) if pod.gpu.memory_mib else 0.0


def _group_record(pg: PodGroup, memo: dict[str, _GroupRecord]) -> _GroupRecord:
    record = memo.get(pg.meta.key)
    if record is None or record.podgroup is not pg:
        annotations = pg.meta.annotations
        record = _GroupRecord(
            podgroup=pg,
            last_start=_annotation_time(annotations.get(constants.ANNOTATION_LAST_START_TIMESTAMP)),
            last_eviction=_annotation_time(annotations.get(constants.ANNOTATION_LAST_EVICTION_TIMESTAMP)),
            stale_since=_annotation_time(annotations.get(constants.ANNOTATION_STALE_TIMESTAMP)),
        )
    return record


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
        record = _group_record(pg, {})
        if _backed_off(pg, snap.params):
            continue
        job = _job(pg, record, snap.priority_classes, default_priority, pods.get(pg.meta.key, []))
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


def unassigned_problem(pg: PodGroup, job: JobInfo) -> Problem:
    """The problem of a job whose pods are in no subgroup: pods naming subgroups the PodGroup does not declare, and
    pods naming none where the PodGroup has subgroups (their pod grouper did not label them, or the user's pods
    of a hand-written PodGroup lack the label); neither kind is scheduled."""
    named = sorted({t.subgroup for t in job.unassigned if t.subgroup})
    unnamed = sorted(t.name for t in job.unassigned if not t.subgroup)
    parts = []
    if named:
        parts.append(f"pods name subgroups that the PodGroup does not declare: {', '.join(named)}")
    if unnamed:
        parts.append(
            f"pods without a {constants.LABEL_SUBGROUP_NAME} label in a PodGroup with subgroups: {', '.join(unnamed)}"
        )
    return Problem("PodGroup", pg.meta.key, "SubGroupDoesNotExist", "; ".join(parts))


def _job(
    pg: PodGroup,
    record: _GroupRecord,
    priorities: dict[str, int],
    default_priority: int,
    tasks: Iterable[PodInfo],
) -> JobInfo:
    """The job of a PodGroup with its subgroup tree, its tasks placed on their leaves (a task naming a subgroup
    the PodGroup does not declare goes to `unassigned`), in the order given."""
    priority = priorities.get(pg.priority_class_name, default_priority)
    preemptible = (
        pg.preemptibility == constants.PREEMPTIBLE
        if pg.preemptibility
        else priority < constants.NON_PREEMPTIBLE_PRIORITY_THRESHOLD
    )
    root, leaves = build_tree(pg)
    job = JobInfo(
        uid=pg.meta.uid or pg.meta.key,
        name=pg.name,
        namespace=pg.meta.namespace,
        podgroup=pg,
        queue=pg.queue,
        priority=priority,
        preemptible=preemptible,
        creation=pg.meta.creation_timestamp or 0.0,
        tasks=[],
        root=root,
        pod_sets=leaves,
        last_start=record.last_start,
        last_eviction=record.last_eviction,
        stale_since=record.stale_since,
    )
    for task in tasks:
        task.job_uid = job.uid
        leaf = leaves.get(task.subgroup or ("default" if not pg.sub_groups else ""))
        if leaf is None:
            job.unassigned.append(task)
            continue
        leaf.tasks.append(task)
        job.tasks.append(task)
    return job


def watches_staleness(job: JobInfo) -> bool:
    """Stale now, or its PodGroup carries a stale timestamp (which may need clearing)."""
    return job.is_stale() or constants.ANNOTATION_STALE_TIMESTAMP in job.podgroup.meta.annotations


def _backed_off(pg: PodGroup, params: SnapshotParams) -> bool:
    return pg.scheduling_backoff == 1 and any(c.of_pool(params.partition_label_value) for c in pg.scheduling_conditions)


def _annotation_time(raw: str | None) -> float | None:
    if not raw:
        return None
    from kai_scheduler.api.fields import parse_time

    try:
        return parse_time(raw)
    except ValueError:
        return None
