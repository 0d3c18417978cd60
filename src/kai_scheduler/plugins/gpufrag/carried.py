"""What gpufrag keeps from one session to the next, in the snapshot's `plugin_memo` (the carried model hands the same
memo to each snapshot it builds; elsewhere every session starts empty).

- `Learned`: the shape of every task the last session saw, by uid with the record it was derived from. A
  session looks at the uids logged as replaced since (`Snapshot.task_log`; when that is another log than the one
  last read, a build from nothing's, or does not reach back, every record is matched by identity) instead of
  deriving the shape of every pod of the cluster again. A session's own changes to the records (its change log)
  leave the shape fields alone. The counts are those of a fresh pass over the snapshot's tasks. Their ranking
  (`Ranking`, `shapes.heaviest`'s order) is kept sorted and moved for the shapes whose counts changed.
- `Rows`: per node row, its per-device free fractions and its class, under the row's stamp
  (`NodeArrays.stamps`, new whenever the row's tasks or ledgers change): a session open derives only the rows
  whose stamp moved since.
- `Table`: for one set of shapes and device slots, the classes of measure inputs met so far (a node's
  per-device free fractions, free CPU and memory, and the shapes it is eligible for, bit for bit), each with its
  `F_n(m)` per shape, and per task signature and class the `F_n(m)` per shape after such a task lands (for a
  task on one shared device: after it takes each device that holds it). These depend on the inputs and the
  shapes alone, not on the shapes' weights nor their rank, so they stay true while the workload's popularity
  moves: the columns are the shapes in `shapes.order`, and a session takes them in its rank order and weighs
  them with its weights (`measure.weigh`, the same sums as a fresh computation).

Everything here is a function of what it is keyed by, so a memo shared by snapshots built in any order gives the
same values as a fresh computation. A table holds at most `LIMIT` rows of per-shape values; the next session
past that starts a new one.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.snapshot import TaskLog
from kai_scheduler.plugins.gpufrag import shapes
from kai_scheduler.plugins.gpufrag.measure import Bools, Floats, Shapes

LIMIT = 1 << 16  # rows of per-shape values past which a table is dropped: 32 MiB at 64 shapes (twice in capacity)

Signature = tuple[object, ...]


@dataclass(slots=True, eq=False)
class Learned:
    """Each task record's shape fields (`shapes.fields`) by uid, and how many tasks have each."""

    max_gpu_memory: float = math.nan  # the fields size a gpu-memory ask against it
    tasks: dict[str, tuple[PodInfo, shapes.Fields]] = field(default_factory=dict)  # uid → (record held, fields)
    counts: Counter[shapes.Fields] = field(default_factory=Counter)
    log: TaskLog | None = None  # `tasks` is the log's at `mark` (None: not known)
    mark: int = 0
    moved: set[shapes.Fields] = field(default_factory=set)  # fields whose count changed since `ranking` looked
    ranking: Ranking | None = None  # None: rank every shape again

    def heaviest(self, limit: int, weigh_by: str) -> list[tuple[shapes.ShapeKey, float]]:
        """`shapes.heaviest(counts, limit, weigh_by)` of the counts as last read, from a ranking kept in order
        and moved for the fields whose count changed since (not every shape sorted again)."""
        ranking = self.ranking
        if ranking is None or ranking.weigh_by != weigh_by:
            ranking = self.ranking = Ranking(weigh_by)
            self.moved = set(self.counts)
        for f in self.moved:
            if not ranking.set(f, self.counts.get(f, 0)):  # two shapes that rank alike (not met): sort them all
                self.ranking = None
                return shapes.heaviest(self.counts, limit, weigh_by)
        self.moved.clear()
        return ranking.top(limit)

    def counts_of(
        self, tasks: Mapping[str, PodInfo], max_gpu_memory: float, log: TaskLog | None = None, mark: int = 0
    ) -> Counter[shapes.Fields]:
        """The shape counts of `tasks` (by uid; the counter is kept: read it, do not change it). With the kept
        model's `log` of changed records and `tasks`' `mark` in it, only the uids logged since are looked at;
        otherwise every record is matched against the kept one by identity."""
        if max_gpu_memory != self.max_gpu_memory:
            self.max_gpu_memory, self.tasks, self.counts, self.log = max_gpu_memory, {}, Counter(), None
            self.moved, self.ranking = set(), None
        changed = log.since(self.mark, mark) if log is not None and log is self.log else None
        if changed is not None:
            for uid in changed:
                self._update(uid, tasks.get(uid))
        elif 2 * sum(1 for uid, t in tasks.items() if (e := self.tasks.get(uid)) is None or e[0] is not t) > len(
            tasks
        ):  # mostly new records (a model built anew): count afresh
            self.tasks = {uid: (t, shapes.fields(t, self.max_gpu_memory)) for uid, t in tasks.items()}
            self.counts = Counter(f for _, f in self.tasks.values())
            self.moved, self.ranking = set(), None
        else:
            for uid, task in tasks.items():
                self._update(uid, task)
            if len(self.tasks) != len(tasks):
                for uid in self.tasks.keys() - tasks.keys():
                    self._update(uid, None)
        self.log, self.mark = log, mark
        return self.counts

    def _update(self, uid: str, task: PodInfo | None) -> None:
        """Count `task` (None: gone) for `uid` instead of the record kept, if that is another."""
        tasks, counts = self.tasks, self.counts
        entry = tasks.get(uid)
        if entry is not None and entry[0] is task:
            return
        if entry is not None:
            del tasks[uid]
            counts[entry[1]] -= 1
            if not counts[entry[1]]:
                del counts[entry[1]]
            self.moved.add(entry[1])
        if task is not None:
            fields = shapes.fields(task, self.max_gpu_memory)
            tasks[uid] = (task, fields)
            counts[fields] += 1
            self.moved.add(fields)


