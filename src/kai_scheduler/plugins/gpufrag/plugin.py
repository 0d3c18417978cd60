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
scored by taking its devices one at a time, each where it adds least.

Cost. Every value of the measure depends on its node's inputs alone, bit for bit (`measure.weigh` sums the
shapes in a fixed order), so values are computed once per class of nodes and kept. Nodes whose measure inputs
(per-device free fractions, free CPU and memory, the shapes they are eligible for) are equal bit for bit share a
class; a placement moves its node to the class of its new inputs (task events, and the snapshot's version for
moves no event reported). Per session, a class's expected fragmentation and, per task signature (its CPU,
memory and GPU ask), its growth are one number each, computed the first time a task meets the class. Across
sessions the snapshot's plugin memo (`carried`) keeps the learned shapes (only the task records the carried model
logged as changed, `Snapshot.task_log`, are looked at), each node row's free fractions and class under the
row's stamp (`NodeArrays.stamps`: only rows whose stamp moved are derived again) and, while the set of shapes is
the same, each class's per-shape fragmentation and, per signature, the per-shape fragmentation after such a task
lands: a session weighs them with its own weights. The learned shapes' ranking is kept too and moved for the
shapes whose counts changed; a new ranking of the same shapes keeps the table, whose columns are the shapes in
`shapes.order`, and a session weighs the columns taken in its rank order (`_weigh`: the same sums, bit for bit).
Decisions are the same as computing everything afresh, whatever was kept (tests/property/test_gpufrag.py checks
it).

