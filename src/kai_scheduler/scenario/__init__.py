"""Scenario files and Kubernetes manifests → the Kubernetes objects a cluster would hold (SCENARIOS.md).

`load(path)` / `loads(text, source)` give a `Scenario`: `objects` (Kubernetes JSON for a store), `jobs`
(arrival and run time per job, for the simulator), `expect` (for `kai schedule --check`), `now`, `cycles`
and the raw `config`. Every bad input raises `ObjectError` (`ScenarioError` for whole-file problems) with a
one-line message naming the file and line, the entry and the field.

Imports only `kai_scheduler.api`.
"""

from kai_scheduler.scenario.load import load, loads
from kai_scheduler.scenario.model import (
    DEFAULT_NOW,
    TASK_STATUSES,
    Expectations,
    JobMeta,
    Scenario,
    StatusExpectation,
)
from kai_scheduler.scenario.source import ScenarioError

__all__ = [
    "DEFAULT_NOW",
    "TASK_STATUSES",
    "Expectations",
    "JobMeta",
    "Scenario",
    "ScenarioError",
    "StatusExpectation",
    "load",
    "loads",
]