@dataclass(slots=True, eq=False)
class Ranking:
    """Shapes in `shapes.heaviest`'s order, kept sorted as their counts move: each by its rank key (minus its
    weight, then `shapes.order`)."""

    weigh_by: str
    ranks: list[tuple[object, ...]] = field(default_factory=list)  # rank keys, ascending: heaviest first
    rank_of: dict[shapes.Fields, tuple[object, ...]] = field(default_factory=dict)
    at: dict[tuple[object, ...], tuple[shapes.ShapeKey, float]] = field(default_factory=dict)  # rank key → entry
    order_of: dict[shapes.Fields, tuple[object, ...]] = field(default_factory=dict)  # `shapes.order`, kept

    def set(self, f: shapes.Fields, count: int) -> bool:
        """Rank `f` for `count` tasks (0: drop it); False when another shape has the same rank key (their order
        would be the counter's, which a sorted list does not keep)."""
        old = self.rank_of.pop(f, None)
        if old is not None:
            del self.ranks[bisect.bisect_left(self.ranks, old)]
            del self.at[old]
        if count <= 0:
            self.order_of.pop(f, None)
            return True
        order = self.order_of.get(f)
        if order is None:
            order = self.order_of[f] = shapes.order(f)
        weight = shapes.weight(f, count, self.weigh_by)
        key = (-weight, *order)
        if key in self.at:
            return False
        bisect.insort(self.ranks, key)
        self.rank_of[f] = key
        self.at[key] = (shapes.ShapeKey(*f), weight)
        return True

    def top(self, limit: int) -> list[tuple[shapes.ShapeKey, float]]:
        at = self.at
        return [at[key] for key in self.ranks[:limit]]


