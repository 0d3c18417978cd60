"""Render a `kai schedule` Outcome as tables (rich), JSON or YAML.

Tables are laid out for 80 columns (a narrow terminal, a log, a pipe): long free text (why a pod was evicted,
why a job was not placed) goes on its own indented lines under the row it explains instead of into a column,
and namespaces are shown only when the scenario has more than one.
"""

from __future__ import annotations

import re
import textwrap

import orjson
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kai_scheduler.cluster.resources import describe
from kai_scheduler.sim.outcome import Move, Outcome

__all__ = ["Outcome", "as_json", "as_tables", "as_yaml", "console"]

_CHANGED = {"Binding": "green", "Pipelined": "yellow", "Releasing": "red", "Deleted": "red", "Running": "green"}
_RESOURCES = (("gpu", "GPU"), ("cpu", "CPU"), ("memory", "memory"))
_INDENT = 4
_TRAILING_TAG = re.compile(r" \[[^\[\]]*\]$")
_GLUE = "\x1f"  # stands for a space that must not break a line while wrapping; never in printed text


class PipeConsole(Console):
    """A Console that leaves a broken pipe to the command (one exit status for every output form)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def console() -> Console:
    """Standard output; 80 columns when it is not a terminal (rich's default), without colour codes there."""
    return PipeConsole(highlight=False)


def as_json(outcome: Outcome) -> str:
    return orjson.dumps(outcome.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def as_yaml(outcome: Outcome) -> str:
    return str(yaml.safe_dump(outcome.to_json(), sort_keys=True))


class Names:
    """How to print a `namespace/name` key: the name alone when every task is in one namespace."""

    def __init__(self, outcome: Outcome) -> None:
        self.qualified = len({t.namespace for t in outcome.tasks}) > 1

    def __call__(self, key: str) -> str:
        if self.qualified or "/" not in key:
            return key
        return key.partition("/")[2]


def as_tables(outcome: Outcome, out: Console) -> None:
    names = Names(outcome)
    out.print(f"[bold]{outcome.scenario}[/bold]")
    _titled(out, "Tasks", _tasks(outcome, names))
    _titled(out, "Queues (GPU devices, CPU cores, memory GB; ∞ = unlimited)", _queues(outcome))
    if outcome.moves:
        _lines(out, _moves(outcome, names, out.width))
    if outcome.gpus:
        _titled(
            out,
            "Shared GPUs (MiB per GPU as KAI counts them: the node's nvidia.com/gpu.memory label "
            "floored to a multiple of 100, so 40960 is 40900)",
            _shared_gpus(outcome, names),
        )
    if any(t.mig for t in outcome.tasks):
        _titled(out, "MIG instances (profile/index on the node)", _mig_instances(outcome, names))
    if outcome.claims:
        _titled(out, "DRA claims (the devices each claim got)", _claims(outcome, names))
    if outcome.unplaced:
        _lines(out, _unplaced(outcome, names, out.width))
    for problem in outcome.problems:
        out.print(Text.assemble(("skipped ", "yellow"), problem))
    for c in outcome.cycles:
        out.print(
            f"cycle {c.cycle}: {c.binds} bound, {c.evictions} evicted, {c.pipelines} pipelined "
            f"({c.seconds * 1000:.0f} ms)"
        )


def _titled(out: Console, title: str, table: Table) -> None:
    """A table under its title; the title is a line of its own (a table's caption is padded to its width)."""
    out.print(Text(title, style="italic"), soft_wrap=True)
    out.print(table)


def _lines(out: Console, lines: list[Text]) -> None:
    for line in lines:
        out.print(line, soft_wrap=True)


def _tasks(outcome: Outcome, names: Names) -> Table:
    table = Table()
    sharded = any(t.shard for t in outcome.tasks)
    for column in ("task", "job", "queue", "before", "after", "node", *(("shard",) if sharded else ())):
        table.add_column(column, overflow="fold")
    for t in outcome.tasks:
        after = t.after if t.after == t.before else f"[{_CHANGED.get(t.after, 'bold')}]{t.after}[/]"
        row = [names(t.key), names(t.job_key) or "-", t.queue, t.before, after, t.moved or t.node or "-"]
        table.add_row(*row, *((t.shard or "-",) if sharded else ()))
    return table


def _queues(outcome: Outcome) -> Table:
    """One row per queue and resource; GPUs in devices, CPU in cores, memory in GB."""
    table = Table()
    table.add_column("queue", overflow="fold")
    table.add_column("parent", overflow="fold")
    table.add_column("resource")
    for column in ("deserved", "fair share", "allocated", "requested"):
        table.add_column(column, justify="right")
    for q in outcome.queues:
        for i, (resource, label) in enumerate(_RESOURCES):
            values = (q.deserved[resource], q.fair_share[resource], q.allocated[resource], q.requested[resource])
            table.add_row(
                q.name if i == 0 else "",
                (q.parent or "-") if i == 0 else "",
                label,
                *(_amount(resource, v) for v in values),
                end_section=i == len(_RESOURCES) - 1,
            )
    return table


def _amount(resource: str, value: float) -> str:
    if value < 0:
        return "∞"
    if resource == "cpu":
        return describe("cpu", value).replace(" CPU", "")
    if resource == "memory":
        return f"{value / 1000:.4g}G" if value >= 1000 else f"{value:.4g}M"
    return f"{value:g}"


def _moves(outcome: Outcome, names: Names, width: int) -> list[Text]:
    """Each eviction or move on one line (cycle, action, task, from → to, for whom), its reason below it."""
    lines = [Text("Evictions and moves", style="italic")]
    for m in outcome.moves:
        lines.append(_move_line(m, names))
        if m.message:
            lines += _wrapped(m.message, _INDENT + 2, width)
    return lines


def _move_line(m: Move, names: Names) -> Text:
    text = Text(f"  cycle {m.cycle}  ")
    text.append(m.action or "evict", style="red")
    text.append(f"  {names(m.task)}  {m.node} → {m.to_node or '(evicted)'}")
    if m.preemptor:
        text.append(f"  for {names(m.preemptor)}")
    return text


def _unplaced(outcome: Outcome, names: Names, width: int) -> list[Text]:
    lines = [Text("Not placed", style="italic")]
    for job, reasons in outcome.unplaced.items():
        lines.append(Text("  " + names(job), style="bold"))
        for reason in reasons:
            lines += _wrapped(reason, _INDENT + 2, width)
    return lines


def _wrapped(text: str, indent: int, width: int) -> list[Text]:
    """`text` wrapped at word boundaries to `width`, every line indented (no trailing padding).

    A trailing bracketed tag ("[rejected by predicates]" of --explain) is kept whole and with the word before
    it, so it never stands on a line of its own."""
    pad = " " * indent
    tag = _TRAILING_TAG.search(text)
    if tag:
        text = text[: tag.start()] + tag.group().replace(" ", _GLUE)
    lines = textwrap.wrap(
        text, max(width, indent + 20), initial_indent=pad, subsequent_indent=pad, break_on_hyphens=False
    )
    return [Text(line.replace(_GLUE, " ")) for line in lines]


def _claims(outcome: Outcome, names: Names) -> Table:
    table = Table()
    for column in ("task", "claim", "devices"):
        table.add_column(column, overflow="fold")
    for task, claims in outcome.claims.items():
        for claim, devices in claims.items():
            table.add_row(names(task), claim, devices)
    return table


def _shared_gpus(outcome: Outcome, names: Names) -> Table:
    """Per node, each shared physical GPU (device index once reserved, else its group) and who shares it."""
    table = Table()
    for column in ("node", "gpu", "memory used", "shared by"):
        table.add_column(column, overflow="fold")
    for g in outcome.gpus:
        gpu = g.index if g.index else f"group {g.group[:8]}"
        sharers = ", ".join(f"{names(name)} ({portion:g})" for name, portion in g.sharers.items())
        table.add_row(g.node, gpu, f"{g.used_mib:g} / {g.total_mib:g} MiB", sharers)
    return table


def _mig_instances(outcome: Outcome, names: Names) -> Table:
    """Per node, each MIG instance in use and the task holding it."""
    table = Table()
    for column in ("node", "instance", "task", "status"):
        table.add_column(column, overflow="fold")
    rows = [(t.node, instance, names(t.key), t.after) for t in outcome.tasks for instance in t.mig]
    for row in sorted(rows, key=lambda r: (r[0], r[1].rpartition("/")[0], int(r[1].rpartition("/")[2]), r[2])):
        table.add_row(*row)
    return table
