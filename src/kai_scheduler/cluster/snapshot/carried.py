"""The carried model: a snapshot's records (every PodInfo, JobInfo with its subgroup tree, NodeInfo and the
node ledgers, the snapshot's dicts) kept from one build to the next, with the indexes that find what a change
reaches. `incremental` brings it up to date; this module holds its data alone."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.queue_charge import PrefixSums, QueueCharge, Rows
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import ResourceAxis, Vector
from kai_scheduler.cluster.snapshot.bind_requests import BindRequestIndex
from kai_scheduler.cluster.snapshot.changes import ChangeLog, TaskLog
from kai_scheduler.cluster.snapshot.inputs import Problem
from kai_scheduler.cluster.snapshot.jobs import GroupRecord
from kai_scheduler.cluster.snapshot.model import Snapshot
from kai_scheduler.cluster.snapshot.pods import PodRecord
from kai_scheduler.cluster.snapshot.pools import PoolNodes
from kai_scheduler.cluster.snapshot.queues import QueueNotes
from kai_scheduler.cluster.snapshot.sorted_keys import SortKey
from kai_scheduler.cluster.snapshot.task_map import TaskMap


@dataclass(slots=True, eq=False)
class CarriedPod:
    """One pod in the carried model and what it contributes to it."""

    sort_key: SortKey
    key: str  # namespace/name
    record: PodRecord
    info: PodInfo
    placement: Placement  # as the objects say: what its node's ledgers are charged with
    node: str = ""  # charged on this node's ledgers
    pod_group: str = ""  # namespace/podgroup of our pod that belongs in the snapshot's tasks
    other_scheduler: bool = False  # counted in other_usage (another scheduler's active pod)
    problem: Problem | None = None


@dataclass(slots=True, eq=False)
class CarriedGroup:
    """One PodGroup in the carried model, with its job."""

    sort_key: SortKey
    key: str  # namespace/name
    record: GroupRecord
    job: JobInfo | None = None  # None while backed off


@dataclass(slots=True, eq=False)
class Reached:
    """What one build's changes reached, for `derive.rederive` to derive again (it empties it)."""

    nodes: set[str] = field(default_factory=set)  # whose ledger rows are recomputed
    # Per node not (yet) in `nodes`: each pod key unlinked from it, with the first entry unlinked (the one its row
    # is charged with). A node whose pods all came back charged the same keeps its row (`derive.rederive`).
    unlinked: dict[str, dict[SortKey, CarriedPod]] = field(default_factory=dict)
    # Per node the last snapshot's session only added tasks to (`ChangeLog.appended`): those tasks by key, in the
    # order added; the row holds them after the others, not recomputed if they are its last pods (`rederive`).
    appended: dict[str, dict[SortKey, tuple[PodInfo, Placement]]] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)  # PodGroup keys whose jobs are rebuilt
    queues: dict[str, SortKey] = field(default_factory=dict)  # queue → the first of its job keys that changed
    task_changes: dict[SortKey, tuple[str, str]] = field(default_factory=dict)  # key → (uid removed, uid added)
    jobs_added: list[SortKey] = field(default_factory=list)  # keys whose jobs this build appended to `jobs`
    other_usage: bool = False  # a pod of another scheduler came or went


@dataclass(slots=True, eq=False)
class CarriedModel:
    """The records of the last build and the indexes that find what a change reaches."""

    # What every record depends on: a change of these builds the model from nothing.
    signature: tuple[object, ...]
    pool_nodes: PoolNodes
    priority_classes: list[PriorityClass]
    priorities: dict[str, int]
    default_priority: int
    queues: dict[str, QueueInfo]
    namespace_labels: dict[str, Mapping[str, str]]  # queue access control's; in the signature
    queue_notes: QueueNotes  # why a named queue is not in the tree; in the signature
    axis: ResourceAxis
    arrays: NodeArrays
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    min_gpu_memory: float
    max_gpu_memory: float
    # Pods.
    pods: dict[int, CarriedPod] = field(default_factory=dict)  # by id() of the pod object
    by_sort_key: dict[SortKey, CarriedPod] = field(default_factory=dict)
    by_key: dict[str, CarriedPod] = field(default_factory=dict)
    extended_resource_pods: dict[str, int] = field(default_factory=dict)  # pods per extended resource they request
    node_pods: dict[str, dict[SortKey, CarriedPod]] = field(default_factory=dict)  # node → the pods charged on it
    group_pods: dict[str, dict[SortKey, CarriedPod]] = field(default_factory=dict)  # PodGroup key → its pods
    task_keys: list[SortKey] = field(default_factory=list)  # sorted: the order of `tasks`
    tasks: TaskMap = field(init=False)  # in the order of `task_keys`
    other_scheduler_pods: list[SortKey] = field(default_factory=list)  # sorted: those `other_usage` sums
    other_usage: Vector | None = None
    deleting: set[SortKey] = field(default_factory=set)  # pods being deleted: their placements depend on the time
    pod_problems: dict[SortKey, Problem] = field(default_factory=dict)
    # The pods on nodes or in `tasks` with pod anti-affinity, and those with preferred pod (anti-)affinity.
    anti_affine: dict[SortKey, CarriedPod] = field(default_factory=dict)
    soft_affine: dict[SortKey, CarriedPod] = field(default_factory=dict)
    # PodGroups and jobs.
    groups: dict[int, CarriedGroup] = field(default_factory=dict)  # by id() of the PodGroup object
    warned: set[int] = field(default_factory=set)  # keys of `groups` whose PodGroups carry warnings
    group_by_key: dict[str, CarriedGroup] = field(default_factory=dict)
    job_keys: list[SortKey] = field(default_factory=list)  # sorted: the order of `jobs`
    job_by_group: dict[str, JobInfo] = field(default_factory=dict)  # PodGroup key → its job in `jobs`
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)  # uids of jobs with a pending task
    stale_watch: set[str] = field(default_factory=set)  # uids of jobs `watches_staleness` names
    group_problems: dict[SortKey, Problem] = field(default_factory=dict)  # of jobs, by job key
    queue_problems: dict[SortKey, tuple[str, Problem]] = field(default_factory=dict)  # job key → (uid, problem)
    # Queues' sums (the proportion plugin opens from them).
    queue_job_keys: dict[str, list[SortKey]] = field(default_factory=dict)  # queue → its jobs' keys, sorted
    job_rows: dict[str, Rows] = field(default_factory=dict)  # PodGroup key → its job's rows
    queue_sums: dict[str, PrefixSums] = field(default_factory=dict)  # queue → its sums after each of its jobs
    queue_charges: dict[str, QueueCharge] = field(default_factory=dict)
    bind_requests: BindRequestIndex = field(default_factory=BindRequestIndex)
    # With a change feed (`ClusterObjects.feed`): its marks at the last build.
    marks: dict[str, object] = field(default_factory=dict)
    task_log: TaskLog = field(default_factory=TaskLog)  # the uids of `Reached.task_changes`, build after build
    changes: ChangeLog = field(default_factory=ChangeLog)  # what the last snapshot's users changed: undone next build
    last_snapshot: weakref.ref[Snapshot] | None = None
    appending: bool = False  # a build from nothing: keys arrive in order, appended
    reached: Reached = field(default_factory=Reached)

    def __post_init__(self) -> None:
        self.tasks = TaskMap(self._tasks_in_order)

    def _tasks_in_order(self) -> Iterator[tuple[str, PodInfo]]:
        for k in self.task_keys:
            info = self.by_sort_key[k].info
            yield str(info.uid), info
