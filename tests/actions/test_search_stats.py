"""What the victim search counts (framework.search_stats, read by the scheduler's metrics), with KAI's meaning:
scenarios emitted, simulated, duplicated, rejected by the validator, filtered before simulating; each job's
search result and whether its budget was cut; the action budget running out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kai_scheduler.actions import reclaim
from kai_scheduler.actions.common import budget, scenario, solver
from kai_scheduler.framework import points
from kai_scheduler.framework.search_stats import SearchStats
from kai_scheduler.framework.statement import Eviction
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
GREEDY, GANG = scenario.NODE_LOCAL_GREEDY, scenario.MULTI_NODE_GANG


def team_b_on_one_node(*, reclaimer_gpus: int = 1, reclaimers: int = 1) -> list[JSON]:
    """team-a deserves 4 of 8 GPUs and has `reclaimers` one-pod jobs; team-b runs 8 single-GPU jobs on n1."""
    objects = [b.node("n1", gpus=8), v.queue("team-a", gpu_quota=4), v.queue("team-b", gpu_quota=4)]
    for i in range(8):
        objects += v.job(f"b{i}", queue="team-b", node="n1", created=b.NOW - 3600 + i)
    for i in range(reclaimers):
        objects += v.job("train" if i == 0 else f"train{i}", queue="team-a", gpus=reclaimer_gpus, created=b.NOW - i)
    return objects


def reclaimed(objects: list[JSON], timer: budget.Timer | None = None, budgets: JSON | None = None) -> SearchStats:
    """The search statistics of one cycle that only reclaims (with `budgets` on `timer`)."""
    config: JSON = {"actions": "allocate"}
    if budgets is not None:
        config["scenarioSearchBudgets"] = budgets
    cluster = v.cluster(objects, config=config)
    cluster.scheduler.actions.append(reclaim.Reclaim(timer=timer))
    return cluster.cycle().search


def readings(*values: float) -> Iterator[float]:
    """A timer reading `values` in turn, then the last one for ever."""
    yield from values
    while True:
        yield values[-1]


def test_a_first_scenario_that_works_is_emitted_simulated_and_solved() -> None:
    stats = reclaimed(team_b_on_one_node())
    assert stats.tried == {"reclaim": 1}
    assert stats.simulated == {"reclaim": 1}
    assert stats.filtered == {}
    assert stats.scenarios == {("reclaim", GREEDY, "emitted"): 1, ("reclaim", GREEDY, "simulated"): 1}
    assert [(a, g, r) for a, g, r, _ in stats.attempts] == [("reclaim", GREEDY, "solved")]
    assert stats.jobs == {("reclaim", "solved", False): 1}
    assert stats.budget_exhausted == {}


def test_victims_too_small_for_the_demand_are_filtered_before_any_simulation() -> None:
    """The reclaimer needs 2 GPUs: the first victim (1 GPU) alone fails the GPU fit; with the second it passes."""
    stats = reclaimed(team_b_on_one_node(reclaimer_gpus=2))
    assert stats.filtered == {"reclaim": 1}
    assert stats.simulated == {"reclaim": 1}
    assert stats.jobs == {("reclaim", "solved", False): 1}


def test_attempts_are_timed_on_the_budget_timer_from_the_ask_to_the_result() -> None:
    ticks = iter(range(1000))
    stats = reclaimed(team_b_on_one_node(), timer=lambda: float(next(ticks)) / 1000)
    [(_, _, _, seconds)] = stats.attempts
    assert 0 < seconds < 0.1  # a few readings of a timer that moves 1 ms a reading


def test_a_rejected_scenario_offered_again_is_a_duplicate_and_the_generators_end_exhausted() -> None:
    """One victim on one node: NodeLocalGreedy offers it and the validator refuses; MultiNodeGang offers the same
    victims (a duplicate, not simulated again); then the victims run out."""
    objects = [b.node("n1", gpus=1), v.queue("q"), *v.job("low", queue="q", node="n1"), *v.job("high", queue="q")]
    ssn = b.session(b.snapshot([*v.priority_classes(), *objects]))
    job = next(j for j in ssn.snapshot.jobs.values() if j.name == "high")
    low = next(j for j in ssn.snapshot.jobs.values() if j.name == "low")
    search = solver.VictimSearch(
        "preempt", [low], lambda victim: Eviction("preempt", "", ""), lambda *_: points.Reject("test", "No", "no")
    )
    job_budget = budget.ActionBudget(budget.SearchBudgets(), "preempt").next_job()
    solution = solver.solve(ssn, ssn.statement(), job, search, job_budget)
    assert solution.result is solver.Result.UNSOLVED
    assert ssn.search.scenarios == {
        ("preempt", GREEDY, "emitted"): 1,
        ("preempt", GREEDY, "simulated"): 1,
        ("preempt", GREEDY, "validator_rejected"): 1,
        ("preempt", GANG, "emitted"): 1,
        ("preempt", GANG, "duplicate"): 1,
    }
    assert [(g, r) for _, g, r, _ in ssn.search.attempts] == [
        (GREEDY, "validator_rejected"),
        (GANG, "duplicate"),
        (GREEDY, "generators_exhausted"),
        (GANG, "generators_exhausted"),
    ]


def test_an_action_budget_spent_during_a_search_is_counted_once() -> None:
    """The action opens at 0 s with 300 s; the job's budget is taken at 0 s; then the timer reads 1000 s."""
    timer = readings(0.0, 0.0, 1000.0)
    stats = reclaimed(team_b_on_one_node(), timer=lambda: next(timer))
    assert stats.jobs == {("reclaim", "deadline_exhausted", False): 1}
    assert stats.budget_exhausted == {"reclaim": 1}


