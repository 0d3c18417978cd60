"""`kai simulate`'s replay: the real scheduler and binder over an in-memory cluster, driven by virtual time.

One loop pops events (`engine`) and gives them their meaning:

- ARRIVAL: the job's owner object and pods are created (`workload`); a cycle is asked for.
- CYCLE: the podgrouper groups new pods and the status controllers update PodGroup and Queue status; the
  scheduler runs once; the binder binds what it placed; the kubelet starts bound pods. When the cycle changed
  something and work is still pending, the next cycle is one period later.
- FINISH: `duration` after all a job's pods ran (the run it belongs to: an interrupted run never finishes),
  its pods succeed and go; a cycle is asked for.
- TERMINATE: an evicted pod's grace period is over: the kubelet removes it and its owner recreates it Pending;
  a cycle is asked for.
- WAKE: a time-based rule (queue min runtime, staleness grace) may now let the scheduler act.
- AUTOSCALE: with the scenario's `autoscaler:`, the model adds nodes for scaling pods that waited long enough,
  or removes added nodes idle long enough (sim/autoscaler.py); a cycle is asked for when nodes came.

Cycles run on the grid of `--schedule-period` (KAI's default: 1 s), but only when something happened that a
cycle could act on or that changes the queues' demand: an arrival, a job's end, a pod gone. A cycle in which
nothing changed decides nothing and leaves the fair shares as they were, so skipping it changes no figure
(`Options.every_period` runs them all, to check exactly that); an idle hour costs nothing, and the replay
stops when nothing is due: work that can never fit is left pending and reported, never looped on.

What happens to pods is read back from the store's watch, as a kubelet and a controller would, so evictions
by any action, binds and deletions all take the same path.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kai_scheduler.api import constants, mig
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.api.fields import parse_time
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.queue import Queue
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.reservation import ReservationConfig
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.controllers.resourceclaims import ResourceClaimController
from kai_scheduler.fakenodes import lifecycle
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.scenario.model import Scenario
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import Scheduler, usage_source
from kai_scheduler.sim import embedded, metrics, occupancy, workload
from kai_scheduler.sim.autoscaler import AutoscalerModel, Change
from kai_scheduler.sim.engine import Engine, Event, Kind, next_tick
from kai_scheduler.sim.kubelet import Kubelet
from kai_scheduler.sim.shards import Shards
from kai_scheduler.store.informer import Informer
from kai_scheduler.store.interface import JSON, NotFound
from kai_scheduler.store.memory import MemoryStore

HISTORY_SIZE = 512  # watch events the store keeps per resource: a watcher walks at most this far back
QUARTERS = ((0.25, "1/4"), (0.5, "1/2"), (0.75, "3/4"))


@dataclass(frozen=True, slots=True)
class Options:
    schedule_period: float | None = None  # None: the configuration's flag
    until: float | None = None  # stop at this virtual second
    occupancy_at: tuple[float, ...] | None = None  # None: a quarter, half, three quarters of the horizon
    timeline: bool = False  # keep `Replay.timeline`: (time, what, key) per happening
    every_period: bool = False  # a cycle every period while any event is due (no skipping)


@dataclass(slots=True)
class Run:
    """One finished replay."""

    name: str
    label: str
    summary: metrics.Summary
    series: metrics.Series
    maps: list[occupancy.OccupancyMap]
    total_gpus: float
    parents: dict[str, str] = field(default_factory=dict)  # queue → parent ("" for a top queue)
    jobs: list[workload.Job] = field(default_factory=list)
    horizon: float = 0.0  # `--until`, or when the last job would end if nothing waited
    autoscaled: list[Change] = field(default_factory=list)  # nodes the autoscaler model added and removed


Progress = Callable[["Replay"], None]


class Replay:
    def __init__(
        self,
        scenario: Scenario,
        config: SchedulerConfig,
        options: Options = Options(),
        *,
        label: str = "",
        shards: Sequence[tuple[str, SchedulerConfig]] = (),
    ) -> None:
        """`shards`: several schedulers side by side (sim.shards), one per node pool; `config` then serves the
        flags every component shares (scheduler name, label keys, schedule period)."""
        self.name = scenario.name
        self.label = label
        self.options = options
        cluster, jobs = workload.split(scenario.objects, scenario.jobs)
        self.engine = Engine(scenario.now)
        self.store = MemoryStore(self.engine.clock, history_size=HISTORY_SIZE)
        self.store.add_many(cluster)
        if shards:  # the views read every pool; the shards schedule
            self.scheduler = Scheduler(self.store, config, self.engine.clock, whole_cluster=True)
            self.shards: Shards | None = Shards(self.store, shards, self.scheduler, self.engine.clock)
        else:
            self.scheduler = Scheduler(
                self.store, config, self.engine.clock, usage_source(config, self.engine.clock, offline=True)
            )
            self.shards = None
        self.binder = Binder(self.store, self.engine.clock, ReservationConfig(assign_indices=True))
        self.kubelet = Kubelet(self.store, self.engine.clock)
        self.podgrouper = PodGrouper(self.store, embedded.grouper_config(config.flags))
        self.resource_claims = ResourceClaimController(self.store)
        self.podgroup_status = PodGroupStatusController(self.store)
        self.queue_status = QueueStatusController(self.store)
        self.workload = workload.Workload(self.store, jobs)
        self.period = options.schedule_period or config.flags.schedule_period
        if self.period <= 0:
            raise UserError(f"--schedule-period: must be above 0, got {self.period:g}")
        self.staleness_grace = config.flags.default_staleness_grace_period
        nodes = [Node.from_dict(o) for o in cluster if o.get("kind") == "Node"]
        self.node_gpu_memory = {n.name: float(n.gpu_memory_mib or 0) for n in nodes}
        total = sum(
            n.allocatable.get(constants.RESOURCE_GPU, 0.0) + mig.units_of(n.allocatable)
            for n in nodes
            if n.ready and not n.unschedulable
        )
        queues = [Queue.from_dict(o) for o in cluster if o.get("kind") == "Queue"]
        self.queue_runtimes = _min_runtimes(queues)
        self.horizon = (
            options.until
            if options.until is not None
            else max((j.submit_at + (j.duration or 0.0) for j in scenario.jobs), default=0.0)
        )
        instants = options.occupancy_at
        marks = (
            [(t, "asked") for t in instants]
            if instants is not None
            else [(share * self.horizon, f"{name} of horizon") for share, name in QUARTERS]
        )
        self.recorder = metrics.Recorder(total, {q.name: q.parent_queue for q in queues})
        self._pods = Informer(self.store, "pods").subscribe()
        self._pods.take()  # from now on: the pods there already are looked at once the replay runs
        self._running: set[str] = set()
        self._terminating: set[str] = set()
        self._next_cycle: float | None = None
        self._last_cycle: float | None = None
        self.cycles = 0
        self._starts = 0
        self._map_at = sorted(marks)
        self.timeline: list[tuple[float, str, str]] = []
        self.autoscaler = (
            AutoscalerModel(self.store, self.engine.clock, scenario.autoscaler, config.flags.scheduler_name)
            if scenario.autoscaler
            else None
        )
        self._autoscale_at: float | None = None
        # Called after each cycle with its time and result (`kai simulate --dashboard` records its pictures).
        self.observers: list[Callable[[float, CycleResult], None]] = []

    # --- the loop ---

    def run(self, progress: Progress | None = None) -> Run:
        """Replay until nothing is due (or `until`); then one more cycle gives the scheduler's view of the
        final state (fair shares drop with demand), and the replay goes on if that cycle acted."""
        started = time.perf_counter()
        for job in self.workload.jobs.values():
            self.engine.at(job.meta.submit_at, Kind.ARRIVAL, job.key)
        # What is loaded now (the jobs' objects, the cluster, the parsed nodes) lives as long as the replay:
        # kept out of the collector's full collections, which would otherwise walk it a few times per thousand
        # cycles for nothing. The young generations are collected first, so the garbage of the loading is not
        # frozen; the old one is not walked (a full collection walks the whole heap of the process: in a
        # process that has run other things, a long pause per replay); what garbage it may hold is left to a
        # full collection after the replay, once unfrozen. The replay decides the same either way.
        gc.collect(1)
        gc.freeze()
        try:
            self._observe()  # pods of the cluster itself (no job), there from the start
            while (drained := self._drain(progress)) and self.cycles and self._last_cycle != self.engine.now:
                self._cycle()
                if not self.engine:
                    break
        finally:
            gc.unfreeze()
        end = self.engine.now
        summary = metrics.summarize(
            self.recorder,
            self.workload.jobs.values(),
            end,
            wall_seconds=time.perf_counter() - started,
            stopped_at=None if drained else end,
        )
        return Run(
            self.name,
            self.label,
            summary,
            self.recorder.series,
            self.recorder.occupancy_maps(),
            self.recorder.total_gpus,
            self.recorder.parents,
            list(self.workload.jobs.values()),
            self.horizon,
            list(self.autoscaler.changes) if self.autoscaler is not None else [],
        )

    def _drain(self, progress: Progress | None) -> bool:
        """Handle events until none is left (True) or the next is past `until` (False)."""
        until = self.options.until
        while self.engine:
            upcoming = self.engine.peek()
            if upcoming is not None:
                self._maps_before(min(upcoming.time, until if until is not None else upcoming.time))
            if until is not None and upcoming is not None and upcoming.time > until:
                self.engine.advance_to(until)
                self._maps_before(until, inclusive=True)
                return False
            self._handle(self.engine.pop())
            self._sample()
            if progress is not None:
                progress(self)
        self._maps_before(self.engine.now, inclusive=True)
        return True

    def _maps_before(self, time: float, *, inclusive: bool = False) -> None:
        """Take the asked node × GPU maps due before `time`: the cluster does not change between events,
        so the state now is the state at those instants."""
        while self._map_at and (self._map_at[0][0] < time or (inclusive and self._map_at[0][0] <= time)):
            self.recorder.add_map(self.scheduler.snapshot(all_pools=self.shards is not None), *self._map_at.pop(0))

    def _log(self, what: str, key: str = "") -> None:
        if self.options.timeline:
            self.timeline.append((self.engine.now, what, key))

    def _sample(self) -> None:
        self.recorder.sample(self.engine.now, self.workload.pending, self.workload.running)

    def _handle(self, event: Event) -> None:
        if event.kind is Kind.CYCLE:
            self._cycle()
        elif event.kind is Kind.ARRIVAL:
            job = self.workload.jobs[event.key]
            self._log("arrive", job.key)
            self.workload.arrive(job, self.engine.now, keep_creation=job.meta.submit_at == 0)
            self._observe()
            self._ask_cycle()
        elif event.kind is Kind.FINISH:
            job = self.workload.jobs[event.key]
            if job.phase is workload.Phase.RUNNING and job.generation == event.generation:
                self._log("finish", job.key)
                self.workload.finish(job, self.engine.now)
                self._observe()
                self._ask_cycle()  # the queue's demand dropped: its fair share goes to the others
        elif event.kind is Kind.TERMINATE:
            self._terminate(event.key)
        elif event.kind is Kind.WAKE:
            self._ask_cycle_if_pending()
        elif event.kind is Kind.AUTOSCALE:
            self._autoscale()

    def _cycle(self) -> None:
        """One scheduling cycle, the binds it asked for, the pods that start.

        The next cycle is asked for only after binds (work may remain: queue depth, elastic jobs): evictions
        and pipelines wait for the pods to terminate, which are events of their own."""
        self._next_cycle = None
        self._last_cycle = self.engine.now
        self.podgrouper.reconcile()
        self.resource_claims.reconcile()
        self.podgroup_status.reconcile()
        self.queue_status.reconcile()
        result = (self.shards or self.scheduler).run_once()
        self._log("cycle", f"{result.binds} binds" if result.binds else "")
        self.binder.reconcile()
        started = self._starts
        self._observe()
        self.cycles += 1
        self.recorder.cycle(self.engine.now, result, has_pending=self.workload.pending > 0)
        self._plan_autoscale()
        for observe in self.observers:
            observe(self.engine.now, result)
        if self.options.every_period and self.engine:
            self._ask_cycle()
        elif result.binds and self._starts > started:  # progress: binds that failed do not spin the clock
            self._ask_cycle_if_pending()
        self._sample()

    def _plan_autoscale(self) -> None:
        """Let the autoscaler model look (its adjuster runs after each cycle) and wake it when it is due."""
        if self.autoscaler is None:
            return
        due = self.autoscaler.observe(self.engine.now)
        if due is not None and (self._autoscale_at is None or due < self._autoscale_at):
            self._autoscale_at = due
            self.engine.at(due, Kind.AUTOSCALE)

    def _autoscale(self) -> None:
        assert self.autoscaler is not None
        if self._autoscale_at is not None and self._autoscale_at > self.engine.now:
            return  # superseded by an earlier one, which already ran
        self._autoscale_at = None
        self.autoscaler.observe(self.engine.now)
        if self.autoscaler.act(self.engine.now):
            self._log("autoscale", ", ".join(self.autoscaler.added))
            nodes = [Node.from_dict(o) for o in self.store.list("nodes")[0]]
            self.node_gpu_memory = {n.name: float(n.gpu_memory_mib or 0) for n in nodes}
            self.recorder.total_gpus = sum(
                n.allocatable.get(constants.RESOURCE_GPU, 0.0) + mig.units_of(n.allocatable)
                for n in nodes
                if n.ready and not n.unschedulable
            )
            self._ask_cycle()
        self._plan_autoscale()

    def _terminate(self, pod_key: str) -> None:
        namespace, name = pod_key.split("/", 1)
        try:
            pod = self.store.get("pods", name, namespace)
        except NotFound:
            return
        if not pod["metadata"].get("deletionTimestamp"):
            return
        self.store.finish_deletion(namespace, name)
        self._observe()
        self._ask_cycle()

    def _ask_cycle_if_pending(self) -> None:
        if self.workload.pending > 0:
            self._ask_cycle()

    def _ask_cycle(self) -> None:
        if self._next_cycle is None:
            self._next_cycle = next_tick(self.engine.now, self.period, self._last_cycle)
            self.engine.at(self._next_cycle, Kind.CYCLE)

    # --- what the kubelet and the owners see ---

    def _observe(self) -> None:
        """Drain the pod watch and react as the kubelet and the owners would, until nothing new happens."""
        while True:
            batch = self._pods.take()
            if batch.relisted:
                self._resync({key: pod for key, pod in batch.changes if pod is not None})
                continue
            if not batch.changes:
                return
            for key, pod in batch.changes:
                if pod is None:
                    self._gone(key)
                else:
                    self._changed(key, pod)

    def _changed(self, key: str, pod: JSON) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec", {}), pod.get("status", {})
        phase = status.get("phase", "Pending")
        if meta.get("deletionTimestamp"):
            if key not in self._terminating:
                self._log("terminating", key)
                self._terminating.add(key)
                self._stopped(key)
                deadline = parse_time(meta["deletionTimestamp"]) - self.engine.start
                delay = lifecycle.termination_delay(meta)  # a scenario's terminatesAfter
                if delay is not None:
                    deadline += delay
                if deadline != math.inf:  # never: stuck terminating
                    self.engine.at(max(deadline, self.engine.now), Kind.TERMINATE, key)
        elif phase == "Pending" and spec.get("nodeName"):
            self.kubelet.start(meta.get("namespace", ""), meta["name"])
        elif phase == "Running" and key not in self._running:
            self._started(key, pod)
        elif phase in ("Succeeded", "Failed"):
            self._stopped(key)
            self.recorder.pod_off(key)

    def _started(self, key: str, pod: JSON) -> None:
        self._running.add(key)
        self._starts += 1
        job = self.workload.job_of(key)
        queue = job.meta.queue if job else (pod["metadata"].get("labels") or {}).get(constants.LABEL_QUEUE, "")
        # A GPU reservation pod holds the device its fractional pods share, whose portions count already.
        if pod["metadata"].get("namespace") != constants.RESERVATION_NAMESPACE:
            self.recorder.pod_on(key, queue, self._gpus(pod))
        if job is None or not self.workload.pod_running(key, self.engine.now):
            return
        self._log("start", job.key)
        if job.meta.duration is not None:
            self.engine.after(job.meta.duration, Kind.FINISH, job.key, job.generation)
        for runtime in self.queue_runtimes.get(job.meta.queue, ()):
            self.engine.after(runtime, Kind.WAKE, job.key)

    def _stopped(self, key: str) -> None:
        """The pod no longer runs for its job (a terminating pod still holds its GPUs until it is gone)."""
        if key not in self._running:
            return
        self._running.discard(key)
        job = self.workload.job_of(key)
        if job is not None and self.workload.pod_stopped(key) and job.is_gang:
            self.engine.after(self.staleness_grace + self.period, Kind.WAKE, job.key)

    def _gone(self, key: str) -> None:
        self._terminating.discard(key)
        self._stopped(key)
        self.recorder.pod_off(key)
        job = self.workload.job_of(key)
        if job is not None and job.is_live:
            self._log("gone", key)
            if self.workload.pod_gone(key):
                self._log("recreate", key)

    def _resync(self, present: dict[str, JSON]) -> None:
        """The watch fell too far behind and the pods were listed again: replay what changed as events."""
        for key in sorted(self._running | self._terminating):
            if key not in present:
                self._gone(key)
        for job in self.workload.unfinished():
            for key in job.templates:
                if key not in present and job.is_live:
                    self._gone(key)
        for key, pod in present.items():
            self._changed(key, pod)

    def _gpus(self, pod: JSON) -> float:
        """GPU devices a running pod holds: whole devices and MIG instances' slices, or devices × its portion."""
        try:
            gpu = Pod.from_dict(pod).gpu
        except ObjectError:
            return 0.0
        if gpu.whole or gpu.mig:
            return float(gpu.whole + gpu.mig_units)
        if gpu.fraction:
            return gpu.fraction * gpu.num_devices
        if gpu.memory_mib:
            memory = self.node_gpu_memory.get(pod.get("spec", {}).get("nodeName", ""), 0.0)
            return min(1.0, gpu.memory_mib / memory) * gpu.num_devices if memory else float(gpu.num_devices)
        return 0.0


def _min_runtimes(queues: list[Queue]) -> dict[str, tuple[float, ...]]:
    """Per queue, the min runtimes (preempt, reclaim) on it and its ancestors: when a running job may be
    taken, so the replay wakes the scheduler then."""
    by_name = {q.name: q for q in queues}
    out: dict[str, tuple[float, ...]] = {}
    for q in queues:
        found: set[float] = set()
        current: Queue | None = q
        seen: set[str] = set()
        while current is not None and current.name not in seen:
            seen.add(current.name)
            found.update(r for r in (current.preempt_min_runtime, current.reclaim_min_runtime) if r)
            current = by_name.get(current.parent_queue)
        out[q.name] = tuple(sorted(found))
    return out