@dataclass(slots=True, eq=False)
class After:
    """For one task signature, per class met (`local`: class → its index here, -1: not met): `F_n(m)` per shape
    after the task lands, for each way it can (`values`, (met, choices, M)), and which ways it can (`ok`)."""

    values: Floats
    ok: Bools
    local: npt.NDArray[np.intp]
    count: int = 0

    def add(self, classes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """Indices for `classes` (not met before), with room to fill."""
        start = self.count
        self.count += classes.size
        if self.count > self.ok.shape[0]:
            size = 2 * self.count
            values = np.zeros((size, *self.values.shape[1:]))
            ok = np.zeros((size, self.ok.shape[1]), dtype=bool)
            values[:start], ok[:start] = self.values[:start], self.ok[:start]
            self.values, self.ok = values, ok
        if self.local.size < int(classes.max()) + 1:
            local = np.full(2 * (int(classes.max()) + 1), -1, dtype=np.intp)
            local[: self.local.size] = self.local
            self.local = local
        out = np.arange(start, self.count, dtype=np.intp)
        self.local[classes] = out
        return out

    def index(self, classes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """Each class's index here, -1 where not met."""
        out = np.full(classes.size, -1, dtype=np.intp)
        inside = classes < self.local.size
        out[inside] = self.local[classes[inside]]
        return out


@dataclass(slots=True, eq=False)
class Table:
    """Classes of measure inputs and their per-shape values, for the shapes `keys` over `slots` devices."""

    keys: tuple[shapes.ShapeKey, ...]  # distinct, in `shapes.order`: the columns of the per-shape values
    slots: int
    shapes: Shapes = field(init=False)  # `keys` as arrays (their weights play no part here)
    ids: dict[bytes, int] = field(default_factory=dict)  # measure inputs → class
    per_shape: Floats = field(init=False)  # (classes, M): `F_n(m)` now
    after: dict[Signature, After] = field(default_factory=dict)
    rows: int = 0  # rows of per-shape values held (classes, and signatures' choices)

    def __post_init__(self) -> None:
        self.shapes = shapes.to_shapes([(k, 1.0) for k in self.keys])
        self.per_shape = np.zeros((0, len(self.keys)))

    def grow(self, count: int) -> None:
        """Room for `count` classes."""
        if self.per_shape.shape[0] < count:
            out = np.zeros((2 * count, len(self.keys)))
            out[: self.per_shape.shape[0]] = self.per_shape
            self.per_shape = out

    def after_of(self, signature: Signature, choices: int) -> After:
        after = self.after.get(signature)
        if after is None:
            after = self.after[signature] = After(
                np.zeros((0, choices, len(self.keys))),
                np.zeros((0, choices), dtype=bool),
                np.zeros(0, dtype=np.intp),
            )
        return after


@dataclass(slots=True, eq=False)
class Rows:
    """Per node row, what a session open derives from it, under the row's stamp (`NodeArrays.stamps`): its
    per-device free fractions (`state.node_free`) and its class in `table`. A row whose stamp is the one kept
    has the same inputs bit for bit (same node, tasks, GPU groups and ledgers), so only the other rows are
    derived again; a new table (other shapes, or full) classes every row again."""

    stamps: npt.NDArray[np.int64]  # (nodes,): the stamp each row was derived at (0: never)
    free: Floats  # (nodes, slots)
    classes: npt.NDArray[np.intp]  # (nodes,): class in `table`
    table: Table | None = None

    @classmethod
    def empty(cls, nodes: int, slots: int) -> Rows:
        return cls(np.zeros(nodes, dtype=np.int64), np.zeros((nodes, slots)), np.zeros(nodes, dtype=np.intp))


@dataclass(slots=True, eq=False)
class Carried:
    """What gpufrag carries to the next session: the learned shapes, the table of the last shapes and the node rows
    of the last session."""

    learned: Learned = field(default_factory=Learned)
    table: Table | None = None
    rows: Rows | None = None
    ranked: tuple[shapes.ShapeKey, ...] = ()  # the shapes of the last `columns_for`, and what it gave
    columns: tuple[tuple[shapes.ShapeKey, ...], npt.NDArray[np.intp] | None] = ((), None)

    def columns_for(
        self, keys: tuple[shapes.ShapeKey, ...]
    ) -> tuple[tuple[shapes.ShapeKey, ...], npt.NDArray[np.intp] | None]:
        """The table columns of shapes `keys` (ranked by weight): the distinct ones in `shapes.order`, so that a
        new ranking of the same shapes keeps its table; and per shape of `keys` its column (None: the same
        order). A session weighs `values[..., perm]`: the columns in `keys`' order, the sums as before."""
        if keys != self.ranked:
            columns = tuple(sorted(dict.fromkeys(keys), key=_order))
            index = {k: i for i, k in enumerate(columns)}
            perm = np.array([index[k] for k in keys], dtype=np.intp)
            same = columns == keys
            self.ranked, self.columns = keys, (columns, None if same else perm)
        return self.columns

    def rows_for(self, nodes: int, slots: int) -> Rows:
        """The kept rows for this many nodes and device slots, or new ones (nothing derived yet)."""
        rows = self.rows
        if rows is None or rows.free.shape != (nodes, slots):
            rows = self.rows = Rows.empty(nodes, slots)
        return rows

    def table_for(self, keys: tuple[shapes.ShapeKey, ...], slots: int) -> Table:
        """The table of these shapes and slots: the kept one, or a new one (other shapes, or full)."""
        table = self.table
        if table is None or table.keys != keys or table.slots != slots or table.rows > LIMIT:
            table = self.table = Table(keys, slots)
        return table


def _order(key: shapes.ShapeKey) -> tuple[float, float, int, float, str]:
    return shapes.order((key.cpu, key.memory, key.devices, key.per_device, key.constraint))


def of(memo: dict[str, object], name: str) -> Carried:
    """The `Carried` under `name` in a snapshot's plugin memo (made on first use)."""
    found = memo.get(name)
    if not isinstance(found, Carried):
        found = memo[name] = Carried()
    return found
