"""Statement: a transaction over the session's model (KAI `framework/statement.go`, §3.3).

Each operation is a frozen record of the task and its placement before and after. An operation changes the
model through `Snapshot.move`, which logs the move in the model's change log (`cluster.snapshot.changes`) and
keeps the node ledgers in step; `rollback(cp)` replays the inverses newest first through the same path (logged
too: the model's log is the whole history, the statement's only what survives) and truncates the statement's
operations. Do and undo both fire the allocate/deallocate handlers, so plugin state (queue accounting) follows
exactly. `commit` hands the operations to the session as decisions, in KAI's order: evictions, then pipelines,
then binds.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import ALLOCATED, BITS, RELEASING, PodStatus, within
from kai_scheduler.cluster.snapshot import Snapshot


class Op(enum.Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"
    UNEVICT = "unevict"


@dataclass(frozen=True, slots=True)
class Eviction:
    """Why a task is evicted: the action, the job it makes room for, and a sentence for the event."""

    action: str
    preemptor: str  # namespace/name of the preemptor job, "" for stale gangs
    message: str


@dataclass(frozen=True, slots=True)
class Operation:
    op: Op
    task: PodInfo
    before: Placement
    after: Placement
    eviction: Eviction | None = None

    @property
    def moved(self) -> bool:
        """A victim evicted and pipelined elsewhere in the same statement: KAI shows it Pipelined on its new
        node (the old one is in the evictions); its pod is deleted and recreated by its owner."""
        return self.op is Op.EVICT and self.after.status == PodStatus.PIPELINED


class StatementClosed(RuntimeError):
    """A committed or discarded statement was used again: a bug in an action."""


class StatementHost(Protocol):
    """What a statement needs of its session: the model it changes, the plugins' handlers, the decision log."""

    @property
    def snapshot(self) -> Snapshot: ...

    def fire_allocate(self, task: PodInfo) -> None: ...

    def fire_deallocate(self, task: PodInfo) -> None: ...

    def record_commit(self, operations: Iterable[Operation]) -> None: ...


class Statement:
    def __init__(self, session: StatementHost) -> None:
        self._ssn = session
        self._model_move = session.snapshot.move
        self._ops: list[Operation] = []
        # Each task's operations in this statement, oldest first (keyed by identity, as `_last_op` matches): a
        # victim search pipelines thousands of tasks, and a scan of every operation for each was quadratic.
        self._ops_of: dict[int, list[Operation]] = {}
        self._open = True

    @property
    def operations(self) -> tuple[Operation, ...]:
        return tuple(self._ops)

    def checkpoint(self) -> int:
        return len(self._ops)

    def allocate(self, task: PodInfo, node: str, gpu_groups: tuple[str, ...] = ()) -> None:
        """Place a Pending task on idle resources of `node`."""
        self._apply(Op.ALLOCATE, task, Placement(PodStatus.ALLOCATED, node, gpu_groups))

    def pipeline(self, task: PodInfo, node: str, gpu_groups: tuple[str, ...] = ()) -> None:
        """Place a task on resources of `node` that are still being released.

        A task evicted in this statement and pipelined back onto the same node is un-evicted instead."""
        last = self._last_op(task)
        if (
            last is not None
            and last.op is Op.EVICT
            and last.before.node == node
            and last.before.gpu_groups == gpu_groups
        ):
            self._apply(Op.UNEVICT, task, last.before)
            return
        self._apply(Op.PIPELINE, task, Placement(PodStatus.PIPELINED, node, gpu_groups))

    def evict(self, task: PodInfo, eviction: Eviction) -> None:
        """Mark an on-node task Releasing; its resources become releasing on its node."""
        before = task.placement
        if not before.node or within(before.status, RELEASING):
            raise ValueError(f"task {task.key} is not evictable in status {before.status.label}")
        self._apply(Op.EVICT, task, Placement(PodStatus.RELEASING, before.node, before.gpu_groups), eviction)

    def convert_allocated_to_pipelined(self, job_uid: str) -> None:
        """Re-record the job's Allocated tasks as Pipelined, keeping their idle charge (§3.6 step 5)."""
        self._check_open()
        for op in list(self._ops):
            task = op.task
            if task.job_uid == job_uid and op.op is Op.ALLOCATE and task.placement == op.after:
                after = Placement(PodStatus.PIPELINED, op.after.node, op.after.gpu_groups, holds_idle=True)
                self._apply(Op.PIPELINE, task, after)

    def rollback(self, checkpoint: int) -> None:
        """Undo every operation after `checkpoint`, newest first."""
        self._check_open()
        while len(self._ops) > checkpoint:
            op = self._ops.pop()
            of_task = self._ops_of[id(op.task)]
            of_task.pop()
            if not of_task:
                del self._ops_of[id(op.task)]
            if op.task.placement is not op.after and op.task.placement != op.after:
                raise RuntimeError(f"statement undo of {op.op.value} {op.task.key}: task moved outside the statement")
            self._move(op.task, op.before)

    def discard(self) -> None:
        self.rollback(0)
        self._open = False

    def commit(self) -> None:
        """Hand the surviving operations to the session as decisions; the model keeps them."""
        self._check_open()
        self._ssn.record_commit(self._final_operations())
        self._open = False

    def _final_operations(self) -> list[Operation]:
        """One operation per task: its first `before` and its final `after`, in evict/pipeline/bind order.

        A task evicted and then pipelined elsewhere (a moved victim) stays an EVICT whose `after` names its
        new node: its pod is deleted, and recreated by its owner where it was pipelined."""
        first: dict[str, Operation] = {}
        last: dict[str, Operation] = {}
        for op in self._ops:
            key = str(op.task.uid)
            first.setdefault(key, op)
            last[key] = op
        merged = []
        for key, op in last.items():
            start = first[key]
            if start.before == op.after:
                continue
            kind = Op.EVICT if start.op is Op.EVICT else op.op
            merged.append(Operation(kind, op.task, start.before, op.after, op.eviction or start.eviction))
        order = {Op.EVICT: 0, Op.PIPELINE: 1, Op.UNEVICT: 1, Op.ALLOCATE: 2}
        return sorted(merged, key=lambda o: order[o.op])

    def _apply(self, kind: Op, task: PodInfo, after: Placement, eviction: Eviction | None = None) -> None:
        self._check_open()
        op = Operation(kind, task, task.placement, after, eviction)
        self._ops.append(op)
        of_task = self._ops_of.get(id(task))
        if of_task is None:
            self._ops_of[id(task)] = [op]
        else:  # not setdefault: it would make a list per operation for nothing
            of_task.append(op)
        self._move(task, after)

    def _move(self, task: PodInfo, after: Placement) -> None:
        counted_before = BITS[task.placement.status] & _COUNTED  # as `_counts`, without a call per move
        self._model_move(task, after)
        counted_after = BITS[after.status] & _COUNTED
        if counted_before and not counted_after:
            self._ssn.fire_deallocate(task)
        elif counted_after and not counted_before:
            self._ssn.fire_allocate(task)

    def _last_op(self, task: PodInfo) -> Operation | None:
        of_task = self._ops_of.get(id(task))
        return of_task[-1] if of_task else None

    def _check_open(self) -> None:
        if not self._open:
            raise StatementClosed("statement already committed or discarded")


_COUNTED = (ALLOCATED | PodStatus.PIPELINED).value


def _counts(placement: Placement) -> bool:
    """Whether a task in this placement counts in its queue's allocation during a session."""
    return bool(BITS[placement.status] & _COUNTED)
