"""The saturation experiment (`kai simulate --trace … --saturate`): fill the cluster with trace tasks until the
GPUs they ask for reach a multiple of the cluster's, and record how much GPU capacity stays unallocated.

The method of the FGD paper (Weng et al., "Beware of Fragmentation", USENIX ATC '23, §6): tasks are drawn at
random, with replacement, from the trace (their CPU, memory, whole or fractional GPUs and GPU-model constraint
as `sim.trace` maps them), submitted one after the other, and never leave. A task that the scheduler cannot
place when it arrives is withdrawn: it counts in the arrived demand but never runs (the cluster only fills
up, so what does not fit now would not fit later either). All tasks go to one queue, so the queues' fair shares
play no part: what is measured is placement.

The real scheduler (the configuration's plugins, its actions), and the binder, run over the in-memory store.
`per_cycle` tasks arrive before each scheduling cycle (a cluster whose arrivals come faster than its schedule
period places several per cycle; they arrive in one second, so the cycle takes them in its job order, by UID
among equals); 1 is one cycle per task.

After each cycle a point records, as shares of the cluster's GPUs: the demand arrived so far, the GPUs
allocated, the GPUs unallocated (1 − allocated), and the expected fragmentation of the cluster for the
workload of the drawn tasks (`plugins.gpufrag.measure`): the free GPU capacity the workload's tasks, weighed by
how common each shape is, could not use.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.errors import UserError
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.reservation import ReservationConfig
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.resources import CPU, MEMORY
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.plugins.gpufrag import measure, state
from kai_scheduler.scenario import build as scenario_build
from kai_scheduler.scenario.entry import Where
from kai_scheduler.scenario.source import Lines
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import Scheduler
from kai_scheduler.sim import trace, workload
from kai_scheduler.store.interface import JSON, NotFound
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.shared import SharedReads

QUEUE = "default"
MIB = 1024.0 * 1024.0
FULL = 1.0  # the arrived demand at which `unallocated_gpu_ratio_at_full` is read
PERIOD = 1.0  # virtual seconds between cycles


@dataclass(frozen=True, slots=True)
class Point:
    arrived: float  # GPUs asked for by the tasks arrived so far / cluster GPUs
    allocated: float  # GPUs allocated / cluster GPUs
    fragmentation: float  # expected fragmentation for the workload / cluster GPUs
    tasks: int  # tasks arrived so far
    failed: int  # of them, withdrawn unplaced

    @property
    def unallocated(self) -> float:
        return 1.0 - self.allocated


@dataclass(slots=True)
class SaturationRun:
    """One finished experiment."""

    name: str
    label: str
    total_gpus: float
    points: list[Point] = field(default_factory=list)
    cycles: int = 0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # of this process: what the run costs when others share the machine

    def at(self, arrived: float, values: Sequence[float] | None = None) -> float:
        """A series (default: the unallocated share) read at an arrived demand, linear between points;
        NaN outside the points."""
        xs = [p.arrived for p in self.points]
        ys = list(values) if values is not None else [p.unallocated for p in self.points]
        if not xs or arrived < xs[0] - tolerance.SHARE or arrived > xs[-1] + tolerance.SHARE:
            return math.nan
        return float(np.interp(arrived, xs, ys))

    def to_json(self) -> dict[str, Any]:
        last = self.points[-1] if self.points else Point(0.0, 0.0, 0.0, 0, 0)
        return {
            "arrived": [round(p.arrived, 6) for p in self.points],
            "allocated_gpu_ratio": [round(p.allocated, 6) for p in self.points],
            "unallocated_gpu_ratio": [round(p.unallocated, 6) for p in self.points],
            "fragmentation_ratio": [round(p.fragmentation, 6) for p in self.points],
            "unallocated_gpu_ratio_at_full": _round(self.at(FULL)),
            "total_gpus": self.total_gpus,
            "tasks": last.tasks,
            "failed_tasks": last.failed,
            "cycles": self.cycles,
            "wall_seconds": round(self.wall_seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
        }


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


def draw(tasks: Sequence[trace.Task], total_gpus: float, until_demand: float, seed: int) -> list[trace.Task]:
    """Tasks drawn at random with replacement until the GPUs they ask for reach `until_demand` × `total_gpus`."""
    if not until_demand > 0 or not math.isfinite(until_demand):
        raise UserError(f"--until-demand: must be above 0, got {until_demand:g}")
    gpus = np.array([task_gpus(t) for t in tasks])
    if not len(tasks) or gpus.sum() <= 0:
        raise UserError("--saturate: the trace has no task that asks for a GPU")
    if total_gpus <= 0:
        raise UserError("--saturate: the node list has no GPU")
    rng = np.random.default_rng(seed)
    target = until_demand * total_gpus
    out: list[trace.Task] = []
    asked = 0.0
    while asked < target - tolerance.SHARE:
        for i in rng.integers(0, len(tasks), size=1024).tolist():
            out.append(tasks[i])
            asked += gpus[i]
            if asked >= target - tolerance.SHARE:
                break
    return out


def task_gpus(task: trace.Task) -> float:
    if task.num_gpu <= 0:
        return 0.0
    return task.num_gpu * (task.gpu_milli / 1000 if task.gpu_milli < 1000 else 1.0)


def workload_shapes(tasks: Sequence[trace.Task], nodes: Sequence[JSON]) -> tuple[measure.Shapes, measure.Bools]:
    """The drawn tasks' shapes weighed by count, and (nodes, shapes) eligibility from their GPU models."""
    counts = Counter((t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec) for t in tasks)
    keys = sorted(counts)
    devices = [n if g > 0 or n == 0 else 0 for _, _, n, g, _ in keys]
    per_device = [0.0 if n == 0 else (g / 1000 if g < 1000 else 1.0) for _, _, n, g, _ in keys]
    shapes = measure.Shapes.of(
        [k[0] for k in keys], [k[1] * MIB for k in keys], devices, per_device, [counts[k] for k in keys]
    )
    models = [n.get("metadata", {}).get("labels", {}).get(trace.GPU_MODEL_LABEL, "") for n in nodes]
    eligible = np.array([[not spec or model in spec for *_, spec in keys] for model in models], dtype=bool)
    return shapes, eligible.reshape(len(models), len(keys))


