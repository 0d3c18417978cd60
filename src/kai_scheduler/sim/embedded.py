"""The embedded cluster: the real podgrouper, scheduler, binder, status controllers, kubelet, workload
controller and resourceclaim controller (DRA claims from templates) over an in-memory store.

`kai schedule` runs cycles on it at one instant: the podgrouper and the status controllers settle the loaded
objects first, and between cycles the podgrouper, the status controllers, the binder and the kubelet act in
that order. The simulator drives the same pieces over virtual time. Nothing in the scheduling logic knows it
runs here. Pods that already name an existing PodGroup (scenario files carry theirs) keep it: the podgrouper
leaves external PodGroups alone, as KAI does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.reservation import ReservationConfig
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.controllers.resourceclaims import ResourceClaimController
from kai_scheduler.framework.config import Flags, SchedulerConfig
from kai_scheduler.framework.statement import Op
from kai_scheduler.podgrouper.context import Config as GrouperConfig
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import Scheduler, usage_source
from kai_scheduler.sim.kubelet import Controller, Kubelet
from kai_scheduler.sim.shards import Shards
from kai_scheduler.store.interface import JSON
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.shared import SharedReads


def grouper_config(flags: Flags) -> GrouperConfig:
    """The podgrouper's settings from the scheduler flags they share (one command line in `kai run`)."""
    return GrouperConfig(
        scheduler_name=flags.scheduler_name,
        queue_label_key=flags.queue_label_key,
        node_pool_label_key=flags.nodepool_label_key,
    )


class EmbeddedCluster:
    """`shards`: several schedulers side by side, each (name, configuration with its partition-label-value)
    over the same store, as scheduler shards run in a cluster; each cycle runs them one after the other, and
    `cycle()` gives what they decided together. Without shards, one scheduler with `config`."""

    def __init__(
        self,
        objects: Iterable[JSON],
        config: SchedulerConfig,
        *,
        now: float,
        instant_termination: bool = True,
        shards: Sequence[tuple[str, SchedulerConfig]] = (),
    ) -> None:
        self.clock = ManualClock(now)
        self.store = MemoryStore(self.clock)
        self.store.add_many(list(objects))
        self.config = config
        # The components read the store's own objects, not copies of them: none changes what it reads (the
        # test suite checks it), and each copy was one more JSON tree per object per component.
        reads = SharedReads(self.store)
        if shards:
            # A reader of every pool for the views; each shard schedules its own.
            self.scheduler = Scheduler(reads, config, self.clock, whole_cluster=True)
            self.shards: Shards | None = Shards(reads, shards, self.scheduler, self.clock)
        else:
            self.scheduler = Scheduler(reads, config, self.clock, usage_source(config, self.clock, offline=True))
            self.shards = None
        self.binder = Binder(reads, self.clock, ReservationConfig(assign_indices=True))
        self.kubelet = Kubelet(self.store, self.clock, instant=instant_termination)
        self.controller = Controller(self.store)
        self.podgrouper = PodGrouper(reads, grouper_config(config.flags))
        self.podgroup_status = PodGroupStatusController(reads)
        self.queue_status = QueueStatusController(reads)
        self.resource_claims = ResourceClaimController(self.store)
        self.results: list[CycleResult] = []
        self.settle()

    def settle(self) -> None:
        """What the cluster's own controllers do with new objects: group pods, then write statuses."""
        self.podgrouper.reconcile()
        self.resource_claims.reconcile()
        self.podgroup_status.reconcile()
        self.queue_status.reconcile()

    def cycle(self) -> CycleResult:
        result = (self.shards or self.scheduler).run_once()
        self.results.append(result)
        return result

    @property
    def placed_by(self) -> dict[str, str]:
        """Pod key → the shard that last placed it (empty without shards)."""
        return self.shards.placed_by if self.shards is not None else {}

    def snapshot(self) -> Snapshot:
        """The cluster now as a snapshot: the scheduler's, or with shards every pool at once."""
        return self.scheduler.snapshot(all_pools=self.shards is not None)

    def between_cycles(self, seconds: float | None = None) -> None:
        """What the cluster does while the scheduler sleeps: group, update statuses, bind, start, terminate,
        recreate; time passes."""
        self.settle()
        self.binder.reconcile()
        self.kubelet.step()
        self.controller.step()
        self.clock.advance(self.config.flags.schedule_period if seconds is None else seconds)

    def run(self, cycles: int) -> list[CycleResult]:
        for i in range(cycles):
            if i:
                self.between_cycles()
            self.cycle()
        return self.results

    def view(self) -> Snapshot:
        """The cluster now, as a fresh snapshot, with the last cycle's pipelined tasks shown Pipelined."""
        snap = self.snapshot()
        if self.results:
            for op in self.results[-1].operations:
                if op.op in (Op.PIPELINE, Op.UNEVICT) and op.after.status == PodStatus.PIPELINED:
                    task = snap.tasks.get(str(op.task.uid)) or _by_key(snap, op.task.key)
                    if task is not None and task.is_pending:
                        snap.show(task, Placement(PodStatus.PIPELINED, op.after.node, op.after.gpu_groups))
                elif op.moved:  # its pod is still terminating on the old node: shown where it will run
                    task = snap.tasks.get(str(op.task.uid))
                    if task is not None and task.is_releasing:
                        snap.show(task, Placement(PodStatus.PIPELINED, op.after.node, op.after.gpu_groups))
        return snap


def _by_key(snap: Snapshot, key: str) -> PodInfo | None:
    return next((t for t in snap.tasks.values() if t.key == key), None)
