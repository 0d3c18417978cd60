"""Search budgets of the victim actions (§1.5 `scenarioSearchBudgets`; KAI `actions/common/solvers/search_budget.go`).

A victim search on a large cluster can try very many scenarios; budgets bound it so that a cycle always ends.
Each is a duration, and 0 means no limit:

- per action (`maxActionSearchDuration`, by action name, key `default` = 5m), from the action's start;
- per job (`maxJobSearchDuration`, 4m): a job gets what the action has left, at most this much, and at least
  `minJobSearchDuration` (0s) even when the action has less, or nothing, left; `minJobSearchDuration` must be
  below a non-zero `maxJobSearchDuration`;
- per generator (`maxGeneratorSearchDuration`, by generator name: `default` 2m, `NodeLocalGreedy` 30s,
  `MultiNodeGang` 2m), within what the job has.

A job given no time at all is `not_attempted`; a job whose search runs out of its time is `deadline_exhausted`
(and counts as an action budget exhaustion if the action's time is gone too); either ends the action for this
cycle (`actions.common.preemptors.run`).

Budgets are wall-clock limits on search *effort*, not scheduling time: they read a timer (default
`time.perf_counter`), never the session's `now`, and tests inject a fake timer. Values are Go durations
("90s", "2m") or plain seconds; a bad value is a `ConfigError`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import duration
from kai_scheduler.framework.config import ConfigError

Timer = Callable[[], float]

DEFAULT_ACTION_SECONDS = 300.0
DEFAULT_JOB_SECONDS = 240.0
DEFAULT_MIN_JOB_SECONDS = 0.0
DEFAULT_GENERATOR_SECONDS: Mapping[str, float] = {"default": 120.0, "NodeLocalGreedy": 30.0, "MultiNodeGang": 120.0}
_KEYS = ("maxActionSearchDuration", "maxJobSearchDuration", "minJobSearchDuration", "maxGeneratorSearchDuration")


@dataclass(frozen=True, slots=True)
class SearchBudgets:
    """The configured limits, in seconds; 0 is no limit."""

    action: Mapping[str, float] = field(default_factory=lambda: {"default": DEFAULT_ACTION_SECONDS})
    max_job: float = DEFAULT_JOB_SECONDS
    min_job: float = DEFAULT_MIN_JOB_SECONDS
    generator: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_GENERATOR_SECONDS))

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> SearchBudgets:
        """`scenarioSearchBudgets` as written in the scheduler configuration; omitted keys keep KAI's defaults."""
        unknown = sorted(set(raw) - set(_KEYS))
        if unknown:
            raise ConfigError(f"config scenarioSearchBudgets.{unknown[0]}: unknown field; known: {', '.join(_KEYS)}")
        action = {
            "default": DEFAULT_ACTION_SECONDS,
            **_seconds_map(raw.get("maxActionSearchDuration"), "maxActionSearchDuration"),
        }
        generator = {
            **DEFAULT_GENERATOR_SECONDS,
            **_seconds_map(raw.get("maxGeneratorSearchDuration"), "maxGeneratorSearchDuration"),
        }
        max_job = _seconds(raw.get("maxJobSearchDuration"), "maxJobSearchDuration", DEFAULT_JOB_SECONDS)
        min_job = _seconds(raw.get("minJobSearchDuration"), "minJobSearchDuration", DEFAULT_MIN_JOB_SECONDS)
        if max_job and min_job >= max_job:
            raise ConfigError(
                "config scenarioSearchBudgets.minJobSearchDuration: must be less than maxJobSearchDuration "
                f"({duration.format_duration(min_job)} >= {duration.format_duration(max_job)})"
            )
        return cls(action=action, max_job=max_job, min_job=min_job, generator=generator)

    def for_action(self, action: str) -> float:
        return self.action.get(action, self.action["default"])

    def for_generator(self, generator: str) -> float:
        return self.generator.get(generator, self.generator["default"])


class Deadline:
    """A point on the timer after which a search stops; one `math.inf` seconds away never comes."""

    __slots__ = ("_end", "_timer")

    def __init__(self, timer: Timer, seconds: float, *, start: float | None = None) -> None:
        self._timer = timer
        self._end = (timer() if start is None else start) + max(0.0, seconds)

    def remaining(self, now: float | None = None) -> float:
        """Seconds left at `now` (default: the timer's reading), never below 0."""
        return max(0.0, self._end - (self._timer() if now is None else now))

    def exhausted(self) -> bool:
        return self._timer() >= self._end


class ActionBudget:
    """One action's budget for one cycle; hands out job budgets."""

    def __init__(self, budgets: SearchBudgets, action: str, timer: Timer | None = None) -> None:
        self.budgets = budgets
        self.timer: Timer = timer or time.perf_counter
        self.deadline = Deadline(self.timer, _unlimited_if_zero(budgets.for_action(action)))

    def exhausted(self) -> bool:
        return self.deadline.exhausted()

    def next_job(self) -> JobBudget:
        """The next job's budget: what the action has left, at most `maxJobSearchDuration` (unless 0), at least
        `minJobSearchDuration`. A job given 0 seconds is `not_attempted`."""
        now = self.timer()
        left = self.deadline.remaining(now)
        max_job, min_job = self.budgets.max_job, self.budgets.min_job
        seconds = max(min(left, max_job) if max_job else left, min_job)
        reduced = bool(max_job) and left < max_job
        return JobBudget(self, Deadline(self.timer, seconds, start=now), seconds, reduced=reduced)


class JobBudget:
    """One job's search: its own deadline, and one per generator inside it. `seconds`: the time it was given
    (0: none, the job is not attempted); `reduced`: the action had less left than `maxJobSearchDuration` when
    the job began (KAI's `reduced_budget` label), whatever the minimum gave."""

    __slots__ = ("action", "deadline", "reduced", "seconds")

    def __init__(self, action: ActionBudget, deadline: Deadline, seconds: float, *, reduced: bool = False) -> None:
        self.action = action
        self.deadline = deadline
        self.seconds = seconds
        self.reduced = reduced

    def exhausted(self) -> bool:
        """The job's own deadline only: a minimum granted past the action's end still runs its course."""
        return self.deadline.exhausted()

    def generator(self, name: str) -> Deadline:
        """A generator's deadline from now: its limit (unless 0) within what the job has left."""
        now = self.action.timer()
        seconds = self.deadline.remaining(now)
        limit = self.action.budgets.for_generator(name)
        return Deadline(self.action.timer, min(limit, seconds) if limit else seconds, start=now)


def _unlimited_if_zero(seconds: float) -> float:
    return seconds or math.inf


def _seconds(raw: Any, key: str, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    else:
        try:
            value = duration.parse_duration(str(raw))
        except duration.DurationError as err:
            raise ConfigError(f"config scenarioSearchBudgets.{key}: {err}") from err
    if value < 0:
        raise ConfigError(f"config scenarioSearchBudgets.{key}: must not be negative, got {raw!r}")
    return value


def _seconds_map(raw: Any, key: str) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config scenarioSearchBudgets.{key}: expected a mapping of name to duration, got {raw!r}")
    return {str(name): _seconds(value, f"{key}.{name}", 0.0) for name, value in raw.items()}
