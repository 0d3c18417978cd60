"""`Snapshot`: the cluster as one cycle sees it (KAI `cache/cluster_info`), and what it answers (capacity, DRA
state and charges, MIG nodes, label columns, stale candidates). Its records change only through its change log
(`changes.ChangeLog`): `move` (statements; the node ledgers follow), `show`, `set_memory_portion` and
`set_stale_since` each log the change they make."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kai_scheduler.api import constants, mig
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.topology import Topology
from kai_scheduler.cluster.dra import DraDerived, DraObjects, DraState, is_claim_charged, network_gpus
from kai_scheduler.cluster.dra import Owner as DraOwner
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo
from kai_scheduler.cluster.node_labels import LabelColumns
from kai_scheduler.cluster.node_set_values import NodeSetValues
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import BITS, ON_NODE, PodStatus
from kai_scheduler.cluster.queue_charge import QueueCharge
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import GPU, ResourceAxis, Vector
from kai_scheduler.cluster.snapshot.changes import ChangeLog, Moved, Portioned, Restamped, Shown, TaskLog
from kai_scheduler.cluster.snapshot.inputs import Problem, SnapshotParams

_ON_NODE = ON_NODE.value


@dataclass(slots=True, eq=False, weakref_slot=True)
class Snapshot:
    """The cluster as one cycle sees it: nodes with their ledgers, tasks, jobs and the queue tree, with the
    problems found on the way (built by `builder.build`; whatever changes its records logs it in `changes`)."""

    now: float
    params: SnapshotParams
    axis: ResourceAxis
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    arrays: NodeArrays
    tasks: Mapping[str, PodInfo]  # by uid, in the order of their pods' keys
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
    # Every change made to the records since the build (the carried model's log, which its next build undoes).
    changes: ChangeLog = field(default_factory=ChangeLog)
    # The pods on nodes or among `tasks` that declare pod anti-affinity, as built (a build from nothing lists them
    # as it makes the records, the carried model keeps the list), and likewise those that declare preferred pod
    # (anti-)affinity (`podaffinity` scores toward them).
    anti_affine: list[PodInfo] = field(default_factory=list)
    soft_affine: list[PodInfo] = field(default_factory=list)
    # Jobs stale when the snapshot was built, or whose PodGroup carries a stale timestamp, in `jobs` order; with
    # the jobs a session moved tasks of, these are all the jobs whose staleness can be new (`stale_candidates`).
    stale_watch: list[JobInfo] = field(default_factory=list)
    # Per queue, what its jobs held and waited for at the build (`queue_charge.queue_charges`; the carried model
    # keeps them and sums again the queues whose jobs changed).
    queue_charges: dict[str, QueueCharge] = field(default_factory=dict)
    dra_objects: DraObjects = field(default_factory=DraObjects)
    dra_memo: DraDerived = field(default_factory=DraDerived)
    _dra: DraState | None = None
    namespace_objects: list[Namespace] = field(default_factory=list)
    _namespace_labels: dict[str, Mapping[str, str]] | None = None
    # Bumped by every `move`: a value derived from the placements (free capacity, a job's elastic band) and
    # stored with the version it was computed at is still true while the version is the same.
    version: int = 0
    # Each job's last `move`, as the version it made: a value derived from one job's placements and stored with the
    # version it was computed at is still true while the job has not moved since.
    job_moved: dict[str, int] = field(default_factory=dict)
    # What plugins keep from one cycle to the next, by plugin: the carried model hands every snapshot it builds
    # the same dict (`Memo.plugins`), a build without a memo an empty one. A plugin checks what it finds against the
    # snapshot it is given (another snapshot may have been built in between, or the model from nothing).
    plugin_memo: dict[str, object] = field(default_factory=dict)
    # The log of replaced task records and its end at this build: `tasks` is the log's `tasks` at `task_mark`. The
    # carried model keeps one log build after build; a build from nothing starts its own, empty.
    task_log: TaskLog = field(default_factory=TaskLog)
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
        moved = [self.jobs[uid] for uid in self.changes.moved_jobs() if uid in self.jobs]
        if not moved:
            return list(self.stale_watch)
        return sorted({id(j): j for j in (*self.stale_watch, *moved)}.values(), key=lambda j: (j.namespace, j.name))

    def show(self, task: PodInfo, placement: Placement) -> None:
        """Show `task` at `placement` for a reader of this snapshot, leaving the ledgers as they are."""
        self.changes.record(Shown(task, task.placement, placement))

    def set_memory_portion(self, task: PodInfo, portion: float) -> None:
        """Size a gpu-memory task's portion of one GPU (GPU sharing, on the node it chose)."""
        if task.memory_portion != portion:
            self.changes.record(Portioned(task, task.memory_portion, portion))

    def set_stale_since(self, job: JobInfo, when: float | None) -> None:
        """Set or clear a job's stale timestamp (stalegangeviction, on `stale_candidates()`)."""
        if job.stale_since != when:
            self.changes.record(Restamped(job, job.stale_since, when))

    def move(self, task: PodInfo, after: Placement) -> None:
        """Move `task` to `after`: off its old node's ledgers, onto the new node's (statements call this)."""
        before = task.placement
        nodes = self.node_by_name
        on_before = bool(BITS[before.status] & _ON_NODE and before.node)
        on_after = bool(BITS[after.status] & _ON_NODE and after.node)
        if on_before and on_after and before.node == after.node and nodes[after.node].move_task(task, before, after):
            on_before = on_after = False  # on the same node, in one pass over its ledgers
        if on_before:
            nodes[before.node].remove_task(task, before)
        self.changes.record(Moved(task, before, after))
        self.version += 1
        self.job_moved[task.job_uid] = self.version
        if on_after:
            nodes[after.node].add_task(task, after)
