"""What the victim actions' scenario search did in one session, counted as KAI's scheduler counts it in its
solvers (`pkg/scheduler/actions/common/solvers`): the actions write here through the session, the scheduler
hands it on in the cycle's result, and its metrics read it (actions do not reach the metrics themselves).

- `tried[action]`: preemptors the action searched victims for (KAI `podgroups_acted_on_by_action`);
- `simulated[action]`, `filtered[action]`: scenarios simulated, and accumulated victim sets the cheap filters
  rejected before any simulation (KAI `scenarios_simulation_by_action`, `scenarios_filtered_by_action`);
- `jobs[(action, result, reduced_budget)]`: preemptors whose search ended so; `result` is one of `JOB_RESULTS`,
  `reduced_budget` whether the job's budget was cut to what the action had left (`scenario_search_jobs_total`);
- `budget_exhausted[action]`: job searches that ran out of time once the action's budget had run out too
  (`scenario_search_action_budget_exhausted_total`);
- `scenarios[(action, generator, state)]`: scenarios by `SCENARIO_STATES` (`scenario_search_scenarios_total`);
- `attempts`: (action, generator, result, seconds) of each scenario a generator gave, from asking for it to
  knowing its fate, and of each generator's last, empty, ask (`scenario_search_duration_seconds`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

SOLVED = "solved"
DEADLINE_EXHAUSTED = "deadline_exhausted"
GENERATORS_EXHAUSTED = "generators_exhausted"
NOT_ATTEMPTED = "not_attempted"
JOB_RESULTS = (SOLVED, DEADLINE_EXHAUSTED, GENERATORS_EXHAUSTED, "no_generator", NOT_ATTEMPTED)

EMITTED = "emitted"
SIMULATED = "simulated"
DUPLICATE = "duplicate"
VALIDATOR_REJECTED = "validator_rejected"
SCENARIO_STATES = (EMITTED, SIMULATED, DUPLICATE, VALIDATOR_REJECTED)
UNSOLVED = "unsolved"  # an attempt's result: simulated and did not fit (besides solved, duplicate, rejected)


@dataclass(slots=True)
class SearchStats:
    tried: Counter[str] = field(default_factory=Counter)
    simulated: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)
    jobs: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    budget_exhausted: Counter[str] = field(default_factory=Counter)
    scenarios: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    attempts: list[tuple[str, str, str, float]] = field(default_factory=list)

    def job(self, action: str, result: str, *, reduced_budget: bool) -> None:
        self.jobs[(action, result, reduced_budget)] += 1

    def scenario(self, action: str, generator: str, state: str) -> None:
        self.scenarios[(action, generator, state)] += 1

    def attempt(self, action: str, generator: str, result: str, seconds: float) -> None:
        self.attempts.append((action, generator, result, seconds))

    def add(self, other: SearchStats) -> None:
        """Add another session's counts (the shards of one simulated cycle)."""
        self.tried.update(other.tried)
        self.simulated.update(other.simulated)
        self.filtered.update(other.filtered)
        self.jobs.update(other.jobs)
        self.budget_exhausted.update(other.budget_exhausted)
        self.scenarios.update(other.scenarios)
        self.attempts.extend(other.attempts)
