"""Render a `kai schedule` Outcome as tables (rich), JSON or YAML."""

from __future__ import annotations

import orjson
import yaml
from rich.console import Console
from rich.table import Table

from kai_scheduler.cluster.resources import describe
from kai_scheduler.sim.outcome import Outcome

_CHANGED = {"Binding": "green", "Pipelined": "yellow", "Releasing": "red", "Deleted": "red", "Running": "green"}


def as_json(outcome: Outcome) -> str:
    return orjson.dumps(outcome.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def as_yaml(outcome: Outcome) -> str:
    return str(yaml.safe_dump(outcome.to_json(), sort_keys=True))


def as_tables(outcome: Outcome, console: Console) -> None:
    console.print(f"[bold]{outcome.scenario}[/bold]")
    console.print(_tasks(outcome))
    console.print(_queues(outcome))
    if outcome.moves:
        console.print(_moves(outcome))
    if outcome.gpus:
        console.print(_shared_gpus(outcome))
    if outcome.unplaced:
        console.print("[bold]Not placed[/bold]")
        for job, reasons in outcome.unplaced.items():
            console.print(f"  {job}: " + "; ".join(reasons), highlight=False)
    for problem in outcome.problems:
        console.print(f"[yellow]skipped[/yellow] {problem}", highlight=False)
    cycles = ", ".join(f"cycle {c.cycle}: {c.binds} bound, {c.evictions} evicted, {c.pipelines} pipelined "
                       f"({c.seconds * 1000:.0f} ms)" for c in outcome.cycles)
    console.print(cycles, highlight=False)


def _tasks(outcome: Outcome) -> Table:
    table = Table(title="Tasks", title_justify="left")
    for column in ("task", "job", "queue", "before", "after", "node"):
        table.add_column(column)
    for t in outcome.tasks:
        after = t.after if t.after == t.before else f"[{_CHANGED.get(t.after, 'bold')}]{t.after}[/]"
        table.add_row(t.name, t.job, t.queue, t.before, after, t.moved or t.node or "-")
    return table


def _queues(outcome: Outcome) -> Table:
    table = Table(title="Queues: deserved / fair share / allocated / requested  (GPUs, CPU cores, memory GB)",
                  title_justify="left")
    for column in ("queue", "parent", "gpu", "cpu", "memory"):
        table.add_column(column)
    for q in outcome.queues:
        cells = []
        for resource in ("gpu", "cpu", "memory"):
            values = [q.deserved[resource], q.fair_share[resource], q.allocated[resource], q.requested[resource]]
            cells.append(" / ".join(_amount(resource, v) for v in values))
        table.add_row(q.name, q.parent or "-", *cells)
    return table


def _amount(resource: str, value: float) -> str:
    if value < 0:
        return "∞"
    if resource == "cpu":
        return describe("cpu", value).replace(" CPU", "")
    if resource == "memory":
        return f"{value / 1000:.4g}G" if value >= 1000 else f"{value:.4g}M"
    return f"{value:g}"


def _moves(outcome: Outcome) -> Table:
    table = Table(title="Evictions and moves", title_justify="left")
    for column in ("cycle", "task", "from", "to", "action", "for job", "why"):
        table.add_column(column)
    for m in outcome.moves:
        table.add_row(str(m.cycle), m.task, m.node, m.to_node or "(evicted)", m.action, m.preemptor or "-", m.message)
    return table


def _shared_gpus(outcome: Outcome) -> Table:
    """Per node, each shared physical GPU (device index once reserved, else its group) and who shares it."""
    table = Table(title="Shared GPUs", title_justify="left")
    for column in ("node", "gpu", "memory used", "shared by"):
        table.add_column(column)
    for g in outcome.gpus:
        gpu = g.index if g.index else f"group {g.group[:8]}"
        sharers = ", ".join(f"{name} ({portion:g})" for name, portion in g.sharers.items())
        table.add_row(g.node, gpu, f"{g.used_mib:g} / {g.total_mib:g} MiB", sharers)
    return table
