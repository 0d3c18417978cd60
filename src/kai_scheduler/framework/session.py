"""Session: one scheduling cycle's whole world (KAI `framework/session.go`).

It holds the snapshot, the plugins' callbacks per extension point (in configured tier order), the decisions
committed so far and the fit errors collected for the jobs that could not be placed. Actions read the model through
the session; they move tasks only through its statements, and every change to a record (a move, a GPU-memory
portion, a stale timestamp) is logged in the snapshot's change log (`Snapshot.changes`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from kai_scheduler.cluster.job_info import JobInfo, Member
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import dispatch, fit, points
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.search_stats import SearchStats
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.framework.statement import Operation, Statement

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
_REASON_NO_ROOM = "insufficient resources"


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class FitReport:
    """Why nodes were filtered out for a task: per reason, how many candidate nodes it removed, and which
    plugin's predicate removed them ("session" for the resource fit the session applies itself).

    Built on first read: scheduling only needs the mask, a fit error or a test needs the reasons."""

    __slots__ = ("_build", "_candidates", "_removed")

    def __init__(
        self, candidates: int | Callable[[], int], build: Callable[[], list[tuple[str, str, int]]] | None = None
    ) -> None:
        self._candidates = candidates
        self._build = build
        self._removed: list[tuple[str, str, int]] | None = None if build else []

    @property
    def candidates(self) -> int:
        """How many nodes were candidates (counted on first read)."""
        if callable(self._candidates):
            self._candidates = self._candidates()
        return self._candidates

    @property
    def removed_by(self) -> list[tuple[str, str, int]]:
        """(plugin, reason, nodes removed), in predicate order."""
        if self._removed is None:
            assert self._build is not None
            self._removed = self._build()
        return self._removed

    @property
    def removed(self) -> list[tuple[str, int]]:
        return [(reason, n) for _, reason, n in self.removed_by]

    @property
    def plugins(self) -> tuple[str, ...]:
        """The plugins that removed nodes, each once, in predicate order."""
        return tuple(dict.fromkeys(plugin for plugin, _, n in self.removed_by if n))

    def message(self) -> str:
        parts = [f"{n} {reason}" for reason, n in self.removed if n]
        return f"0/{self.candidates} nodes are available: " + (", ".join(parts) or "no candidate nodes")


class Session:
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig, plugins: Sequence[Plugin]) -> None:
        self.snapshot = snapshot
        self.config = config
        self.now = snapshot.now
        self.plugins = list(plugins)
        self.committed: list[Operation] = []
        self.job_fit_errors: dict[str, list[points.Reject]] = {}
        self.started_jobs: set[str] = set()
        self.search = SearchStats()  # what the victim actions' scenario search did (metrics read it)
        self._hooks: dict[points.ExtensionPoint[Any], list[tuple[str, Any]]] = {}
        self._calls: dict[points.ExtensionPoint[Any], Callable[..., Any]] = {}
        self._registering = ""
        self._task_rank: dict[str, int] = {}
        self.member_key = functools.cmp_to_key(self.compare_members)
        self.job_key: Callable[[JobInfo], Any] = functools.cmp_to_key(self.compare_jobs)
        self._all_nodes = np.ones(len(snapshot.nodes), dtype=bool)
        self._tasks_to_allocate: dict[str, list[PodInfo]] = {}
        self._ranked_as: Mapping[str, Sequence[PodInfo]] = {}
        self.ranking_version = 0  # changes when `ranked_as` does: what ranks a queue's best job may differ
        self._derived: dict[str, tuple[int, Any]] = {}

    # --- lifecycle ---------------------------------------------------------------------------------------

    def open(self) -> dict[str, float]:
        """Let every plugin register its callbacks, in configured order; return the seconds each plugin took
        (KAI's `plugin_scheduling_latency_milliseconds`: a measurement, never an input to a decision)."""
        seconds: dict[str, float] = {}
        for plugin in self.plugins:
            self._registering = plugin.name
            started = time.perf_counter()
            plugin.on_session_open(self)
            seconds[plugin.name] = time.perf_counter() - started
        self._registering = ""
        return seconds

    def close(self) -> dict[str, float]:
        """Let every plugin finish, in configured order; return the seconds each plugin took."""
        seconds: dict[str, float] = {}
        for plugin in self.plugins:
            started = time.perf_counter()
            plugin.on_session_close(self)
            seconds[plugin.name] = time.perf_counter() - started
        return seconds

    def release(self) -> None:
        """Break the reference cycles among the session, its plugins and their callbacks once the cycle is
        over, so that reference counting frees them, and the snapshot as soon as its last reader drops it: the
        carried snapshot model is changed in place only then (`cluster.snapshot.incremental`)."""
        self._hooks.clear()
        self._calls.clear()
        self.plugins.clear()
        self._task_rank.clear()
        self._tasks_to_allocate.clear()
        self._derived.clear()
        self.member_key = self.job_key = _RELEASED_KEY

    def add(self, point: points.ExtensionPoint[F], fn: F) -> None:
        """Register `fn` on `point` for the plugin being opened."""
        self._hooks.setdefault(point, []).append((self._registering or "session", fn))
        self._calls.pop(point, None)
        if point is points.JOB_ORDER or point is points.JOB_ORDER_KEY:
            self.job_key = self._job_key()

    def hooks(self, point: points.ExtensionPoint[F]) -> list[tuple[str, F]]:
        return self._hooks.get(point, [])

    def call(self, point: points.ExtensionPoint[Any]) -> Callable[..., Any]:
        """The callables on `point` as one, combined by the point's rule (`framework.dispatch`)."""
        run = self._calls.get(point)
        if run is None:
            run = self._calls[point] = dispatch.compile(point, self.hooks(point))
        return run

    # --- ordering ----------------------------------------------------------------------------------------

    def compare_jobs(self, left: JobInfo, right: JobInfo) -> int:
        """First non-zero plugin answer; then older creation; then UID (deterministic)."""
        return (
            self.call(points.JOB_ORDER)(left, right) or _tie(left.creation, right.creation) or _tie(left.uid, right.uid)
        )

    def _job_key(self) -> Callable[[JobInfo], Any]:
        """The sort key of JOB_ORDER. When every plugin on JOB_ORDER gives its order as a key too (JOB_ORDER_KEY,
        the same plugins in the same order), the tuple of their keys and the tie-break: it orders exactly as
        `compare_jobs`, and a sort compares tuples without a call into the plugins per comparison (a victim pool
        of 33,600 jobs cost a tenth of a reclaim cycle that way). Otherwise the comparison itself."""
        if [name for name, _ in self.hooks(points.JOB_ORDER_KEY)] != [name for name, _ in self.hooks(points.JOB_ORDER)]:
            return functools.cmp_to_key(self.compare_jobs)
        fns = tuple(fn for _, fn in self.hooks(points.JOB_ORDER_KEY))
        if len(fns) == 2:  # the default plugins' (priority, elastic): the key without a loop per job
            first, second = fns

            def pair_key(job: JobInfo) -> tuple[Any, ...]:
                return (first(job), second(job), job.creation, job.uid)

            return pair_key

        def key(job: JobInfo) -> tuple[Any, ...]:
            return (*[fn(job) for fn in fns], job.creation, job.uid)

        return key

    def compare_queues(
        self, left: QueueInfo, right: QueueInfo, left_job: JobInfo | None, right_job: JobInfo | None
    ) -> int:
        order = self._calls.get(points.QUEUE_ORDER) or self.call(points.QUEUE_ORDER)
        return (
            order(left, right, left_job, right_job)
            or _tie(left.creation, right.creation)
            or _tie(left.name, right.name)
        )

    def queue_comparator(self) -> points.QueueCompare:
        """`compare_queues` as one callable, for a caller that compares queues in bulk (the job-order tree): the
        plugin's own when it alone orders queues and breaks every tie itself (`points.breaks_ties`), so that
        no session frame runs per comparison; else `compare_queues`."""
        hooks = self.hooks(points.QUEUE_ORDER)
        if len(hooks) == 1 and points.is_tie_breaking(hooks[0][1]):
            return hooks[0][1]
        return self.compare_queues

    def compare_tasks(self, left: PodInfo, right: PodInfo) -> int:
        return (
            self.call(points.TASK_ORDER)(left, right)
            or _tie(left.creation, right.creation)
            or _tie(left.name, right.name)
        )

    def task_key(self, task: PodInfo) -> int:
        """Sort key of a task in TASK_ORDER. Task order depends on the task alone (role, priority label,
        creation, name), so each job's tasks are ranked once per session instead of compared per sort."""
        rank = self._task_rank.get(task.uid)
        if rank is None:
            job = self.snapshot.jobs.get(task.job_uid)
            peers = [*job.tasks, *job.unassigned] if job is not None else [task]
            if task not in peers:
                peers.append(task)
            for i, peer in enumerate(sorted(peers, key=functools.cmp_to_key(self.compare_tasks))):
                self._task_rank[peer.uid] = i
            rank = self._task_rank[task.uid]
        return rank

    def compare_members(self, left: Member, right: Member) -> int:
        return self.call(points.SUBGROUP_ORDER)(left, right) or _tie(left.name, right.name)

    # --- filtering and scoring -------------------------------------------------------------------------

    def pre_predicate(self, task: PodInfo, job: JobInfo) -> points.Reject | None:
        result: points.Reject | None = self.call(points.PRE_PREDICATE)(task, job)
        return result

    def feasible_nodes(self, task: PodInfo, candidates: points.Mask | None = None) -> tuple[points.Mask, FitReport]:
        """Nodes among `candidates` that pass every predicate (AND).

        The report of what each predicate removed is built only when read (a fit error, a test); the
        common path is one mask AND per predicate."""
        start = self._all_nodes if candidates is None else candidates
        mask: points.Mask
        mask, fitted = self.call(points.PREDICATE)(task, start)
        if not fitted and mask.any():  # KAI's FittingNode: never over-commit, whatever plugins are configured
            mask &= fit.resources_fit(self.snapshot, task, mask)
        # `start` is not copied: callers build each candidate mask fresh and never change it afterwards.
        return mask, FitReport(lambda: int(start.sum()), functools.partial(self._fit_reasons, task, start))

    def _fit_reasons(self, task: PodInfo, candidates: points.Mask) -> list[tuple[str, str, int]]:
        mask = candidates
        removed: list[tuple[str, str, int]] = []
        for plugin, fn in self.hooks(points.PREDICATE):
            if not mask.any():
                break
            result = fn(task, mask)
            if result is None:
                continue
            rejected = mask & ~result.mask
            count = int(rejected.sum())
            if count:
                reasons = result.explain(rejected) if result.explain else [(result.reason, count)]
                removed.extend((plugin, reason, n) for reason, n in reasons)
                mask = mask & result.mask
        if mask.any():
            short = int((mask & ~fit.resources_fit(self.snapshot, task, mask)).sum())
            if short:
                removed.append(("session", _REASON_NO_ROOM, short))
        return removed

    def node_scores(self, task: PodInfo, candidates: points.Mask) -> points.Scores:
        """Sum of every NODE_ORDER plugin's scores over all nodes (non-candidates are never read)."""
        self.call(points.NODE_PRE_ORDER)(task, candidates)
        total: points.Scores | None = self.call(points.NODE_ORDER)(task, candidates)
        return np.zeros(len(candidates)) if total is None else total

    def best_node(self, task: PodInfo, candidates: points.Mask) -> int:
        """Row of the highest-scoring candidate; ties go to the lower node name (rows are in name order)."""
        scores = self.node_scores(task, candidates)
        return int(np.argmax(np.where(candidates, scores, -np.inf)))

    def job_over_capacity(self, job: JobInfo, tasks: list[PodInfo]) -> points.Reject | None:
        result: points.Reject | None = self.call(points.JOB_OVER_CAPACITY)(job, tasks)
        return result

    def subset_nodes(
        self, job: JobInfo, member: Member, tasks: list[PodInfo], candidates: points.Mask
    ) -> list[points.Mask]:
        """Candidate node sets for `member`, each plugin splitting every set the previous ones produced."""
        sets: list[points.Mask] = self.call(points.SUBSET_NODES)(job, member, tasks, [candidates])
        return sets

    def queue_share(self, queue: str) -> QueueShare | None:
        share: QueueShare | None = self.call(points.QUEUE_SHARE)(queue)
        return share

    def gpu_scores(self, task: PodInfo, row: int, groups: list[str]) -> list[float]:
        """Summed GPU_ORDER scores of each candidate GPU group (a fresh device is a group id too)."""
        total: list[float] | None = self.call(points.GPU_ORDER)(task, row, groups)
        return [0.0] * len(groups) if total is None else [float(score) for score in total]

    def pre_job_allocation(self, job: JobInfo) -> None:
        self.call(points.PRE_JOB_ALLOCATION)(job)

    def victim_invariant_pre_predicate(self, task: PodInfo, job: JobInfo) -> points.Reject | None:
        """A rejection no eviction can fix: victim actions skip the job."""
        result: points.Reject | None = self.call(points.VICTIM_INVARIANT_PRE_PREDICATE)(task, job)
        return result

    def can_reclaim(self, job: JobInfo, tasks: list[PodInfo]) -> points.Reject | None:
        result: points.Reject | None = self.call(points.CAN_RECLAIM)(job, tasks)
        return result

    def is_victim(self, point: points.ExtensionPoint[points.VictimFilter], preemptor: JobInfo, victim: JobInfo) -> bool:
        """Every filter on `point` (RECLAIM_ or PREEMPT_VICTIM_FILTER) accepts `victim`."""
        return bool(self.victim_filter(point)(preemptor, victim))

    def victim_filter(self, point: points.ExtensionPoint[points.VictimFilter]) -> Callable[[JobInfo, JobInfo], bool]:
        """`is_victim` on `point` as one callable, for a caller that asks it of a whole victim pool."""
        accepts: Callable[[JobInfo, JobInfo], bool] = self.call(point)
        return accepts

    def validate(
        self,
        point: points.ExtensionPoint[points.ScenarioValidator],
        preemptor: JobInfo,
        tasks: list[PodInfo],
        scenario: Any,
    ) -> points.Reject | None:
        """The first validator on `point` that rejects the scenario, or None."""
        result: points.Reject | None = self.call(point)(preemptor, tasks, scenario)
        return result

    def job_solution_start(self, job: JobInfo) -> None:
        self.call(points.ON_JOB_SOLUTION_START)(job)

    def all_nodes(self) -> points.Mask:
        return self._all_nodes.copy()

    # --- model changes (statements only) ----------------------------------------------------------------

    def statement(self) -> Statement:
        return Statement(self)

    def tasks_to_allocate(self, job: JobInfo) -> list[PodInfo]:
        """The job's next tasks (§3.5), cached until a task of the job is allocated or deallocated."""
        tasks = self._tasks_to_allocate.get(job.uid)
        if tasks is None:
            tasks = self._tasks_to_allocate[job.uid] = job.tasks_to_allocate(self.task_key, self.member_key)
        return list(tasks)

    def ranking_tasks(self, job: JobInfo) -> list[PodInfo]:
        """The tasks whose request ranks `job`'s queue in QUEUE_ORDER: its tasks to allocate, unless a victim
        simulation names the tasks it is about to place for it (`ranked_as`)."""
        tasks = self._ranked_as.get(job.uid)
        return list(tasks) if tasks is not None else self.tasks_to_allocate(job)

    @contextlib.contextmanager
    def ranked_as(self, tasks: Mapping[str, Sequence[PodInfo]]) -> Iterator[None]:
        """Inside the block, the jobs named (by uid) are ranked by the given tasks: a victim simulation orders
        its victims by what they would take back (KAI counts the tasks evicted in the simulation as the job's
        tasks to allocate) and a probe's preemptor by the tasks it probes."""
        self._ranked_as = tasks
        self.ranking_version += 1
        try:
            yield
        finally:
            self._ranked_as = {}
            self.ranking_version += 1

    def derived(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()`, a value derived from the placements only, remembered under `name` until a task moves
        (the snapshot's version changes). An action that checks every pending job against the cluster's
        free capacity computes it once per change instead of once per job. Callers must not change it."""
        version = self.snapshot.version
        hit = self._derived.get(name)
        if hit is not None and hit[0] == version:
            value: T = hit[1]
            return value
        value = compute()
        self._derived[name] = (version, value)
        return value

    def fire_allocate(self, task: PodInfo) -> None:
        self._tasks_to_allocate.pop(task.job_uid, None)
        self.call(points.ON_ALLOCATE)(task)

    def fire_deallocate(self, task: PodInfo) -> None:
        self._tasks_to_allocate.pop(task.job_uid, None)
        self.call(points.ON_DEALLOCATE)(task)

    def record_commit(self, operations: Iterable[Operation]) -> None:
        self.committed.extend(operations)

    def record_fit_error(self, job: JobInfo, reject: points.Reject, *, first: bool = False) -> None:
        """Add why `job` could not be placed; `first` puts it in front (a summary of the reasons after it)."""
        errors = self.job_fit_errors.setdefault(job.uid, [])
        if first:
            errors.insert(0, reject)
        else:
            errors.append(reject)

    @contextlib.contextmanager
    def provisional_fit_errors(self) -> Iterator[None]:
        """Changes to the fit errors inside the block (recorded or cleared) are undone on leaving it (a simulated
        search's own)."""
        saved = {uid: list(errors) for uid, errors in self.job_fit_errors.items()}
        try:
            yield
        finally:
            self.job_fit_errors.clear()
            self.job_fit_errors.update(saved)

    def record_started(self, job: JobInfo) -> None:
        """`job` got its first allocated pods in this cycle (its PodGroup is told it started)."""
        self.started_jobs.add(job.uid)

    def clear_fit_errors(self, job: JobInfo) -> None:
        self.job_fit_errors.pop(job.uid, None)

    def job(self, uid: str) -> JobInfo:
        return self.snapshot.jobs[uid]


_RELEASED_KEY = functools.cmp_to_key(lambda left, right: 0)


def _tie(left: Any, right: Any) -> int:
    return -1 if left < right else (1 if left > right else 0)
