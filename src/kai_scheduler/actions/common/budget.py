"""Search budgets of the victim actions (§1.5 `scenarioSearchBudgets`; KAI `actions/common/solvers` budgets).

A victim search on a large cluster can try very many scenarios; budgets bound it so that a cycle always ends:

- per action (`maxActionSearchDuration`, by action name, key `default` = 5m): once spent, the action stops for
  this cycle (`deadline_exhausted`);
- per job (`maxJobSearchDuration`, 4m), never more than what the action has left; if that is below
  `minJobSearchDuration` (0s) the job is `not_attempted` and the action stops as well;
- per generator (`maxGeneratorSearchDuration`, by generator name: `default` 2m, `NodeLocalGreedy` 30s,
  `MultiNodeGang` 2m), within the job's budget.

Budgets are wall-clock limits on search *effort*, not scheduling time: they read a timer (default
`time.perf_counter`), never the session's `now`, and tests inject a fake timer. Values are Go durations
("90s", "2m") or plain seconds; a bad value is a `ConfigError`.
"""

from __future__ import annotations

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
    """The configured limits, in seconds."""

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
        return cls(
            action=action,
            max_job=_seconds(raw.get("maxJobSearchDuration"), "maxJobSearchDuration", DEFAULT_JOB_SECONDS),
            min_job=_seconds(raw.get("minJobSearchDuration"), "minJobSearchDuration", DEFAULT_MIN_JOB_SECONDS),
            generator=generator,
        )

    def for_action(self, action: str) -> float:
        return self.action.get(action, self.action["default"])

    def for_generator(self, generator: str) -> float:
        return self.generator.get(generator, self.generator["default"])


class Deadline:
    """A point on the timer after which a search stops."""

    __slots__ = ("_end", "_timer")

    def __init__(self, timer: Timer, seconds: float) -> None:
        self._timer = timer
        self._end = timer() + seconds

    def remaining(self) -> float:
        return self._end - self._timer()

    def exhausted(self) -> bool:
        return self._timer() >= self._end


class ActionBudget:
    """One action's budget for one cycle; hands out job budgets. States: open → exhausted (stays so)."""

    def __init__(self, budgets: SearchBudgets, action: str, timer: Timer | None = None) -> None:
        self.budgets = budgets
        self.timer: Timer = timer or time.perf_counter
        self.deadline = Deadline(self.timer, budgets.for_action(action))
        self.exhausted = False

    def next_job(self) -> JobBudget | None:
        """The budget for the next job, or None (`not_attempted` / `deadline_exhausted`): stop the action."""
        left = self.deadline.remaining()
        seconds = min(self.budgets.max_job, left)
        if left <= 0 or seconds < self.budgets.min_job:
            self.exhausted = True
            return None
        return JobBudget(self, Deadline(self.timer, seconds), reduced=left < self.budgets.max_job)


class JobBudget:
    """One job's search: its own deadline, and one per generator inside it. `reduced`: cut below
    `maxJobSearchDuration` to what the action had left (KAI's `reduced_budget` label)."""

    __slots__ = ("action", "deadline", "reduced")

    def __init__(self, action: ActionBudget, deadline: Deadline, *, reduced: bool = False) -> None:
        self.action = action
        self.deadline = deadline
        self.reduced = reduced

    def exhausted(self) -> bool:
        if self.action.deadline.exhausted():
            self.action.exhausted = True
            return True
        return self.deadline.exhausted()

    def generator(self, name: str) -> Deadline:
        seconds = min(self.action.budgets.for_generator(name), self.deadline.remaining())
        return Deadline(self.action.timer, seconds)


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