class Saturation:
    """One experiment: the drawn tasks over the node list under one scheduler configuration."""

    def __init__(
        self,
        nodes: list[dict[str, Any]],
        tasks: list[trace.Task],
        config: SchedulerConfig,
        *,
        per_cycle: int = 1,
        name: str = "saturation",
        label: str = "",
    ) -> None:
        if per_cycle < 1:
            raise UserError(f"--arrivals-per-cycle: must be at least 1, got {per_cycle}")
        self.name, self.label, self.per_cycle = name, label, per_cycle
        self.tasks = tasks
        doc = trace.to_scenario(nodes, [], 1.0, name=name)
        doc["queues"] = [{"name": QUEUE}]
        doc["jobs"] = [_job(i, t) for i, t in enumerate(tasks)]
        scenario = scenario_build.build(Where(name, Lines()), doc)
        cluster, self.jobs = workload.split(scenario.objects, scenario.jobs)
        self.clock = ManualClock(scenario.now)
        self.store = MemoryStore(self.clock)
        self.store.add_many(cluster)
        # As in the embedded cluster: the components read the store's own objects, not copies (none changes what
        # it reads; the test suite checks it), and copying every pod the binder looked at was a fifth of a run.
        reads = SharedReads(self.store)
        self.scheduler = Scheduler(reads, config, self.clock)
        self.binder = Binder(reads, self.clock, ReservationConfig(assign_indices=True))
        node_objects = [o for o in cluster if o.get("kind") == "Node"]
        self._node_objects = sorted(node_objects, key=lambda o: o["metadata"]["name"])
        shapes, eligible = workload_shapes(tasks, self._node_objects)
        self._meter = Meter(shapes, eligible)
        self._asked = [task_gpus(t) for t in tasks]

    def run(self, progress: Callable[[float], None] | None = None) -> SaturationRun:
        """Submit the tasks `per_cycle` at a time, a cycle after each batch; a point after each cycle."""
        started, cpu = time.perf_counter(), time.process_time()
        first = self.scheduler.snapshot()
        total = float(state.matrix(first).sum())
        out = SaturationRun(self.name, self.label, total)
        out.points.append(self._point(first, total, 0.0, 0, 0))
        del first
        asked, failed = 0.0, 0
        for start in range(0, len(self.jobs), self.per_cycle):
            batch = self.jobs[start : start + self.per_cycle]
            result, withdrawn = self.step(batch)
            failed += withdrawn
            asked += sum(self._asked[start : start + len(batch)])
            out.cycles += 1
            out.points.append(self._point(result.snapshot, total, asked, start + len(batch), failed))
            del result  # a snapshot nobody holds is updated in place by the next cycle, not rebuilt
            self.clock.advance(PERIOD)
            if progress is not None:
                progress(out.points[-1].arrived)
        out.wall_seconds = time.perf_counter() - started
        out.cpu_seconds = time.process_time() - cpu
        return out

    def submit(self, jobs: Sequence[workload.Job]) -> None:
        """The jobs' PodGroups and pods arrive now."""
        for job in jobs:
            for obj in job.objects:
                obj["metadata"].pop("creationTimestamp", None)  # stamped now, in arrival order
                self.store.create(obj)

    def step(self, jobs: Sequence[workload.Job]) -> tuple[CycleResult, int]:
        """`jobs` arrive; one scheduling cycle, then the binder; the jobs it did not place are withdrawn.
        Returns the cycle's result and how many were withdrawn."""
        self.submit(jobs)
        result = self.scheduler.run_once()
        self.binder.reconcile()
        placed = {op.task.key for op in result.operations}
        withdrawn = [job for job in jobs if not all(key in placed for key in job.templates)]
        for job in withdrawn:
            self._withdraw(job)
        return result, len(withdrawn)

    def _point(self, snap: Snapshot, total: float, asked: float, tasks: int, failed: int) -> Point:
        allocated, stranded = self._meter.measure(snap)
        return Point(asked / total, allocated / total, stranded / total, tasks, failed)

    def _withdraw(self, job: workload.Job) -> None:
        """The task could not be placed on arrival: it leaves (pods, then its PodGroup)."""
        for key in job.templates:
            namespace, name = key.split("/", 1)
            with contextlib.suppress(NotFound):
                self.store.delete("pods", name, namespace, grace_period_seconds=0)
        with contextlib.suppress(NotFound):
            self.store.delete("podgroups", job.meta.name, job.meta.namespace)


