"""What changed in a model, as logs.

- `ChangeLog`: every change made to a snapshot's records after its build (a task's placement, with the node
  ledgers or only shown to a reader; a task's GPU-memory portion; a job's stale timestamp), each a small frozen
  record of the field before and after, oldest first. It is the only way anything changes a record: a
  statement's operations and their undoing, GPU sharing's choice of a portion, stalegangeviction's timestamps
  and a reader's `Snapshot.show` all append to it. The carried model undoes it, newest first, at its next
  build: the records are then as the objects say, and the nodes its moves reached are the ones whose ledgers
  are recomputed.
- `TaskLog`: the carried model's record, build after build, of the uids whose task records a build replaced,
  for readers that keep something derived from `tasks` (gpufrag's learned shapes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import ledger_rule
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import BITS, ON_NODE

_ON_NODE = ON_NODE.value


@dataclass(frozen=True, slots=True)
class Placed:
    """A task's placement changed (see the two kinds below)."""

    task: PodInfo
    before: Placement
    after: Placement

    def apply(self) -> None:
        self.task.placement = self.after

    def revert(self) -> None:
        self.task.placement = self.before


@dataclass(frozen=True, slots=True)
class Moved(Placed):
    """A task's placement changed, and the node ledgers with it (`Snapshot.move`)."""


@dataclass(frozen=True, slots=True)
class Shown(Placed):
    """A task's placement changed for a reader, the ledgers left as they were (`Snapshot.show`)."""


@dataclass(frozen=True, slots=True)
class Portioned:
    """A gpu-memory task's portion of one GPU changed (GPU sharing sizes it on the node it chose)."""

    task: PodInfo
    before: float
    after: float

    def apply(self) -> None:
        self.task.memory_portion = self.after

    def revert(self) -> None:
        self.task.memory_portion = self.before


@dataclass(frozen=True, slots=True)
class Restamped:
    """A job's stale timestamp changed (stalegangeviction)."""

    job: JobInfo
    before: float | None
    after: float | None

    def apply(self) -> None:
        self.job.stale_since = self.after

    def revert(self) -> None:
        self.job.stale_since = self.before


Change = Moved | Shown | Portioned | Restamped


@dataclass(slots=True, eq=False)
class ChangeLog:
    """The changes made to a snapshot's records since its build, oldest first."""

    changes: list[Change] = field(default_factory=list)

    def record(self, change: Change) -> None:
        """Make `change` in its record and log it (the ledgers of a move are the caller's)."""
        self.changes.append(change)
        change.apply()

    def undo(self) -> set[str]:
        """Undo every change in its record, newest first, and empty the log; return the nodes whose ledgers the
        moves changed (the ledgers are not undone here: the caller recomputes those rows)."""
        nodes: set[str] = set()
        for change in reversed(self.changes):
            change.revert()
            if type(change) is Moved:
                nodes.update(_charged_on(change))
        self.changes.clear()
        return nodes

    def appended(self) -> tuple[dict[str, list[tuple[PodInfo, Placement]]], set[str]]:
        """The moves' nodes, split: those onto which the moves only added tasks, charged plainly (a pending task
        allocated there: no releasing or pipelined charge, GPU group or MIG instance), with those tasks and their
        placements in the order added; and every other node a move reached."""
        added: dict[str, list[tuple[PodInfo, Placement]]] = {}
        other: set[str] = set()
        for change in self.changes:
            if type(change) is not Moved:
                continue
            before, after = change.before, change.after
            plain = (
                not (BITS[before.status] & _ON_NODE and before.node)
                and not after.gpu_groups
                and not change.task.gpu.mig
                and ledger_rule(after) == (False, False)
            )
            if plain and BITS[after.status] & _ON_NODE and after.node:
                added.setdefault(after.node, []).append((change.task, after))
            else:
                other.update(_charged_on(change))
        return {n: tasks for n, tasks in added.items() if n not in other}, other

    def moved_nodes(self) -> set[str]:
        """The nodes whose ledgers the logged moves changed."""
        return {name for c in self.changes if type(c) is Moved for name in _charged_on(c)}

    def moved_jobs(self) -> set[str]:
        """The uids of the jobs whose tasks the logged moves moved."""
        return {c.task.job_uid for c in self.changes if type(c) is Moved}


def _charged_on(move: Moved) -> Iterable[str]:
    for placement in (move.before, move.after):
        if BITS[placement.status] & _ON_NODE and placement.node:
            yield placement.node


@dataclass(slots=True, eq=False)
class TaskLog:
    """The carried model's record of the uids whose task records changed (new, replaced or gone), in order. A reader
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
