"""gpufrag: place each task where the cluster's expected GPU fragmentation grows least (FGD, Weng et al.,
"Beware of Fragmentation", USENIX ATC '23). Not a KAI plugin: this scheduler's own, off unless configured.

The measure (`measure`): a node's fragmentation for a task shape is the free GPU capacity on it that the shape
cannot use; its expected fragmentation weighs that by the shapes' popularity in the workload (`shapes`: learned
from the snapshot's pods, or the `shapes` argument). For each candidate node the plugin computes the expected
fragmentation after the task lands there, on the device choice that adds least, minus the node's fragmentation
now:

- NODE_ORDER: `FRAGMENTATION * (Δmax - Δ) / (Δmax - Δmin)` over the candidates (FRAGMENTATION on all when every
  Δ is equal): the node whose fragmentation grows least scores highest. It sits between resourcetype (10) and
  nodeavailability (1000), so binpack (at most 9) only breaks near-ties; configure it instead of gpupack,
  gpuspread, gpusharingorder and nodeplacement's GPU binpack, whose scores would pull the other way.
- GPU_ORDER: for a shared-GPU task on the chosen node, `-Δ` of each candidate device (an existing GPU group or
  a whole free one), so the device that strands least is taken.

Whole-GPU tasks take any whole free devices (they are alike); a shared task asking for several devices is
scored by taking its devices one at a time, each where it adds least. The node state (per-device free fractions
and each node's expected fragmentation) is built once per session and kept per node as tasks are allocated and
deallocated in it, so a task costs a few vector operations over the candidate nodes. Nodes whose inputs to the
measure (per-device free fractions, free CPU and memory, the shapes they are eligible for) are equal bit for bit
share a class. A class's fragmentation per shape after a task lands (for a task on one shared device: after it
takes each device that holds it) is computed once and kept for the session per task signature (its CPU, memory
and GPU ask), so a task computes only the classes no task alike has met; the kept values of its candidates are
then weighed as a fresh computation would (the same arrays in the same layout, so the same sums bit for bit:
BLAS rounds a row by its place in the batch, which rules out keeping the sums themselves). A placement moves its
node to the class of its new inputs. A shared task asking for several devices is scored afresh.

Arguments: `shapes` (see `shapes`; default: learned), `maxShapes` (learned shapes kept, default 64), `weighBy`
(learned shapes weigh their task count, `tasks`, FGD's popularity and the default; or `gpus`, that count times
the GPUs each task asks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Self

import numpy as np
import numpy.typing as npt

from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase
from kai_scheduler.plugins.gpufrag import measure, shapes, state
from kai_scheduler.plugins.gpufrag.measure import EPS, Bools, Floats, Shapes

FRAGMENTATION: Final = 100.0
DEFAULT_MAX_SHAPES: Final = 64
_ARGUMENTS = ("maxShapes", "shapes", "weighBy")
_FEW = 8  # rows `_classify` keys one by one rather than sorting


class GpuFrag(PluginBase):
    name = "gpufrag"
    _snapshot: Snapshot
    _arrays: NodeArrays
    _shapes: Shapes
    _eligible: Bools | None  # (nodes, shapes), None: every node
    _free: Floats  # (nodes, slots): per-device free fractions
    _before: Floats  # (nodes,): expected fragmentation now
    _dirty: set[int]  # rows whose tasks changed since `_free`/`_before` were computed
    _rows: dict[str, int]  # task uid → row, for tasks allocated in this session
    _class: npt.NDArray[np.intp]  # (nodes,): rows of one class have the same measure inputs, bit for bit
    _classes: dict[bytes, int]  # measure inputs → class
    _seen: Floats  # (nodes, 2): the free CPU and memory each row's class was given for
    _after: dict[tuple[object, ...], _Kept]  # task signature → per class: `_after_shapes`
    _after_shared: dict[tuple[object, ...], _KeptShared]  # the same for tasks on one shared device

    def __init__(
        self, given: list[tuple[shapes.ShapeKey, float]] | None, max_shapes: int, weigh_by: str = shapes.TASKS
    ) -> None:
        self.given = given
        self.max_shapes = max_shapes
        self.weigh_by = weigh_by

    @classmethod
    def from_args(cls, arguments: Mapping[str, str]) -> Self:
        for key in sorted(arguments):
            if key not in _ARGUMENTS:
                raise ConfigError(f"plugin gpufrag: unknown argument {key!r}; known: {', '.join(_ARGUMENTS)}")
        given = None
        if "shapes" in arguments:
            try:
                given = shapes.parse(str(arguments["shapes"]))
            except ValueError as err:
                raise ConfigError(f"plugin gpufrag argument shapes: {err}") from None
        raw = arguments.get("maxShapes", str(DEFAULT_MAX_SHAPES))
        try:
            max_shapes = int(raw)
        except ValueError:
            max_shapes = 0
        if max_shapes < 1:
            raise ConfigError(f"plugin gpufrag argument maxShapes: expected a whole number above 0, got {raw!r}")
        weigh_by = str(arguments.get("weighBy", shapes.TASKS))
        if weigh_by not in shapes.WEIGHINGS:
            raise ConfigError(
                f"plugin gpufrag argument weighBy: expected one of {', '.join(shapes.WEIGHINGS)}, got {weigh_by!r}"
            )
        if given is not None and "weighBy" in arguments:
            raise ConfigError(
                "plugin gpufrag argument weighBy: applies to learned shapes; the shapes given have weights"
            )
        return cls(given, max_shapes, weigh_by)

    def on_session_open(self, ssn: Session) -> None:
        snap = self._snapshot = ssn.snapshot
        self._arrays = snap.arrays
        weighted = self.given or shapes.learned(
            snap.tasks.values(), snap.max_gpu_memory, self.max_shapes, self.weigh_by
        )
        self._shapes = shapes.to_shapes(weighted)
        self._eligible = shapes.eligibility([k for k, _ in weighted], snap.nodes)
        self._free = state.matrix(snap)
        self._dirty, self._rows = set(), {}
        self._class = np.zeros(len(snap.nodes), dtype=np.intp)
        self._classes, self._after, self._after_shared = {}, {}, {}
        self._seen = np.zeros((len(snap.nodes), 2))
        self._classify(np.arange(len(snap.nodes), dtype=np.intp))
        self._before = self._expected_all()
        ssn.add(points.NODE_ORDER, self.node_order)
        ssn.add(points.GPU_ORDER, self.gpu_order)
        ssn.add(points.ON_ALLOCATE, self.task_changed)
        ssn.add(points.ON_DEALLOCATE, self.task_changed)

    # --- keeping the node state -------------------------------------------------------------------------

    def task_changed(self, task: PodInfo) -> None:
        """ON_ALLOCATE / ON_DEALLOCATE: the task's node (now, or where it was allocated) is recomputed on use."""
        node = self._snapshot.node_by_name.get(task.placement.node)
        if node is not None:
            self._rows[str(task.uid)] = node.row
            self._dirty.add(node.row)
        elif (row := self._rows.pop(str(task.uid), None)) is not None:
            self._dirty.add(row)
        else:  # deallocated from a node this session never saw it on: recompute all
            self._dirty.update(range(len(self._snapshot.nodes)))

    def _refresh(self) -> None:
        if not self._dirty:
            return
        rows = np.fromiter(sorted(self._dirty), dtype=np.intp, count=len(self._dirty))
        slots = self._free.shape[1]
        for row in rows.tolist():
            self._free[row] = state.node_free(self._snapshot.nodes[row], slots)
        self._before[rows] = self._expected(self._free[rows], rows)
        self._classify(rows)
        self._dirty.clear()

    def _classify(self, rows: npt.NDArray[np.intp]) -> None:
        """Put `rows` in the class of their measure inputs now (a new class for inputs this session has not seen)."""
        if rows.size == 0:
            return
        seen = self._arrays.free[rows][:, (CPU, MEMORY)]
        parts = [self._free[rows], seen]
        if self._eligible is not None:
            parts.append(self._eligible[rows].astype(np.float64))
        inputs = np.ascontiguousarray(np.concatenate(parts, axis=1))
        classes = self._classes
        self._seen[rows] = seen
        if rows.size <= _FEW:  # the nodes a task landed on: their keys one by one
            for row, key in zip(rows.tolist(), inputs, strict=True):
                self._class[row] = classes.setdefault(key.tobytes(), len(classes))
            return
        keys = inputs.view(np.dtype((np.void, inputs.dtype.itemsize * inputs.shape[1]))).reshape(-1)
        unique, inverse = np.unique(keys, return_inverse=True)
        ids = np.fromiter(
            (classes.setdefault(k.tobytes(), len(classes)) for k in unique), dtype=np.intp, count=unique.size
        )
        self._class[rows] = ids[inverse.reshape(-1)]

    def _expected_all(self) -> Floats:
        """`_expected` of every row, `measure.per_shape` once per class: the same sums as over all rows."""
        rows = len(self._snapshot.nodes)
        if len(self._shapes) == 0 or rows == 0:
            return self._expected(self._free, slice(None))
        _, first, inverse = np.unique(self._class, return_index=True, return_inverse=True)
        some = first.astype(np.intp)
        eligible = None if self._eligible is None else self._eligible[some]
        arrays = self._arrays
        per_shape = measure.per_shape(
            self._shapes, self._free[some], arrays.free[some, CPU], arrays.free[some, MEMORY], eligible
        )
        # In the column order `measure.per_shape` returns for all rows (see `growth`).
        out: Floats = np.asfortranarray(per_shape[inverse.reshape(-1)]) @ self._shapes.weight
        return out

    def _restate(self, rows: npt.NDArray[np.intp]) -> None:
        """Recompute the rows whose free CPU or memory moved without a task event reaching this plugin."""
        moved = (self._arrays.free[rows][:, (CPU, MEMORY)] != self._seen[rows]).any(axis=1)
        if moved.any():
            self._dirty.update(rows[moved].tolist())
        self._refresh()

    def _expected(
        self, free: Floats, rows: slice | np.ndarray, cpu: Floats | None = None, memory: Floats | None = None
    ) -> Floats:
        """Expected fragmentation of `rows` with per-device `free` (rows, …, slots) and CPU/memory free."""
        arrays = self._arrays
        cpu_free = arrays.free[rows, CPU] if cpu is None else cpu
        memory_free = arrays.free[rows, MEMORY] if memory is None else memory
        eligible = None if self._eligible is None else self._eligible[rows]
        extra = free.ndim - 1 - np.ndim(cpu_free)  # placement axes between rows and slots
        if extra:
            cpu_free = np.expand_dims(cpu_free, tuple(range(1, 1 + extra)))
            memory_free = np.expand_dims(memory_free, tuple(range(1, 1 + extra)))
            if eligible is not None:
                eligible = np.expand_dims(eligible, tuple(range(1, 1 + extra)))
        return measure.expected(self._shapes, free, cpu_free, memory_free, eligible)

    # --- scoring ----------------------------------------------------------------------------------------

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        """NODE_ORDER: FRAGMENTATION where the expected fragmentation grows least, scaled down to 0 where most."""
        rows = np.flatnonzero(candidates)
        if rows.size == 0:
            return None
        delta = self.growth(task, rows)
        finite = np.isfinite(delta)
        out = np.zeros(len(candidates))
        if not finite.any():
            return out
        low, high = float(delta[finite].min()), float(delta[finite].max())
        scaled = (
            np.full(rows.size, FRAGMENTATION) if high - low <= EPS else FRAGMENTATION * (high - delta) / (high - low)
        )
        out[rows] = np.where(finite, scaled, 0.0)
        return out

    def growth(self, task: PodInfo, rows: np.ndarray) -> Floats:
        """Per row: the least growth of the expected fragmentation if `task` lands there (inf: it cannot).

        Without shared GPUs, `_after_shapes` runs once per class of `rows` that no task of the same signature has
        met this session; the kept values are then weighed exactly as a fresh computation would."""
        self._restate(rows)
        if len(self._shapes) == 0 or (task.gpu.is_shared and task.gpu.num_devices != 1):
            return self.growth_afresh(task, rows)
        classes = self._class[rows]
        if task.gpu.is_shared:
            return self._growth_shared(task, rows, classes)
        kept = self._kept(_signature(task), len(self._classes))
        missing = kept.local[classes] < 0
        if missing.any():
            new, first = np.unique(classes[missing], return_index=True)
            todo = kept.add(new)
            per_shape, kept.possible[todo] = self._after_shapes(task, rows[missing][first])
            kept.shapes[:, todo] = per_shape.T
        classes = kept.local[classes]
        # (rows, M) in the column order `measure.per_shape` returns: BLAS sums a row by the layout and the rows
        # around it, and these are the rows and layout a fresh computation weighs, so the sums are the same.
        after = np.take(kept.shapes, classes, axis=1).T @ self._shapes.weight
        out: Floats = np.where(kept.possible[classes], after - self._before[rows], np.inf)
        return out

    def _growth_shared(self, task: PodInfo, rows: np.ndarray, classes: npt.NDArray[np.intp]) -> Floats:
        """`growth` of a task on one shared device: per class, the fragmentation per shape after it takes each
        device that holds it is kept; the device choice and the sums weigh them as `_best_device` would."""
        per_device, slots = self._per_device(task), self._free.shape[1]
        request = task.request
        signature = (float(request[CPU]), float(request[MEMORY]), "shared", per_device)
        kept = self._kept_shared(signature, slots, len(self._classes))
        missing = kept.local[classes] < 0
        if missing.any():
            new, first = np.unique(classes[missing], return_index=True)
            todo = kept.add(new)
            some = rows[missing][first]
            free = self._free[some]
            fits = _devices_to_try(free, per_device)
            pair_row, pair_slot = np.nonzero(fits)
            trial = free[pair_row].copy()
            trial[np.arange(pair_row.size), pair_slot] -= per_device
            cpu = self._arrays.free[some, CPU] - request[CPU]
            memory = self._arrays.free[some, MEMORY] - request[MEMORY]
            eligible = None if self._eligible is None else self._eligible[some[pair_row]]
            kept.shapes[todo[pair_row] * slots + pair_slot] = measure.per_shape(
                self._shapes, trial, cpu[pair_row], memory[pair_row], eligible
            )
            kept.fits[todo] = fits
        weight = self._shapes.weight
        classes = kept.local[classes]
        fits = kept.fits[classes]
        pair_row, pair_slot = np.nonzero(fits)
        # Column order, as `measure.per_shape` returns them: the same BLAS sums as `_best_device` (see `growth`).
        scores = np.full(fits.shape, np.inf)
        scores[pair_row, pair_slot] = np.asfortranarray(kept.shapes[classes[pair_row] * slots + pair_slot]) @ weight
        best = np.argmin(scores, axis=1)
        ok = fits.any(axis=1)
        chosen = np.zeros((rows.size, len(self._shapes)), order="F")  # rows it cannot land on: any value, inf below
        chosen[ok] = kept.shapes[classes[ok] * slots + best[ok]]
        out: Floats = np.where(ok, chosen @ weight - self._before[rows], np.inf)
        return out

    def _kept_shared(self, signature: tuple[object, ...], slots: int, classes: int) -> _KeptShared:
        """As `_kept`, for a task on one shared device; its index covers `classes`."""
        kept = self._after_shared.get(signature)
        if kept is None:
            kept = self._after_shared[signature] = _KeptShared(
                np.zeros((0, len(self._shapes))), np.zeros((0, slots), dtype=bool), np.full(classes, -1, dtype=np.intp)
            )
        elif kept.local.size < classes:
            kept.local = np.concatenate([kept.local, np.full(classes - kept.local.size, -1, dtype=np.intp)])
        return kept

    def _kept(self, signature: tuple[object, ...], classes: int) -> _Kept:
        """The kept `_after_shapes` for tasks of `signature`; its index covers `classes`."""
        kept = self._after.get(signature)
        if kept is None:
            kept = self._after[signature] = _Kept(
                np.zeros((len(self._shapes), 0)), np.zeros(0, dtype=bool), np.full(classes, -1, dtype=np.intp)
            )
        elif kept.local.size < classes:
            kept.local = np.concatenate([kept.local, np.full(classes - kept.local.size, -1, dtype=np.intp)])
        return kept

    def _after_shapes(self, task: PodInfo, rows: np.ndarray) -> tuple[Floats, Bools]:
        """Per row, for a task without shared GPUs: `F_n(m)` per shape after it lands, and whether it can."""
        cpu = self._arrays.free[rows, CPU] - task.request[CPU]
        memory = self._arrays.free[rows, MEMORY] - task.request[MEMORY]
        free, possible = self._take_whole(task, self._free[rows])
        eligible = None if self._eligible is None else self._eligible[rows]
        return measure.per_shape(self._shapes, free, cpu, memory, eligible), possible

    def _take_whole(self, task: PodInfo, free: Floats) -> tuple[Floats, Bools]:
        """`free` with the whole devices a task without shared GPUs asks taken, and the rows that have them."""
        possible = np.ones(free.shape[0], dtype=bool)
        gpu = task.gpu
        if gpu.whole or task.request[GPU] > 0:
            count = gpu.whole or round(float(task.request[GPU]))
            whole = free >= 1.0 - EPS
            taken = whole & (np.cumsum(whole, axis=1) <= count)
            free = np.where(taken, 0.0, free)
            possible &= whole.sum(axis=1) >= count
        return free, possible

    def growth_afresh(self, task: PodInfo, rows: np.ndarray) -> Floats:
        """`growth` computed from the node state alone, nothing kept."""
        cpu = self._arrays.free[rows, CPU] - task.request[CPU]
        memory = self._arrays.free[rows, MEMORY] - task.request[MEMORY]
        free = self._free[rows]
        possible = np.ones(rows.size, dtype=bool)
        gpu = task.gpu
        if gpu.is_shared:
            per_device = self._per_device(task)
            for _ in range(gpu.num_devices):
                free, ok = self._best_device(free, rows, cpu, memory, per_device)
                possible &= ok
        else:
            free, whole = self._take_whole(task, free)
            possible &= whole
        after = self._expected(free, rows, cpu, memory)
        out: Floats = np.where(possible, after - self._before[rows], np.inf)
        return out

    def _best_device(
        self, free: Floats, rows: np.ndarray, cpu: Floats, memory: Floats, per_device: float
    ) -> tuple[Floats, Bools]:
        """`free` with one device of `per_device` taken on each row where it strands least, and the rows
        where a device holds it at all."""
        n, slots = free.shape
        fits = _devices_to_try(free, per_device)
        pair_row, pair_slot = np.nonzero(fits)
        trial = free[pair_row].copy()  # one candidate placement per pair
        trial[np.arange(pair_row.size), pair_slot] -= per_device
        scores = np.full((n, slots), np.inf)
        scores[pair_row, pair_slot] = self._expected(trial, rows[pair_row], cpu[pair_row], memory[pair_row])
        best = np.argmin(scores, axis=1)  # ties: the first (most free) device
        out = free.copy()
        ok: Bools = np.asarray(fits.any(axis=1))
        out[np.flatnonzero(ok), best[ok]] -= per_device
        return out, ok

    def _per_device(self, task: PodInfo) -> float:
        if task.gpu.fraction:
            return min(1.0, task.gpu.fraction)
        memory = self._snapshot.max_gpu_memory
        return min(1.0, task.gpu.memory_mib / memory) if memory > 0 else 1.0

    def gpu_order(self, task: PodInfo, row: int, groups: list[str]) -> list[float]:
        """GPU_ORDER: minus the growth of the node's expected fragmentation for each candidate device."""
        self._refresh()
        node = self._snapshot.nodes[row]
        free = self._free[row]
        per_device = node.task_gpu_memory(task) / node.gpu_memory_mib
        trials = np.repeat(free[None, :], len(groups), axis=0)
        for i, group_id in enumerate(groups):
            slot = _slot_of(node, free, group_id)
            if slot is not None:
                trials[i, slot] = max(0.0, trials[i, slot] - per_device)
        cpu = np.full(len(groups), self._arrays.free[row, CPU] - task.request[CPU])
        memory = np.full(len(groups), self._arrays.free[row, MEMORY] - task.request[MEMORY])
        rows = np.full(len(groups), row, dtype=np.intp)
        after = self._expected(trials, rows, cpu, memory)
        return [float(v) for v in self._before[row] - after]