def test_a_job_budget_cut_to_what_the_action_has_left_is_a_reduced_budget() -> None:
    """The job's budget is taken at 100 s: 200 s left of the action's 300, under the 240 s a job may have."""
    timer = readings(0.0, 100.0)
    stats = reclaimed(team_b_on_one_node(), timer=lambda: next(timer))
    assert stats.jobs == {("reclaim", "solved", True): 1}


def test_a_job_when_no_budget_is_left_is_not_attempted() -> None:
    timer = readings(0.0, 400.0)
    stats = reclaimed(team_b_on_one_node(), timer=lambda: next(timer))
    assert stats.tried == {"reclaim": 1}
    assert stats.jobs == {("reclaim", "not_attempted", False): 1}
    assert stats.simulated == {}


def test_a_job_given_no_time_ends_the_action() -> None:
    """The action's 300 s are gone when the first job's budget is taken: not attempted, and the second job is not
    even considered (KAI's reclaim returns)."""
    timer = readings(0.0, 400.0)
    stats = reclaimed(team_b_on_one_node(reclaimers=2), timer=lambda: next(timer))
    assert stats.tried == {"reclaim": 1}
    assert stats.jobs == {("reclaim", "not_attempted", False): 1}


def test_a_job_that_runs_out_of_its_own_budget_ends_the_action() -> None:
    """The job's 240 s run out at 250 s while the action still has 50 s: deadline_exhausted, the action ends
    (KAI stops on any deadline_exhausted), and it is no exhaustion of the action's budget."""
    timer = readings(0.0, 0.0, 250.0)
    stats = reclaimed(team_b_on_one_node(reclaimers=2), timer=lambda: next(timer))
    assert stats.tried == {"reclaim": 1}
    assert stats.jobs == {("reclaim", "deadline_exhausted", False): 1}
    assert stats.budget_exhausted == {}


def test_an_action_budget_of_0_is_no_limit() -> None:
    """However late the timer reads, both jobs are searched and solved within the jobs' own 240 s."""
    timer = readings(0.0, 1e9)
    budgets = {"maxActionSearchDuration": {"reclaim": "0s"}}
    stats = reclaimed(team_b_on_one_node(reclaimers=2), timer=lambda: next(timer), budgets=budgets)
    assert stats.jobs == {("reclaim", "solved", False): 2}


def test_the_minimum_job_budget_searches_past_the_action_s_deadline() -> None:
    """The action has 1 s and the timer reads 100 s from the first job on: each job still gets its 60 s minimum,
    and one that ends in time lets the next one search (a reduced budget: the action had less than 240 s)."""
    timer = readings(0.0, 100.0)
    budgets = {"maxActionSearchDuration": {"reclaim": "1s"}, "minJobSearchDuration": "1m"}
    stats = reclaimed(team_b_on_one_node(reclaimers=2), timer=lambda: next(timer), budgets=budgets)
    assert stats.tried == {"reclaim": 2}
    assert stats.jobs == {("reclaim", "solved", True): 2}
    assert stats.budget_exhausted == {}
