"""minruntime: a job that just started may not be preempted or reclaimed at once (BEHAVIOR.md §7.4; KAI
`plugins/minruntime/`).

A job is protected while `now < last start + min-runtime`; a job that never started (no
`kai.scheduler/last-start-timestamp`) is not. The min-runtime of a victim:

- preempt: the first `preemptMinRuntime` on the victim's queue or an ancestor, else `defaultPreemptMinRuntime`;
- reclaim, `reclaimResolveMethod: queue`: the same walk with `reclaimMinRuntime`;
- reclaim, `lca` (default): the walk starts at the victim-side child of the lowest common ancestor of the
  reclaimer's and the victim's queues (the victim's top-level queue when they share none), else the default.

Filters (PREEMPT_/RECLAIM_VICTIM_FILTER) drop protected victims that are not elastic; a protected elastic job
passes, and the validators (PREEMPT_/RECLAIM_VALIDATOR) reject a scenario that would take more than its
surplus: every PodSet must keep its minimum (or lose all its pods when it is a surplus member) and the job its
gang. Moved pods count as taken: they restart too. Time is the session's `now`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Self

from kai_scheduler.api import constants, duration
from kai_scheduler.api.duration import format_duration
from kai_scheduler.cluster.job_info import JobInfo, Member, PodSet
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import ACTIVE_USED, within
from kai_scheduler.framework import points
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase

LCA, QUEUE = "lca", "queue"
_ARGUMENTS = ("defaultPreemptMinRuntime", "defaultReclaimMinRuntime", "reclaimResolveMethod")


class MinRuntime(PluginBase):
    name = "minruntime"

    def __init__(
        self, *, preempt_default: float = 0.0, reclaim_default: float = 0.0, resolve_method: str = LCA
    ) -> None:
        self.preempt_default = preempt_default
        self.reclaim_default = reclaim_default
        self.resolve_method = resolve_method
        self._ssn: Session | None = None
        # Queues do not change within a session: each (reclaimer queue, victim queue) pair's min-runtime is
        # resolved once, where filtering every running job for each reclaimer walked the tree per job.
        self._reclaim_runtimes: dict[tuple[str, str], float] = {}

    @classmethod
    def from_args(cls, arguments: Mapping[str, str]) -> Self:
        """`defaultPreemptMinRuntime`, `defaultReclaimMinRuntime` (Go durations, default 0s) and
        `reclaimResolveMethod` (`lca` or `queue`)."""
        for key in arguments:
            if key not in _ARGUMENTS:
                raise ConfigError(f"plugin minruntime: unknown argument {key!r}; known: {', '.join(_ARGUMENTS)}")
        method = arguments.get("reclaimResolveMethod", LCA)
        if method not in (LCA, QUEUE):
            raise ConfigError(f"plugin minruntime argument reclaimResolveMethod: want lca or queue, got {method!r}")
        return cls(
            preempt_default=_duration(arguments, "defaultPreemptMinRuntime"),
            reclaim_default=_duration(arguments, "defaultReclaimMinRuntime"),
            resolve_method=method,
        )

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._reclaim_runtimes = {}
        ssn.add(points.PREEMPT_VICTIM_FILTER, self.preempt_filter)
        ssn.add(points.RECLAIM_VICTIM_FILTER, self.reclaim_filter)
        ssn.add(points.PREEMPT_VALIDATOR, self.preempt_validator)
        ssn.add(points.RECLAIM_VALIDATOR, self.reclaim_validator)

    # --- callbacks ---------------------------------------------------------------------------------------------

    def preempt_filter(self, preemptor: JobInfo, victim: JobInfo) -> bool:
        return is_elastic(victim) or not self.is_protected(victim, self.preempt_min_runtime(victim))

    def reclaim_filter(self, reclaimer: JobInfo, victim: JobInfo) -> bool:
        # The cached protection first: the elastic test walks the job's members.
        return not self.is_protected(victim, self.reclaim_min_runtime(reclaimer, victim)) or is_elastic(victim)

    def preempt_validator(
        self, preemptor: JobInfo, tasks: list[PodInfo], scenario: points.VictimScenario
    ) -> points.Reject | None:
        return self._validate(scenario, lambda victim: self.preempt_min_runtime(victim))

    def reclaim_validator(
        self, reclaimer: JobInfo, tasks: list[PodInfo], scenario: points.VictimScenario
    ) -> points.Reject | None:
        return self._validate(scenario, lambda victim: self.reclaim_min_runtime(reclaimer, victim))

    # --- rules ---------------------------------------------------------------------------------------------

    def is_protected(self, job: JobInfo, min_runtime: float) -> bool:
        return job.last_start is not None and self._session.now < job.last_start + min_runtime

    def preempt_min_runtime(self, victim: JobInfo) -> float:
        found = self._walk(victim.queue, "preempt_min_runtime")
        return self.preempt_default if found is None else found

    def reclaim_min_runtime(self, reclaimer: JobInfo, victim: JobInfo) -> float:
        key = (reclaimer.queue, victim.queue)
        runtime = self._reclaim_runtimes.get(key)
        if runtime is None:
            start = victim.queue if self.resolve_method == QUEUE else self._lca_child(reclaimer.queue, victim.queue)
            found = self._walk(start, "reclaim_min_runtime")
            runtime = self._reclaim_runtimes[key] = self.reclaim_default if found is None else found
        return runtime

    def _validate(
        self, scenario: points.VictimScenario, min_runtime: Callable[[JobInfo], float]
    ) -> points.Reject | None:
        ssn = self._session
        taken: dict[str, set[str]] = {}
        for task in [*scenario.victims, *scenario.moved]:
            taken.setdefault(task.job_uid, set()).add(str(task.uid))
        for uid in sorted(taken):
            job = ssn.job(uid)
            runtime = min_runtime(job)
            if self.is_protected(job, runtime) and not keeps_gang(job, taken[uid]):
                assert job.last_start is not None
                left = job.last_start + runtime - ssn.now
                return points.Reject(
                    self.name,
                    constants.REASON_UNSCHEDULABLE,
                    f"job {job.key} is protected by its min-runtime for another "
                    f"{format_duration(round(left))}; only its surplus pods may be taken",
                )
        return None

    def _walk(self, queue: str, field: str) -> float | None:
        """The first value of `field` on `queue` or an ancestor."""
        queues = self._session.snapshot.queues
        while queue and queue in queues:
            value: float | None = getattr(queues[queue].queue, field)
            if value is not None:
                return value
            queue = queues[queue].parent
        return None

    def _lca_child(self, reclaimer_queue: str, victim_queue: str) -> str:
        """The victim-side child of the lowest common ancestor (the victim's top-level queue if none)."""
        mine, theirs = self._root_path(reclaimer_queue), self._root_path(victim_queue)
        for i, name in enumerate(theirs):
            if i >= len(mine) or mine[i] != name:
                return name
        return theirs[-1]

    def _root_path(self, queue: str) -> list[str]:
        queues = self._session.snapshot.queues
        path = []
        while queue and queue in queues:
            path.append(queue)
            queue = queues[queue].parent
        return list(reversed(path))

    @property
    def _session(self) -> Session:
        if self._ssn is None:
            raise RuntimeError("minruntime plugin used before on_session_open")
        return self._ssn


def is_elastic(job: JobInfo) -> bool:
    """§7.1: some PodSet wants fewer pods than it has, or some SubGroupSet fewer members than it has."""
    return _elastic(job.root)


def _elastic(member: Member) -> bool:
    if isinstance(member, PodSet):
        return member.min_available < len(member.tasks)
    return member.required() < len(member.children) or any(_elastic(c) for c in member.children)


def keeps_gang(job: JobInfo, taken: set[str]) -> bool:
    """Whether the job keeps its gang without the `taken` tasks: each PodSet keeps its minimum or loses all
    its pods, and the job stays satisfied counting its remaining active pods."""
    remaining: dict[int, int] = {}
    for pod_set in job.root.pod_sets():
        left = sum(1 for t in pod_set.tasks if within(t.status, ACTIVE_USED) and str(t.uid) not in taken)
        if 0 < left < pod_set.min_available:
            return False
        remaining[id(pod_set)] = left
    return _satisfied(job.root, remaining)


def _satisfied(member: Member, remaining: Mapping[int, int]) -> bool:
    if isinstance(member, PodSet):
        return remaining[id(member)] >= member.min_available
    return sum(1 for c in member.children if _satisfied(c, remaining)) >= member.required()


def _duration(arguments: Mapping[str, str], key: str) -> float:
    raw = arguments.get(key)
    if raw is None:
        return 0.0
    try:
        value = duration.parse_duration(raw)
    except duration.DurationError as err:
        raise ConfigError(f"plugin minruntime argument {key}: {err}") from err
    if value < 0:
        raise ConfigError(f"plugin minruntime argument {key}: must not be negative, got {raw!r}")
    return value