Arguments: `shapes` (see `shapes`; default: learned), `maxShapes` (learned shapes kept, default 64), `weighBy`
(learned shapes weigh their task count, `tasks`, FGD's popularity and the default; or `gpus`, that count times
the GPUs each task asks).
"""

from __future__ import annotations

from collections.abc import Mapping
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
from kai_scheduler.plugins.gpufrag import carried, measure, shapes, state
from kai_scheduler.plugins.gpufrag.measure import EPS, Bools, Floats, Shapes

FRAGMENTATION: Final = 100.0
DEFAULT_MAX_SHAPES: Final = 64
_ARGUMENTS = ("maxShapes", "shapes", "weighBy")
_WATCHED = np.array([CPU, MEMORY, GPU])  # free resources whose move without a task event `_sync` looks for
_CPU_MEMORY = np.array([CPU, MEMORY])


class GpuFrag(PluginBase):
    name = "gpufrag"
    _snapshot: Snapshot
    _arrays: NodeArrays
    _shapes: Shapes  # the table's columns: the distinct shapes in `shapes.order`
    _perm: npt.NDArray[np.intp] | None  # per shape by weight, its column (None: the same order)
    _weight: Floats  # per shape by weight, its normalised weight
    _eligible: Bools | None  # (nodes, columns), None: every node
    _eligible_bits: npt.NDArray[np.uint8] | None  # the same packed in bits, part of a row's class key
    _free: Floats  # (nodes, slots): per-device free fractions
    _dirty: set[int]  # rows whose tasks changed since `_free` and `_class` were computed
    _rows: dict[str, int]  # task uid → row, for tasks allocated in this session
    _version: int  # the snapshot's version the node state follows (task events included)
    _class: npt.NDArray[np.intp]  # (nodes,): rows of one class have the same measure inputs, bit for bit
    _table: carried.Table  # classes and per-shape values, kept across sessions
    _before: Floats  # per class: its expected fragmentation with this session's weights (NaN: not computed)
    _seen: Floats  # (nodes, 4): `_watch` of each row when it was classified
    _scores: dict[tuple[object, ...], Floats]  # task signature → per class: `growth` (NaN: not met yet)

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
        across = carried.of(snap.plugin_memo, f"{self.name}/{self.max_shapes}/{self.weigh_by}/{self.given is None}")
        if self.given is not None:
            weighted = self.given
        else:
            across.learned.counts_of(snap.tasks, snap.max_gpu_memory, snap.task_log, snap.task_mark)
            weighted = across.learned.heaviest(self.max_shapes, self.weigh_by)
        columns, self._perm = across.columns_for(tuple(k for k, _ in weighted))
        self._weight = measure.normalized([w for _, w in weighted])
        self._eligible = shapes.eligibility(columns, snap.nodes)
        self._eligible_bits = None if self._eligible is None else np.packbits(self._eligible, axis=1)
        self._table = self._open_rows(across, columns)
        self._dirty, self._rows, self._version = set(), {}, snap.version
        self._scores = {}
        ssn.add(points.NODE_ORDER, self.node_order)
        ssn.add(points.GPU_ORDER, self.gpu_order)
        ssn.add(points.ON_ALLOCATE, self.task_changed)
        ssn.add(points.ON_DEALLOCATE, self.task_changed)

    # --- keeping the node state -------------------------------------------------------------------------

    def _open_rows(self, across: carried.Carried, keys: tuple[shapes.ShapeKey, ...]) -> carried.Table:
        """`_free` and `_class` of every row: the kept ones where the row's stamp is the one they were derived
        at, derived again elsewhere (and kept for the next session); the session works on copies."""
        snap, arrays = self._snapshot, self._arrays
        count, slots = len(snap.nodes), state.width(snap)
        rows = across.rows_for(count, slots)
        table = across.table_for(keys, slots)
        self._shapes = table.shapes
        moved = np.flatnonzero(rows.stamps != arrays.stamps)
        if 2 * moved.size > count:
            rows.free[:] = state.matrix(snap, slots)
        else:
            for row in moved.tolist():
                rows.free[row] = state.node_free(snap.nodes[row], slots)
        if rows.table is not table:
            rows.table, moved = table, np.arange(count, dtype=np.intp)
        rows.stamps[:] = arrays.stamps
        self._free, self._class = rows.free.copy(), rows.classes.copy()
        self._table = table
        self._before = _grown(None, len(table.ids))
        self._seen = np.zeros((count, len(_WATCHED) + 1))
        self._classify(moved)
        rows.classes[moved] = self._class[moved]
        self._seen = self._watch(slice(None))
        if count:  # the classes of the rows (a mask over the classes: cheaper than sorting the rows' classes)
            present = np.zeros(self._before.size, dtype=bool)
            present[self._class] = True
            todo = np.flatnonzero(present & np.isnan(self._before))
            if todo.size:
                self._before[todo] = self._weigh(table.per_shape[todo])
        return table

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
        if self._snapshot.version == self._version + 1:  # the move this event reports, and no other
            self._version += 1

    def _sync(self) -> None:
        """Bring the node state up to date: the rows task events named, and, when the snapshot moved tasks
        that no event reported (its version ran ahead of the events), every row whose free resources moved."""
        if self._snapshot.version != self._version:
            moved = (self._watch(slice(None)) != self._seen).any(axis=1)
            self._dirty.update(np.flatnonzero(moved).tolist())
            self._version = self._snapshot.version
        if not self._dirty:
            return
        if len(self._dirty) == 1:  # a task landed: its node alone
            self._refresh_row(self._dirty.pop())
            return
        rows = np.fromiter(sorted(self._dirty), dtype=np.intp, count=len(self._dirty))
        slots = self._free.shape[1]
        for row in rows.tolist():
            self._free[row] = state.node_free(self._snapshot.nodes[row], slots)
        self._classify(rows)
        self._dirty.clear()

    def _refresh_row(self, row: int) -> None:
        """`_sync` of one row: `_classify` without the vector steps (the same key, bytes for bytes)."""
        arrays, table = self._arrays, self._table
        free = self._free[row] = state.node_free(self._snapshot.nodes[row], self._free.shape[1])
        key = free.tobytes() + arrays.free[row, _CPU_MEMORY].tobytes()
        if self._eligible_bits is not None:
            key += self._eligible_bits[row].tobytes()
        self._seen[row, :-1] = arrays.free[row, _WATCHED]
        self._seen[row, -1] = arrays.shared_free[row]
        found = table.ids.get(key)
        if found is None:
            found = table.ids[key] = len(table.ids)
            table.grow(len(table.ids))
            table.per_shape[found] = self._per_shape(free[None, :], np.array([row], dtype=np.intp))[0]
            table.rows += 1
        self._class[row] = found
        if self._before.size <= found:
            self._before = _grown(self._before, found + 1)
        if np.isnan(self._before[found]):
            self._before[found] = self._weigh(table.per_shape[found])

    def _watch(self, rows: slice | npt.NDArray[np.intp]) -> Floats:
        """What a move changes on a row: its free CPU, memory and GPU and the room in its shared GPUs."""
        arrays = self._arrays
        out: Floats = np.concatenate([arrays.free[rows][:, _WATCHED], arrays.shared_free[rows, None]], axis=1)
        return out

    def _classify(self, rows: npt.NDArray[np.intp]) -> None:
        """Put `rows` in the class of their measure inputs now. A class new to the table gets its `F_n(m)` per
        shape, one new to the session its expected fragmentation (each computed on one of its rows: the values
        of a row depend on its inputs alone)."""
        if rows.size == 0:
            return
        arrays = self._arrays
        # A row's key: the bytes of its free fractions, its free CPU and memory, and its eligibility bits.
        parts = [
            self._free[rows].view(np.uint8),
            np.ascontiguousarray(arrays.free[rows][:, _CPU_MEMORY]).view(np.uint8),
        ]
        if self._eligible_bits is not None:
            parts.append(self._eligible_bits[rows])
        inputs = np.concatenate(parts, axis=1).tobytes()
        width = len(inputs) // rows.size
        self._seen[rows] = self._watch(rows)
        table = self._table
        known, ids_of = len(table.ids), table.ids
        ids = np.fromiter(
            (ids_of.setdefault(inputs[at : at + width], len(ids_of)) for at in range(0, len(inputs), width)),
            dtype=np.intp,
            count=rows.size,
        )
        self._class[rows] = ids
        if len(ids_of) > known:
            new = ids >= known
            classes, first = np.unique(ids[new], return_index=True)
            some = rows[new][first]
            table.grow(len(ids_of))
            table.per_shape[classes] = self._per_shape(self._free[some], some)
            table.rows += classes.size
        if self._before.size < len(ids_of):
            self._before = _grown(self._before, len(ids_of))
        todo = np.isnan(self._before[ids])
        if todo.any():
            classes = np.unique(ids[todo])
            self._before[classes] = self._weigh(table.per_shape[classes])

    def before(self, rows: npt.NDArray[np.intp] | int) -> Floats:
        """The expected fragmentation of `rows` now (their classes')."""
        out: Floats = self._before[self._class[rows]]
        return out

    def _per_shape(
        self, free: Floats, rows: np.ndarray, cpu: Floats | None = None, memory: Floats | None = None
    ) -> Floats:
        """`F_n(m)` of `rows` (rows, M) with per-device `free` (rows, slots) and CPU/memory free."""
        arrays = self._arrays
        cpu_free = arrays.free[rows, CPU] if cpu is None else cpu
        memory_free = arrays.free[rows, MEMORY] if memory is None else memory
        eligible = None if self._eligible is None else self._eligible[rows]
        return measure.per_shape(self._shapes, free, cpu_free, memory_free, eligible)

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
        if len(self._shapes) == 0:
            return np.zeros(np.shape(cpu_free))
        return self._weigh(measure.per_shape(self._shapes, free, cpu_free, memory_free, eligible))

    def _weigh(self, values: Floats) -> Floats:
        """`measure.weigh` of per-column values (…, columns) with this session's weights, in their order."""
        return measure.weigh(values if self._perm is None else values[..., self._perm], self._weight)

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

        Kept per class for the session per task signature, so only the classes no task alike has met are
        computed, on one row each (`_growth_of`)."""
        self._sync()
        classes = self._class[rows]
        if len(self._shapes) == 0:
            return self.growth_afresh(task, rows)
        signature = _signature(task, self._per_device(task))
        by_class = self._scores.get(signature)
        if by_class is None or by_class.size < self._before.size:
            by_class = self._scores[signature] = _grown(by_class, self._before.size)
        out: Floats = by_class[classes]
        missing = np.isnan(out)
        if missing.any():
            met = np.zeros(by_class.size, dtype=bool)
            met[classes[missing]] = True
            new = np.flatnonzero(met)
            some = np.empty(by_class.size, dtype=np.intp)
            some[classes[missing]] = rows[missing]  # a row of each class (any: they have the same inputs)
            by_class[new] = self._growth_of(task, signature, new, some[new])
            out = by_class[classes]
        return out

    def _growth_of(
        self, task: PodInfo, signature: tuple[object, ...], classes: npt.NDArray[np.intp], rows: np.ndarray
    ) -> Floats:
        """`growth_afresh` of `rows` (one of each of `classes`), from the table's per-shape values after a task of
        `signature` lands (computed for the classes the table has not met with it): weighed, and for a task on
        one shared device the device where the sum is least taken (the first of equals, as `_best_device`)."""
        gpu = task.gpu
        if gpu.is_shared and gpu.num_devices != 1:
            return self.growth_afresh(task, rows)
        after = self._table.after_of(signature, self._free.shape[1] if gpu.is_shared else 1)
        index = after.index(classes)
        todo = index < 0
        if todo.any():
            fill = after.add(classes[todo])
            after.values[fill], after.ok[fill] = self._after_values(task, rows[todo])
            self._table.rows += fill.size * after.ok.shape[1]
            index = after.local[classes]
        ok = after.ok[index]
        if ok.shape[1] == 1:
            least = np.where(ok[:, 0], self._weigh(after.values[index, 0]), np.inf)
        else:  # weigh the devices that hold the task only
            pair_row, pair_way = np.nonzero(ok)
            weighed = np.full(ok.shape, np.inf)
            weighed[pair_row, pair_way] = self._weigh(after.values[index[pair_row], pair_way])
            least = weighed.min(axis=1)
        out: Floats = least - self._before[classes]
        return out

    def _after_values(self, task: PodInfo, rows: np.ndarray) -> tuple[Floats, Bools]:
        """Per row, `F_n(m)` per shape after `task` lands, for each way it can: (rows, ways, M), and which ways it
        can (rows, ways). A task on one shared device: a way per device (`_devices_to_try`); else one way."""
        cpu = self._arrays.free[rows, CPU] - task.request[CPU]
        memory = self._arrays.free[rows, MEMORY] - task.request[MEMORY]
        free = self._free[rows]
        if not task.gpu.is_shared:
            taken, possible = self._take_whole(task, free)
            return self._per_shape(taken, rows, cpu, memory)[:, None, :], possible[:, None]
        per_device = self._per_device(task)
        fits = _devices_to_try(free, per_device)
        pair_row, pair_slot = np.nonzero(fits)
        trial = free[pair_row].copy()
        trial[np.arange(pair_row.size), pair_slot] -= per_device
        values = np.zeros((rows.size, free.shape[1], len(self._shapes)))
        values[pair_row, pair_slot] = self._per_shape(trial, rows[pair_row], cpu[pair_row], memory[pair_row])
        return values, fits

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
        out: Floats = np.where(possible, after - self.before(rows), np.inf)
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
        self._sync()
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
        return [float(v) for v in self.before(row) - after]


def _grown(values: Floats | None, count: int) -> Floats:
    """`values` with room for at least `count` (twice that, so growing one at a time stays cheap), NaN beyond."""
    out = np.full(max(2 * count, 16), np.nan)
    if values is not None:
        out[: values.size] = values
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


def _signature(task: PodInfo, per_device: float) -> tuple[object, ...]:
    """What `GpuFrag.growth_afresh` reads of a task: its CPU and memory ask, and its whole devices, or its
    shared devices and the GPU of each (`per_device`)."""
    gpu, request = task.gpu, task.request
    head = (float(request[CPU]), float(request[MEMORY]))
    if gpu.is_shared:
        return (*head, "shared", gpu.num_devices, per_device)
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
