"""NodeInfo and NodeArrays: each node's resource ledgers, kept as rows of shared arrays (KAI `api/node_info`).

A snapshot owns one `NodeArrays` (allocatable, idle, used, releasing as float64[n_nodes, n_resources]) so that
filtering and scoring a task over every node is a few vector operations. A `NodeInfo` keeps the rest (labels,
taints, its tasks, GPU groups) and its `row`. Only `add_task` / `remove_task` write, and they write both.

Ledger rules when a task is added (§3.2): Releasing → used += r, releasing += r, idle −= r; Pipelined →
used += r, releasing −= r; otherwise used += r, idle −= r. Removal is the exact inverse.
MIG instances (mixed strategy) are columns like any other resource; each node also says which instance of a
profile each MIG task holds (`mig_held`), taken and given back with the ledger.
Shared GPUs (§6): a task's GPU entry is 0; each GPU group it joins holds one whole device, counted as used, as
releasing when every sharer is releasing, or against releasing when the group was opened by a pipelined task.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np
import numpy.typing as npt

from kai_scheduler.api import constants, mig
from kai_scheduler.api.node import Node
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import BITS, PodStatus
from kai_scheduler.cluster.resources import GPU, PODS, Vector

# Only Releasing frees capacity (§3.2): a pod stuck in releasing holds its resources as used, since it may
# never go away, so nothing is pipelined onto it.
_RELEASING, _PIPELINED = PodStatus.RELEASING.value, PodStatus.PIPELINED.value


# One row of a node's moving ledgers (see `NodeArrays.ledgers`): used, idle, releasing, then the derived free
# and free_now, each a (n_resources,) view, and the three ledgers one after the other as one flat view.
RowViews = tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
]
_USED, _IDLE, _RELEASING_LEDGER, _FREE, _FREE_NOW = range(5)


@dataclass(slots=True, eq=False)
class NodeArrays:
    allocatable: npt.NDArray[np.float64]
    # used, idle, releasing, free, free_now as float64[5, n_resources, n_nodes]: each one a column-major
    # [n_nodes, n_resources] ledger (the fields below are its views), and one node's used, idle and releasing
    # side by side, so that a task's charge to its row is one addition (`NodeInfo.move_task`).
    ledgers: npt.NDArray[np.float64]
    schedulable: npt.NDArray[np.bool_]  # Ready and not cordoned
    name_rank: npt.NDArray[np.int64]  # position in name order: the final tie-break
    gpu_memory: npt.NDArray[np.float64]  # MiB per GPU (0 when the node has no memory label)
    shared_free: npt.NDArray[np.float64]  # MiB, see NodeInfo
    # Per row, a number no other content of a row had: a row changed by a task (`refresh(row)`, `charge_nodes`,
    # `stamp`) gets a new one, and a copy keeps them. Equal stamps mean equal rows, tasks and GPU groups
    # included, in any copy of any build, so what a plugin derives from a row may be kept under its stamp.
    stamps: npt.NDArray[np.int64]
    used: npt.NDArray[np.float64] = field(init=False)
    idle: npt.NDArray[np.float64] = field(init=False)
    releasing: npt.NDArray[np.float64] = field(init=False)
    # Derived, kept in step by `refresh` on every ledger change, so that per-task filters read them directly:
    free: npt.NDArray[np.float64] = field(init=False)  # idle + releasing
    # Idle that is really free now, never below zero: pipelined tasks may have drawn releasing below zero, and
    # what they took beyond the releasing amount comes out of idle.
    free_now: npt.NDArray[np.float64] = field(init=False)
    _rows: list[RowViews | None] = field(init=False)  # per row, its views once a task moved on it
    _deltas: dict[bytes, tuple[npt.NDArray[np.float64], ...]] = field(init=False)  # see `charges`

    def __post_init__(self) -> None:
        self.used, self.idle, self.releasing, self.free, self.free_now = (m.T for m in self.ledgers)
        self._rows = [None] * self.ledgers.shape[2]
        self._deltas = {}

    @classmethod
    def empty(cls, n_nodes: int, n_resources: int) -> NodeArrays:
        """Ledgers in column-major order: the per-task test "fits in every resource" reduces across the few
        resource columns, which is 4-25x faster over contiguous columns than over rows."""
        return cls(
            np.zeros((n_nodes, n_resources), order="F"),
            np.zeros((5, n_resources, n_nodes)),
            np.ones(n_nodes, dtype=bool),
            np.arange(n_nodes, dtype=np.int64),
            np.zeros(n_nodes),
            np.full(n_nodes, -1.0),
            _new_stamps(n_nodes),
        )

    def copy(self) -> NodeArrays:
        """Independent arrays, each in the layout it has (the ledgers' views stay column-major)."""
        return NodeArrays(*(np.copy(getattr(self, f.name)) for f in fields(self) if f.init))

    def row_views(self, row: int) -> RowViews:
        """The row's ledger views (kept: a victim search moves tasks on the same rows tens of thousands of
        times): used, idle, releasing, free, free_now, and used, idle and releasing as one flat array. That one
        is 1-D (the row's cells of the C-order block are evenly spaced): numpy adds a strided 2-D view about
        three times slower than a 1-D one, which costs what one ledger's addition costs."""
        views = self._rows[row]
        if views is None:
            m = self.ledgers[:, :, row]
            n_resources, n_nodes = self.ledgers.shape[1:]
            three = self.ledgers.reshape(5 * n_resources, n_nodes)[: 3 * n_resources, row]
            views = self._rows[row] = (m[_USED], m[_IDLE], m[_RELEASING_LEDGER], m[_FREE], m[_FREE_NOW], three)
        return views

    def charges(self, request: Vector) -> tuple[npt.NDArray[np.float64], ...]:
        """What charging `request` adds to a row's (used, idle, releasing), per `_charge_case`: +r, -r, or -0.0
        for a ledger the rule leaves alone (x + -0.0 is x to the bit, and x - r is x + (-r)), so one addition
        to the row's three ledgers is the charge. Kept per request value: a cluster's pods have few shapes."""
        key = request.tobytes()
        deltas = self._deltas.get(key)
        if deltas is None:
            deltas = self._deltas[key] = _charge_deltas(request)
        return deltas

    def refresh(self, row: int | None = None) -> None:
        """Recompute the derived arrays for one row (after a ledger change) or for all rows."""
        where = slice(None) if row is None else row
        _derive(self.idle[where], self.releasing[where], self.free[where], self.free_now[where])
        if row is not None:
            self.stamps[row] = next(_STAMPS)

    def stamp(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> None:
        """New stamps for `rows` (their ledgers, tasks or GPU groups changed)."""
        self.stamps[rows] = _new_stamps(len(rows))

    def non_allocated(self) -> npt.NDArray[np.float64]:
        """Idle + releasing: what a task may take now or once releasing pods are gone (read-only view)."""
        return self.free


def _derive(
    idle: npt.NDArray[np.float64],
    releasing: npt.NDArray[np.float64],
    free: npt.NDArray[np.float64],
    free_now: npt.NDArray[np.float64],
) -> None:
    """free = idle + releasing; free_now = max(idle + min(releasing, 0), 0), taken as max(min(free, idle), 0):
    the same bits (rounding is monotonic, so min(idle + releasing, idle) is idle + releasing when releasing < 0
    and idle when it is not; a zero of either sign comes out of the last max as +0.0 in both), one call less.
    Written through views (no temporaries, no copy back): a victim search refreshes a row per move."""
    np.add(idle, releasing, out=free)
    np.minimum(free, idle, out=free_now)
    np.maximum(free_now, 0.0, out=free_now)


class GroupState(enum.Enum):
    """What a shared GPU's one whole device counts as on its node's ledger (§6)."""

    EMPTY = "empty"  # no sharers: not on the ledger
    USED = "used"
    PIPELINED = "pipelined"  # opened by a pipelined task: counted against releasing
    RELEASING = "releasing"  # every sharer is releasing: counted as releasing


# The pod status a group's device is charged as, by the group's state.
_GROUP_LEDGER = {
    GroupState.USED: PodStatus.RUNNING,
    GroupState.PIPELINED: PodStatus.PIPELINED,
    GroupState.RELEASING: PodStatus.RELEASING,
}


@dataclass(slots=True, eq=False)
class GpuGroup:
    """One shared physical GPU on a node: its sharers and their memory in MiB."""

    id: str
    sharers: dict[str, float] = field(default_factory=dict)  # task uid → MiB
    releasing: set[str] = field(default_factory=set)  # uids of releasing sharers
    opened_pipelined: bool = False

    def used_memory(self) -> float:
        return sum(self.sharers.values())

    def releasing_memory(self) -> float:
        return sum(self.sharers[u] for u in self.releasing)

    def state(self) -> GroupState:
        if not self.sharers:
            return GroupState.EMPTY
        if len(self.releasing) == len(self.sharers):
            return GroupState.RELEASING
        return GroupState.PIPELINED if self.opened_pipelined else GroupState.USED


MigInstance = tuple[str, int]  # (profile, index on its node)


@dataclass(slots=True, eq=False)
class MigSlots:
    """One node's MIG instances of one profile: per instance index, the tasks on it.

    An instance holds at most one task that is not releasing; a pipelined task waits on an instance whose
    holder is releasing (the ledger charges it against releasing), so such an instance may list both."""

    holders: list[dict[str, PodStatus]]  # per index: task uid → the status it was charged in

    def pick(self, count: int, status: PodStatus, preferred: tuple[int, ...]) -> list[int]:
        """`count` instance indexes for a task charged as `status`: its earlier indexes first (an evicted or
        rolled-back task keeps its instance), then free ones; a pipelined task takes releasing ones first."""
        free = [i for i, h in enumerate(self.holders) if not h]
        waiting = [
            i
            for i, h in enumerate(self.holders)
            if h
            and all(BITS[s] & _RELEASING for s in h.values())
            and not any(s == PodStatus.PIPELINED for s in h.values())
        ]
        order = [*waiting, *free] if status == PodStatus.PIPELINED else free
        usable = set(order)
        chosen = [i for i in preferred if i in usable][:count]
        chosen += [i for i in order if i not in chosen][: count - len(chosen)]
        if len(chosen) < count:  # over-committed (a cluster that already holds more than it has): least held
            rest = sorted(range(len(self.holders)), key=lambda i: (len(self.holders[i]), i))
            chosen += [i for i in rest if i not in chosen][: count - len(chosen)]
        return chosen


@dataclass(slots=True, kw_only=True, eq=False)
class NodeInfo:
    name: str
    node: Node
    row: int
    arrays: NodeArrays
    tasks: dict[str, PodInfo] = field(default_factory=dict)
    gpu_groups: dict[str, GpuGroup] = field(default_factory=dict)
    mig_slots: dict[str, MigSlots] = field(default_factory=dict)  # profile → its instances (made on first use)
    mig_held: dict[str, tuple[MigInstance, ...]] = field(default_factory=dict)  # task uid → its instances
    _mig_last: dict[str, tuple[MigInstance, ...]] = field(default_factory=dict)  # what a task held last here

    @property
    def labels(self) -> dict[str, str]:
        return self.node.meta.labels

    @property
    def gpu_memory_mib(self) -> float:
        """MiB per GPU: the memory label, else KAI's default of 100 (§2) so fractions still size a share."""
        return float(self.arrays.gpu_memory[self.row]) or float(constants.DEFAULT_NODE_GPU_MEMORY_MIB)

    def idle(self) -> Vector:
        row: Vector = self.arrays.idle[self.row]
        return row

    def releasing(self) -> Vector:
        row: Vector = self.arrays.releasing[self.row]
        return row

    def allocatable(self) -> Vector:
        row: Vector = self.arrays.allocatable[self.row]
        return row

    def task_gpu_memory(self, task: PodInfo) -> float:
        """MiB one device of `task` takes here: its gpu-memory, or fraction × this node's GPU memory."""
        if task.gpu.memory_mib:
            return float(task.gpu.memory_mib)
        return task.gpu.fraction * self.gpu_memory_mib

    def add_task(self, task: PodInfo, placement: Placement) -> None:
        """Charge `task` here in `placement`'s state; the caller sets task.placement."""
        self._ledger(task.request, _charge(placement), +1.0)
        self.tasks[str(task.uid)] = task
        self._join_groups(task, placement)
        if task.gpu.mig:
            self._take_mig(task, placement)

    def _take_mig(self, task: PodInfo, placement: Placement) -> None:
        uid, status = str(task.uid), _charge(placement)
        earlier = self._mig_last.get(uid) or placement.mig
        held: list[MigInstance] = []
        for profile, count in task.gpu.mig:
            slots = self._mig_profile(profile)
            preferred = tuple(i for p, i in earlier if p == profile)
            for index in slots.pick(count, status, preferred):
                slots.holders[index][uid] = status
                held.append((profile, index))
        self.mig_held[uid] = self._mig_last[uid] = task.mig_held = tuple(held)

    def _mig_profile(self, profile: str) -> MigSlots:
        slots = self.mig_slots.get(profile)
        if slots is None:
            count = int(self.node.allocatable.get(mig.RESOURCE_PREFIX + profile, 0.0) + 0.5)
            slots = self.mig_slots[profile] = MigSlots([{} for _ in range(count)])
        return slots

    def clear_tasks(self) -> None:
        """Forget every task (the ledger rows are reset by the caller); MIG tasks charged again get the
        instances they held, so an instance stays with its pod from one cycle to the next."""
        self._mig_last = {uid: held for uid, held in self.mig_held.items()}
        self.tasks.clear()
        self.gpu_groups.clear()
        self.mig_slots.clear()
        self.mig_held.clear()

    def _release_mig(self, task: PodInfo) -> None:
        uid = str(task.uid)
        task.mig_held = ()
        for profile, index in self.mig_held.pop(uid, ()):
            self.mig_slots[profile].holders[index].pop(uid, None)

    def _join_groups(self, task: PodInfo, placement: Placement) -> None:
        for group_id in placement.gpu_groups:
            group = self.gpu_groups.get(group_id)
            if group is None:
                group = self.gpu_groups[group_id] = GpuGroup(group_id)
                group.opened_pipelined = placement.status == PodStatus.PIPELINED
            self._group_change(group, task, placement.status, adding=True)
        if placement.gpu_groups:
            self._refresh_shared_free()

    def remove_task(self, task: PodInfo, placement: Placement) -> None:
        """Undo `add_task(task, placement)` exactly."""
        self._ledger(task.request, _charge(placement), -1.0)
        self.tasks.pop(str(task.uid), None)
        if task.gpu.mig:
            self._release_mig(task)
        for group_id in placement.gpu_groups:
            group = self.gpu_groups[group_id]
            self._group_change(group, task, placement.status, adding=False)
            if not group.sharers:
                del self.gpu_groups[group_id]
        if placement.gpu_groups:
            self._refresh_shared_free()

    def _refresh_shared_free(self) -> None:
        """Keep `arrays.shared_free` current: the most MiB one device of a new sharer could get in a usable GPU
        group here (counting releasing sharers' memory, as the fit rule of §6 does); -1 without such a group."""
        total, best = self.gpu_memory_mib, -1.0
        for g in self.gpu_groups.values():
            if g.state() is not GroupState.RELEASING:
                best = max(best, total - g.used_memory() + g.releasing_memory())
        self.arrays.shared_free[self.row] = best

    def move_task(self, task: PodInfo, before: Placement, after: Placement) -> bool:
        """`remove_task(task, before)` then `add_task(task, after)` here, the same sums in the same order with
        one refresh of the derived row, for a task whose move involves no GPU group or MIG instance (an
        eviction, its undoing, a victim put back: most moves of a victim search); False, nothing done, else."""
        if before.gpu_groups or after.gpu_groups or task.gpu.mig:
            return False
        a, row, uid = self.arrays, self.row, str(task.uid)
        _, idle, releasing, free, free_now, ledgers = a.row_views(row)
        deltas = a.charges(task.request)
        np.add(ledgers, deltas[_charge_case(_charge(before), refund=True)], out=ledgers)
        self.tasks.pop(uid, None)
        np.add(ledgers, deltas[_charge_case(_charge(after), refund=False)], out=ledgers)
        self.tasks[uid] = task
        _derive(idle, releasing, free, free_now)
        a.stamps[row] = next(_STAMPS)
        return True

    def _ledger(self, request: Vector, status: PodStatus, sign: float) -> None:
        a, row = self.arrays, self.row
        _, idle, releasing, free, free_now, ledgers = a.row_views(row)
        np.add(ledgers, a.charges(request)[_charge_case(status, refund=sign < 0)], out=ledgers)
        _derive(idle, releasing, free, free_now)
        a.stamps[row] = next(_STAMPS)

    def _group_change(self, group: GpuGroup, task: PodInfo, status: PodStatus, *, adding: bool) -> None:
        before = group.state()
        uid = str(task.uid)
        if adding:
            group.sharers[uid] = self.task_gpu_memory(task)
            if status == PodStatus.RELEASING:
                group.releasing.add(uid)
        else:
            group.sharers.pop(uid, None)
            group.releasing.discard(uid)
        after = group.state()
        if before != after:
            self._group_ledger(before, -1.0)
            self._group_ledger(after, +1.0)

    def _group_ledger(self, state: GroupState, sign: float) -> None:
        if state is GroupState.EMPTY:
            return
        gpu = np.zeros_like(self.arrays.idle[self.row])
        gpu[GPU] = 1.0
        self._ledger(gpu, _GROUP_LEDGER[state], sign)

    def used_portions(self, group_ids: list[str]) -> list[float]:
        """Per GPU group id: its sharers' memory over this node's GPU memory (at most 1); 0 for an id the node
        does not have (a fresh device). What gpupack and gpuspread score."""
        total = self.gpu_memory_mib
        out = []
        for group_id in group_ids:
            group = self.gpu_groups.get(group_id)
            out.append(0.0 if group is None or total <= 0 else min(1.0, group.used_memory() / total))
        return out

    def shared_gpu_fit(self, task: PodInfo) -> list[GpuGroup]:
        """Groups in use where one device of `task` fits (§6), by group id."""
        need = self.task_gpu_memory(task)
        total = self.gpu_memory_mib
        return [
            g
            for _, g in sorted(self.gpu_groups.items())
            if g.state() is not GroupState.RELEASING and total - g.used_memory() + g.releasing_memory() - need >= 0
        ]

    def pod_count(self) -> int:
        return int(self.arrays.used[self.row][PODS])


_STAMPS = itertools.count(1)


def _new_stamps(count: int) -> npt.NDArray[np.int64]:
    return np.fromiter(itertools.islice(_STAMPS, count), dtype=np.int64, count=count)


def charge_nodes(arrays: NodeArrays, charged: list[tuple[NodeInfo, PodInfo, Placement]]) -> None:
    """`node.add_task(task, placement)` for each, in order, with the ledgers written a column at a time.

    The same float additions happen in the same order per cell as task by task (np.add.at is unbuffered and
    goes in index order), so the ledgers are bit for bit those of `add_task`; GPU groups only ever add whole
    devices to the GPU column, so they are applied after the requests."""
    if not charged:
        return
    rows = np.fromiter((node.row for node, _, _ in charged), dtype=np.int64, count=len(charged))
    requests = np.array([task.request for _, task, _ in charged])  # rows at once: np.stack is 5x slower
    charges = [BITS[_charge(placement)] for _, _, placement in charged]
    releasing = np.fromiter((c & _RELEASING != 0 for c in charges), dtype=bool, count=len(charged))
    pipelined = np.fromiter((c == _PIPELINED for c in charges), dtype=bool, count=len(charged))
    np.add.at(arrays.used, rows, requests)
    np.subtract.at(arrays.idle, rows[~pipelined], requests[~pipelined])
    moves = releasing | pipelined  # x - d is x + (-d) exactly, so one pass keeps the order of both
    signed = np.where(pipelined[:, None], -requests, requests)
    np.add.at(arrays.releasing, rows[moves], signed[moves])
    mig_tasks = []
    for node, task, placement in charged:
        node.tasks[str(task.uid)] = task
        if placement.gpu_groups:
            node._join_groups(task, placement)
        if task.gpu.mig:
            mig_tasks.append((node, task, placement))
    # Tasks that know their instances (held last time here, or recorded on the pod) take them first, so a task
    # without a record never takes an instance another one holds.
    for node, task, placement in sorted(mig_tasks, key=lambda c: not (c[2].mig or str(c[1].uid) in c[0]._mig_last)):
        node._take_mig(task, placement)
    arrays.refresh()
    arrays.stamp(np.unique(rows))


# A charge's signs on (used, idle, releasing), per `_charge_case` (§3.2's rules; 0: the ledger is left alone).
_CHARGE_SIGNS = np.array([[[1], [-1], [1]], [[1], [0], [-1]], [[1], [-1], [0]]], dtype=np.float64)
_CHARGE_SIGNS = np.concatenate([_CHARGE_SIGNS, -_CHARGE_SIGNS])  # then the same charges taken back
_LEFT_ALONE = _CHARGE_SIGNS == 0


def _charge_case(status: PodStatus, *, refund: bool) -> int:
    """Which of `NodeArrays.charges` a task in `status` adds to its row: charged as releasing, pipelined or
    else (+3 to take the charge back)."""
    bits = BITS[status]
    case = 0 if bits & _RELEASING else 1 if bits == _PIPELINED else 2
    return case + 3 if refund else case


def _charge_deltas(request: Vector) -> tuple[npt.NDArray[np.float64], ...]:
    """Per `_charge_case`, the addition to a row's used, idle and releasing, one after the other (flat): the
    request times +1 or -1 (exact), -0.0 where the rule leaves a ledger alone."""
    deltas = np.where(_LEFT_ALONE, -0.0, _CHARGE_SIGNS * request).reshape(len(_CHARGE_SIGNS), -1)
    deltas.flags.writeable = False
    return tuple(deltas)


def ledger_rule(placement: Placement) -> tuple[bool, bool]:
    """How `charge_nodes` charges a task in `placement`: (to releasing, as pipelined); the same pair, the same
    additions to the row."""
    bits = BITS[_charge(placement)]
    return bits & _RELEASING != 0, bits == _PIPELINED


def _charge(placement: Placement) -> PodStatus:
    """The ledger rule a placement follows: its status, except a converted Pipelined task charges idle."""
    return PodStatus.ALLOCATED if placement.holds_idle else placement.status