@dataclass(slots=True)
class _Kept:
    """For one task signature, per class met (`local`: class → its index here, -1: not met):
    `GpuFrag._after_shapes`, the `F_n(m)` after the task lands (`shapes`) and whether it can (`possible`)."""

    shapes: Floats  # (M, met)
    possible: Bools  # (met,)
    local: npt.NDArray[np.intp]
    count: int = 0

    def add(self, classes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """Indices for `classes` (not met before), with room to fill."""
        start = self.count
        self.count += classes.size
        if self.count > self.possible.size:
            size = 2 * self.count
            shapes, possible = np.zeros((self.shapes.shape[0], size)), np.zeros(size, dtype=bool)
            shapes[:, :start], possible[:start] = self.shapes[:, :start], self.possible[:start]
            self.shapes, self.possible = shapes, possible
        out = np.arange(start, self.count, dtype=np.intp)
        self.local[classes] = out
        return out


@dataclass(slots=True)
class _KeptShared:
    """For one task on one shared device, per class met (`local`: class → its index here, -1: not met): the
    devices `_devices_to_try` gives (`fits`) and per device the `F_n(m)` after it lands there (row: index ×
    slots + slot)."""

    shapes: Floats  # (met × slots, M)
    fits: Bools  # (met, slots)
    local: npt.NDArray[np.intp]
    count: int = 0

    def add(self, classes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """Indices for `classes` (not met before), with room to fill."""
        start, slots = self.count, self.fits.shape[1]
        self.count += classes.size
        if self.count > self.fits.shape[0]:
            size = 2 * self.count
            shapes, fits = np.zeros((size * slots, self.shapes.shape[1])), np.zeros((size, slots), dtype=bool)
            shapes[: start * slots], fits[:start] = self.shapes[: start * slots], self.fits[:start]
            self.shapes, self.fits = shapes, fits
        out = np.arange(start, self.count, dtype=np.intp)
        self.local[classes] = out
        return out


def _devices_to_try(free: Floats, per_device: float) -> Bools:
    """(rows, slots): the devices that hold `per_device`, the first of those with the same free fraction only
    (they are the same choice)."""
    slots = free.shape[1]
    fits = free >= per_device - EPS
    same = np.abs(free[:, :, None] - free[:, None, :]) <= EPS
    fits &= ~(same & np.tri(slots, slots, -1, dtype=bool)).any(axis=2)  # [j, k]: k before j
    out: Bools = fits
    return out


def _signature(task: PodInfo) -> tuple[object, ...]:
    """What `GpuFrag._after_shapes` reads of a task without shared GPUs: its CPU and memory ask, whole devices."""
    gpu, request = task.gpu, task.request
    head = (float(request[CPU]), float(request[MEMORY]))
    if gpu.whole or request[GPU] > 0:
        return (*head, "whole", gpu.whole or round(float(request[GPU])))
    return (*head, "none")


def _slot_of(node: NodeInfo, free: Floats, group_id: str) -> int | None:
    """The slot of `free` that holds the device `group_id` names: its group's free fraction, or a whole one."""
    group = node.gpu_groups.get(group_id)
    if group is None:
        want = 1.0
    else:
        held = group.used_memory() - group.releasing_memory()
        want = min(1.0, max(0.0, 1.0 - held / node.gpu_memory_mib))
    hits = np.flatnonzero(np.abs(free - want) <= EPS)
    return int(hits[0]) if hits.size else None
