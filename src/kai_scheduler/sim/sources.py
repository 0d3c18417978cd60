"""Where a replay's workload comes from: a scenario file (with optional `generators:`) or the Alibaba trace.

The scenario loader does not know `generators:` (it is the simulator's), so a file that has one is parsed
here with the loader's own reader (line numbers kept), the generated jobs are appended to its `jobs:`, and
the result goes through the loader's builder like any scenario: one set of checks, one set of objects.
"""

from __future__ import annotations

from pathlib import Path

from kai_scheduler import scenario as scenarios
from kai_scheduler.scenario import build
from kai_scheduler.scenario.entry import Entry, Where
from kai_scheduler.scenario.load import read_text
from kai_scheduler.scenario.source import ScenarioError, parse_documents
from kai_scheduler.sim import generators

GENERATORS_KEY = "generators"


def load(path: str | Path, *, seed: int = 0) -> scenarios.Scenario:
    """Load a scenario or manifest file; a `generators:` block is expanded with `seed`."""
    return loads(read_text(path), str(path), seed=seed)


def loads(text: str, source: str = "<string>", *, seed: int = 0) -> scenarios.Scenario:
    docs, lines = parse_documents(text, source)
    if len(docs) != 1 or not isinstance(docs[0], dict) or GENERATORS_KEY not in docs[0]:
        return scenarios.loads(text, source)
    doc = docs[0]
    where = Where(source, lines)
    generated = generators.expand(where, doc[GENERATORS_KEY], seed)
    del doc[GENERATORS_KEY]  # in place: the mapping keeps its identity, so its line numbers
    jobs = doc.setdefault("jobs", [])
    if not isinstance(jobs, list):
        raise Entry(where, doc, "scenario", "top-level").error("jobs", f"expected a list, got {jobs!r}")
    jobs.extend(generated)
    if not build.is_scenario(doc):
        raise ScenarioError(source, "a scenario with generators needs nodes and queues")
    return build.build(where, doc)
