"""`kai schedule --check`: compare an Outcome with a scenario's `expect:` block, one line per mismatch."""

from __future__ import annotations

from kai_scheduler.scenario.model import Expectations, StatusExpectation
from kai_scheduler.sim.outcome import Outcome

# An expected figure (a scenario's `expect:`) matches a computed one within this: figures are written rounded.
_MATCH = 1e-6


def check(outcome: Outcome, expect: Expectations) -> list[str]:
    """Every expectation that does not hold, in the order the block lists them."""
    problems: list[str] = []
    tasks = {t.key: t for t in outcome.tasks}
    for key, want in expect.tasks.items():
        task = tasks.get(key)
        if task is None:
            problems.append(f"task {key}: no such task")
            continue
        problems += _status(f"task {key}", want, task.after, task.node)
    for job, want in expect.jobs.items():
        members = [t for t in outcome.tasks if t.job_key == job]
        if not members:
            problems.append(f"job {job}: no such job")
        for t in members:
            problems += _status(f"job {job} task {t.name}", want, t.after, t.node)
    for node, wants in expect.nodes.items():
        have = outcome.nodes.get(node)
        if have is None:
            problems.append(f"node {node}: no such node")
            continue
        for key, value in wants.items():
            if abs(have.get(key, 0.0) - value) > _MATCH:
                problems.append(f"node {node} {key}: expected {value:g}, got {have.get(key, 0.0):g}")
    queues = {q.name: q for q in outcome.queues}
    for name, sections in expect.queues.items():
        queue = queues.get(name)
        if queue is None:
            problems.append(f"queue {name}: no such queue")
            continue
        table = {"fairShare": queue.fair_share, "allocated": queue.allocated, "deserved": queue.deserved}
        for section, amounts in sections.items():
            for resource, value in amounts.items():
                got = table[section].get(resource, 0.0)
                if abs(got - value) > _MATCH:
                    problems.append(f"queue {name} {section}.{resource}: expected {value:g}, got {got:g}")
    for label, bound, counts in (
        ("binds", expect.max_binds, [c.binds for c in outcome.cycles]),
        ("evictions", expect.max_evictions, [c.evictions for c in outcome.cycles]),
        ("pipelines", expect.max_pipelines, [c.pipelines for c in outcome.cycles]),
    ):
        if bound is None:
            continue
        for i, count in enumerate(counts, start=1):
            if count > bound:
                problems.append(f"cycle {i}: {count} {label}, expected at most {bound}")
    return problems


def count(expect: Expectations) -> int:
    """How many expectations the block holds: one per task, job, node or queue figure, and per bound."""
    figures = sum(len(v) for v in expect.nodes.values()) + sum(
        len(amounts) for sections in expect.queues.values() for amounts in sections.values()
    )
    bounds = sum(b is not None for b in (expect.max_binds, expect.max_evictions, expect.max_pipelines))
    return len(expect.tasks) + len(expect.jobs) + figures + bounds


def _status(what: str, want: StatusExpectation, status: str, node: str) -> list[str]:
    out = []
    if want.status is not None and want.status != status:
        out.append(f"{what}: expected status {want.status}, got {status}")
    if want.node is not None and want.node != node:
        out.append(f"{what}: expected node {want.node}, got {node or 'none'}")
    return out
