"""The victim search budgets (`scenarioSearchBudgets`), rule by rule as KAI's `search_budget.go` has them: KAI's
defaults, 0 as no limit, negative values and a minimum not below the maximum refused, a job's budget between
`minJobSearchDuration` and `maxJobSearchDuration` of what the action has left, generators within the job.
Times are read on a fake timer. How the action loop acts on them: tests/actions/test_search_stats.py."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kai_scheduler.actions.common import budget
from kai_scheduler.framework.config import ConfigError
from tests.actions import victim_builders as v

JSON = dict[str, Any]


class FakeTimer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def action_budget(raw: JSON, action: str = "reclaim") -> tuple[budget.ActionBudget, FakeTimer]:
    timer = FakeTimer()
    return budget.ActionBudget(budget.SearchBudgets.parse(raw), action, timer), timer


# --- what the configuration means -----------------------------------------------------------------------------


def test_omitted_budgets_are_kai_s_defaults() -> None:
    limits = budget.SearchBudgets.parse({})
    assert [limits.for_action(a) for a in ("reclaim", "preempt", "consolidation")] == [300.0] * 3
    assert (limits.max_job, limits.min_job) == (240.0, 0.0)
    assert limits.for_generator("NodeLocalGreedy") == 30.0
    assert limits.for_generator("MultiNodeGang") == 120.0
    assert limits.for_generator("another") == 120.0


def test_an_action_s_own_key_wins_over_default() -> None:
    limits = budget.SearchBudgets.parse(
        {"maxActionSearchDuration": {"default": "30s", "preempt": "3s"}, "maxJobSearchDuration": "750ms"}
    )
    assert (limits.for_action("preempt"), limits.for_action("reclaim")) == (3.0, 30.0)
    assert limits.max_job == 0.75


def test_a_generator_s_own_key_wins_and_the_built_in_generators_keep_their_defaults() -> None:
    """KAI's scheduler fills in the defaults of NodeLocalGreedy and MultiNodeGang when it loads its configuration
    (`DefaultScenarioSearchBudgets`), so a configured `default` covers only the other generators."""
    limits = budget.SearchBudgets.parse({"maxGeneratorSearchDuration": {"default": "400ms", "NodeLocalGreedy": "75ms"}})
    assert limits.for_generator("NodeLocalGreedy") == 0.075
    assert limits.for_generator("MultiNodeGang") == 120.0
    assert limits.for_generator("another") == 0.4


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"maxActionSearchDuration": {"reclaim": "-1s"}}, id="action"),
        pytest.param({"maxJobSearchDuration": "-1s"}, id="job"),
        pytest.param({"minJobSearchDuration": "-1s"}, id="min job"),
        pytest.param({"maxGeneratorSearchDuration": {"NodeLocalGreedy": -1}}, id="generator"),
    ],
)
def test_a_negative_budget_is_refused(raw: JSON) -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        budget.SearchBudgets.parse(raw)


@pytest.mark.parametrize(
    "raw, message",
    [
        pytest.param(
            {"minJobSearchDuration": "250ms", "maxJobSearchDuration": "250ms"},
            r"minJobSearchDuration: must be less than maxJobSearchDuration \(0\.25s >= 0\.25s\)",
            id="equal",
        ),
        pytest.param(
            {"minJobSearchDuration": "251ms", "maxJobSearchDuration": "250ms"},
            "must be less than maxJobSearchDuration",
            id="above",
        ),
        pytest.param({"minJobSearchDuration": "5m"}, r"\(5m >= 4m\)", id="above the default maximum"),
    ],
)
def test_a_minimum_job_budget_not_below_the_maximum_is_refused(raw: JSON, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        budget.SearchBudgets.parse(raw)


def test_a_minimum_not_below_the_maximum_fails_when_the_configuration_loads() -> None:
    with pytest.raises(ConfigError, match=r"^config scenarioSearchBudgets\.minJobSearchDuration: must be less than"):
        v.load_config_for({"scenarioSearchBudgets": {"minJobSearchDuration": "4m"}})


def test_a_minimum_under_an_unlimited_job_budget_is_accepted() -> None:
    limits = budget.SearchBudgets.parse({"minJobSearchDuration": "10m", "maxJobSearchDuration": "0s"})
    assert (limits.max_job, limits.min_job) == (0.0, 600.0)


@pytest.mark.parametrize(
    "raw, message",
    [
        pytest.param({"maxJobSearchDuration": "soon"}, "maxJobSearchDuration: invalid duration", id="a bad duration"),
        pytest.param({"maxActionBudget": "1m"}, "unknown field", id="an unknown key"),
        pytest.param({"maxActionSearchDuration": "1m"}, "expected a mapping of name to duration", id="not a map"),
    ],
)
def test_bad_budgets_are_configuration_errors(raw: JSON, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        budget.SearchBudgets.parse(raw)


# --- 0 is no limit --------------------------------------------------------------------------------------------


def test_an_action_budget_of_0_never_runs_out_and_its_jobs_get_the_job_budget() -> None:
    action, timer = action_budget({"maxActionSearchDuration": {"reclaim": "0s"}, "maxJobSearchDuration": "100ms"})
    timer.now = 1e9
    assert not action.exhausted()
    job = action.next_job()
    assert not job.exhausted() and not job.reduced
    assert job.deadline.remaining() == pytest.approx(0.1)


def test_a_job_budget_of_0_is_what_the_action_has_left() -> None:
    action, timer = action_budget({"maxActionSearchDuration": {"reclaim": "500ms"}, "maxJobSearchDuration": "0s"})
    timer.now = 0.1
    job = action.next_job()
    assert job.deadline.remaining() == pytest.approx(0.4) and not job.reduced
    timer.now = 0.35
    assert job.deadline.remaining() == pytest.approx(0.15)


def test_with_no_action_and_no_job_limit_a_job_is_bounded_by_its_generators_only() -> None:
    action, timer = action_budget({"maxActionSearchDuration": {"default": 0}, "maxJobSearchDuration": 0})
    job = action.next_job()
    assert job.deadline.remaining() == math.inf
    assert job.generator("NodeLocalGreedy").remaining() == 30.0
    timer.now = 1e9
    assert not job.exhausted()


def test_a_generator_budget_of_0_is_what_the_job_has_left() -> None:
    action, timer = action_budget(
        {
            "maxActionSearchDuration": {"reclaim": "1s"},
            "maxJobSearchDuration": "1s",
            "maxGeneratorSearchDuration": {"default": "200ms", "NodeLocalGreedy": "50ms", "MultiNodeGang": "0s"},
        }
    )
    job = action.next_job()
    greedy = job.generator("NodeLocalGreedy")
    timer.now = 0.06
    assert greedy.exhausted()
    gang = job.generator("MultiNodeGang")
    timer.now = 0.56
    assert not gang.exhausted() and gang.remaining() == pytest.approx(0.44)


# --- a job's budget -------------------------------------------------------------------------------------------


def test_a_job_gets_the_job_budget_when_the_action_has_more() -> None:
    action, _ = action_budget({})
    job = action.next_job()
    assert job.deadline.remaining() == 240.0 and not job.reduced


def test_a_job_gets_what_the_action_has_left_when_less_than_the_job_budget() -> None:
    action, timer = action_budget(
        {"maxActionSearchDuration": {"reclaim": "1s"}, "maxJobSearchDuration": "500ms", "minJobSearchDuration": "50ms"}
    )
    timer.now = 0.75
    job = action.next_job()
    assert job.reduced and job.deadline.remaining() == pytest.approx(0.25)


def test_a_job_gets_at_least_the_minimum_when_the_action_has_less_left() -> None:
    action, timer = action_budget(
        {"maxActionSearchDuration": {"reclaim": "100ms"}, "maxJobSearchDuration": "1s", "minJobSearchDuration": "50ms"}
    )
    timer.now = 0.075
    job = action.next_job()
    assert job.reduced and job.deadline.remaining() == pytest.approx(0.05)


def test_a_job_gets_the_minimum_even_after_the_action_s_deadline_and_runs_it_out() -> None:
    action, timer = action_budget(
        {"maxActionSearchDuration": {"reclaim": "100ms"}, "maxJobSearchDuration": "1s", "minJobSearchDuration": "50ms"}
    )
    timer.now = 0.1
    job = action.next_job()
    assert action.exhausted() and job.reduced
    assert job.seconds == pytest.approx(0.05) and job.deadline.remaining() == pytest.approx(0.05)
    timer.now = 0.14
    assert not job.exhausted()  # the action's deadline does not cut a minimum short
    timer.now = 0.16
    assert job.exhausted()


def test_with_no_minimum_a_job_after_the_action_s_deadline_has_nothing() -> None:
    action, timer = action_budget({"maxActionSearchDuration": {"reclaim": "100ms"}})
    timer.now = 0.1
    job = action.next_job()
    assert action.exhausted() and job.exhausted() and job.reduced
    assert job.seconds == 0.0 and job.deadline.remaining() == 0.0


def test_generators_get_their_limit_within_what_the_job_has_left() -> None:
    action, timer = action_budget({"minJobSearchDuration": "60s"})
    job = action.next_job()
    assert job.generator("NodeLocalGreedy").remaining() == 30.0
    assert job.generator("MultiNodeGang").remaining() == 120.0
    timer.now = 230.0
    assert job.generator("MultiNodeGang").remaining() == 10.0
    assert job.generator("another").remaining() == 10.0