class Meter:
    """Allocated GPUs and the expected fragmentation of a snapshot, per node, kept between points.

    A node's row is measured again only when its free resources (any of them, or whether it is schedulable)
    differ from the last point's, or the session moved tasks on it; the others keep their values, so a point
    after one arrival costs a few nodes, not the cluster."""

    def __init__(self, shapes: measure.Shapes, eligible: npt.NDArray[np.bool_]) -> None:
        self.shapes, self.eligible = shapes, eligible
        self._free_seen: npt.NDArray[np.float64] | None = None
        self._schedulable_seen: npt.NDArray[np.bool_] | None = None
        self._gpu_free = np.zeros((0, 0))
        self._stranded = np.zeros(0)

    def measure(self, snap: Snapshot) -> tuple[float, float]:
        """(GPUs allocated, expected fragmentation in GPUs) of schedulable nodes."""
        arrays = snap.arrays
        slots = state.width(snap)
        if self._free_seen is None or self._gpu_free.shape != (len(snap.nodes), slots):
            self._gpu_free = state.matrix(snap, slots)
            rows = np.arange(len(snap.nodes))
            self._stranded = np.zeros(len(snap.nodes))
        else:
            assert self._schedulable_seen is not None
            changed = (arrays.free != self._free_seen).any(axis=1) | (arrays.schedulable != self._schedulable_seen)
            for name in snap.changes.moved_nodes():
                node = snap.node_by_name.get(name)
                if node is not None:
                    changed[node.row] = True
            rows = np.flatnonzero(changed)
            by_row = {node.row: node for node in snap.nodes} if rows.size else {}
            for row in rows:
                self._gpu_free[row] = state.node_free(by_row[int(row)], slots)
        self._free_seen, self._schedulable_seen = arrays.free.copy(), arrays.schedulable.copy()
        if rows.size:
            eligible = self.eligible[rows] if len(self.eligible) == len(snap.nodes) else None
            self._stranded[rows] = measure.expected(
                self.shapes, self._gpu_free[rows], arrays.free[rows, CPU], arrays.free[rows, MEMORY], eligible
            )
        return state.allocated_gpus(snap, self._gpu_free), float(self._stranded.sum())


def _job(index: int, task: trace.Task) -> dict[str, Any]:
    """The trace task as a one-pod job in the one queue, named by its draw (a task may be drawn twice)."""
    job: dict[str, Any] = trace.to_scenario([], [task], 1.0, name="")["jobs"][0]
    name = f"task-{index:06d}"
    job.update(name=name, queue=QUEUE, submitAt=0)
    job.pop("duration", None)
    job["tasks"][0]["name"] = name
    return job
