"""`kai simulate`: replay a scenario, its generators, or the Alibaba trace over virtual time; report.

Argument handling only: loading is `sim.sources` / `sim.trace`, the replay `sim.replay`, the files
`sim.report`. The summary goes to standard output (a table, or one JSON object with `--output json`); the
progress bar and the report's path go to standard error.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kai_scheduler.api.duration import DurationError, describe_duration, parse_duration
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments, file_flags, saturate

if TYPE_CHECKING:
    from rich.table import Table

    from kai_scheduler.scenario import Scenario
    from kai_scheduler.scheduler.config_file import ConfigSource
    from kai_scheduler.sim import replay

DEFAULT_OUT = "sim-report"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "simulate",
        help="replay a workload over virtual time and report allocation, fairness and waits",
        description="Run the real scheduler and binder on the embedded cluster with a virtual clock: jobs "
        "arrive at submitAt, run their duration once all their pods run, evicted pods come back "
        "Pending. Writes an HTML report with the series as CSV/JSON. With --output json the summary is one JSON "
        "object (with --compare, one per configuration).",
    )
    p.add_argument("file", nargs="?", help="scenario file (docs/scenario-reference.md), may hold `generators:`")
    p.add_argument("--trace", metavar="PODS_CSV", help="Alibaba openb pod list (instead of FILE)")
    p.add_argument("--nodes", metavar="NODES_CSV", help="Alibaba openb node list (with --trace)")
    p.add_argument("--time-scale", type=float, default=1.0, help="multiply trace arrivals and run times")
    p.add_argument(
        "--sample",
        type=float,
        default=None,
        help="replay this many trace tasks (below 1: this fraction) that arrived in a row, from a "
        "start drawn with --seed",
    )
    p.add_argument(
        "--schedule-period",
        type=_seconds,
        default=None,
        help="virtual time between cycles (default: the configuration's, 1s)",
    )
    p.add_argument("--until", type=_seconds, default=None, help="stop at this virtual time (e.g. 2h)")
    p.add_argument("--seed", type=int, default=0, help="seed of generators and trace sampling (default 0)")
    arguments.add(
        p,
        file_flags.CONFIG,
        None,
        shown="FILE's `config:`, else KAI's defaults; with --saturate, KAI's plugins and the allocate action alone",
    )
    p.add_argument(
        "--compare", nargs=2, metavar=("A", "B"), help="replay twice, with configuration files A and B, into one report"
    )
    arguments.add(p, file_flags.OUTPUT, "table", choices=("table", "json"))
    p.add_argument("--out", default=None, help=f"directory for the report and series (default {DEFAULT_OUT}/<name>)")
    p.add_argument("--no-report", action="store_true", help="write no files; print the summary only")
    p.add_argument(
        "--dashboard",
        action="store_true",
        help="also record the dashboard's pictures after each cycle (at most 300, evenly spread) into "
        "OUT/dashboard.json; view them along virtual time with `kai dashboard OUT/dashboard.json`",
    )
    p.add_argument(
        "--occupancy-at",
        type=_instants,
        default=None,
        help="comma-separated instants for the node × GPU maps (default: 1/4, 1/2, 3/4 of the "
        "horizon: --until, or when the last job would end if none waited; and peak allocation)",
    )
    arguments.add(p, file_flags.NO_PROGRESS, False)
    saturate.add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import orjson

    from kai_scheduler.scheduler.config_file import load as load_config
    from kai_scheduler.sim import progress, replay, report
    from kai_scheduler.sim.shards import shard_configs

    if args.saturate:
        return saturate.run(args)
    saturate.check_unused(args)
    if not args.no_report and importlib.util.find_spec("matplotlib") is None:
        raise UserError("the HTML report needs matplotlib: pip install 'kai-scheduler[sim]', or pass --no-report")
    notes: list[str] = []  # what the trace loader says of the replay: on standard error and in the report
    loaded = _load(args, notes)
    configs = _configs(args, loaded)
    options = replay.Options(schedule_period=args.schedule_period, until=args.until, occupancy_at=args.occupancy_at)
    if args.dashboard and len(configs) > 1:
        raise UserError("--dashboard records one run: give it without --compare")
    runs = []
    recording = None
    for label, raw in configs:
        config = load_config(raw)
        shards = shard_configs(loaded.shards, raw)
        simulation = replay.Replay(loaded, config, options, label=label, shards=shards)
        if args.dashboard:
            from kai_scheduler.dashboard.recording import Recording

            recording = Recording(config, label or loaded.name or "simulation").attach(simulation)
        with progress.Bar(label or loaded.name, simulation.horizon, enabled=not args.no_progress) as bar:
            runs.append(simulation.run(bar))
    if args.output == "json":
        out: Any = (
            runs[0].summary.to_json()
            if len(runs) == 1
            else {report.label_of(r, i): r.summary.to_json() for i, r in enumerate(runs)}
        )
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    else:
        _print_table(runs)
    out_dir = Path(args.out or Path(DEFAULT_OUT) / Path(args.trace or args.file).stem)
    if not args.no_report:
        path = report.write(runs, out_dir, notes)
        print(f"report: {path}", file=sys.stderr)
    if recording is not None:
        path = recording.write(out_dir / "dashboard.json")
        print(f"dashboard: kai dashboard {path}", file=sys.stderr)
    return 0


def _load(args: argparse.Namespace, notes: list[str]) -> Scenario:
    from kai_scheduler.sim import sources, trace

    def trace_note(line: str) -> None:
        print(f"trace: {line}", file=sys.stderr)
        notes.append(f"trace: {line}")

    if args.trace:
        if args.file:
            raise UserError("give a scenario FILE or --trace, not both")
        if not args.nodes:
            raise UserError("--trace needs --nodes (the node list CSV)")
        return trace.load(
            args.trace,
            args.nodes,
            time_scale=args.time_scale,
            sample=args.sample,
            seed=args.seed,
            note=trace_note,
        )
    if not args.file:
        raise UserError("simulate: give a scenario FILE, or --trace PODS_CSV --nodes NODES_CSV")
    if args.nodes or args.sample is not None or args.time_scale != 1.0:
        raise UserError("--nodes, --sample and --time-scale go with --trace")
    loaded = sources.load(args.file, seed=args.seed)
    if (note := loaded.skipped_note()) is not None:
        print(f"kai: {note}", file=sys.stderr)
    return loaded


def _configs(args: argparse.Namespace, loaded: Scenario) -> list[tuple[str, ConfigSource]]:
    """(label, configuration) per run: the file's, --config's, or the two of --compare."""
    from kai_scheduler.scheduler import config_file

    if args.compare:
        if args.config:
            raise UserError("--compare replaces --config: give one or the other")
        return list(zip(_compare_labels(args.compare), (config_file.read(path) for path in args.compare), strict=True))
    return [("", config_file.of_scenario(loaded, args.config))]


def _compare_labels(paths: list[str]) -> list[str]:
    """The files' stems; their paths when the stems clash; `A`/`B` after them when the paths do too."""
    stems = [Path(path).stem for path in paths]
    if len(set(stems)) == len(stems):
        return stems
    if len(set(paths)) == len(paths):
        return list(paths)
    return [f"{stem} ({letter})" for stem, letter in zip(stems, "AB", strict=False)]


def _print_table(runs: list[replay.Run]) -> None:
    from rich.table import Table

    from kai_scheduler.cli import render
    from kai_scheduler.sim import report

    console = render.console()
    compare = len(runs) > 1
    labels = [report.label_of(r, i) for i, r in enumerate(runs)]
    table = Table(title=f"kai simulate: {runs[0].name}", title_justify="left", show_header=compare)
    table.add_column("")
    for label in labels:
        table.add_column(label, justify="right")
    columns = [report.summary_rows(r) for r in runs]
    for i, (name, _) in enumerate(columns[0]):
        table.add_row(name, *(col[i][1] for col in columns))
    console.print(table)
    console.print(_queue_table(runs, labels))
    for label, r in zip(labels, runs, strict=True):
        never = r.summary.never_scheduled
        if never:
            shown = ", ".join(never[:5]) + (f" and {len(never) - 5} more" if len(never) > 5 else "")
            prefix = f"{label}: " if compare else ""
            console.print(f"[red]{prefix}{len(never)} job(s) never scheduled[/red]: {shown}")
        if unfinished := report.unfinished_line(r):
            console.print(f"{label}: {unfinished}" if compare else unfinished, highlight=False)


def _queue_table(runs: list[replay.Run], labels: list[str]) -> Table:
    """Per queue, time-weighted GPUs allocated and fair share, and the wait p50 and p90: a column each for one
    run; with --compare a column per run, each cell `allocated / fair share; p50 / p90`."""
    from rich.table import Table

    from kai_scheduler.sim import report

    compare = len(runs) > 1
    if compare:
        title = "Queues (GPUs, time-weighted): allocated / fair share; wait p50 / p90"
        headers = labels
    else:
        title = "Queues (GPUs time-weighted; waits of their jobs)"
        headers = ["allocated", "fair share", "wait p50", "wait p90"]
    table = Table(title=title, title_justify="left")
    table.add_column("queue")
    for header in headers:
        table.add_column(header, justify="right")
    for name in sorted({q for r in runs for q in r.summary.queues}):
        cells: list[str] = []
        for r in runs:
            q = r.summary.queues.get(name)
            if q is None:
                cells += ["-"] * (1 if compare else len(headers))
                continue
            wait = q["wait_seconds"]
            figures = [
                report.gpus(q["allocated_gpus"]),
                report.gpus(q["fair_share_gpus"]),
                describe_duration(wait["p50"]),
                describe_duration(wait["p90"]),
            ]
            cells += [f"{figures[0]} / {figures[1]}; {figures[2]} / {figures[3]}"] if compare else figures
        table.add_row(name, *cells)
    return table


def _seconds(text: str) -> float:
    """A Go duration ("90s", "2h", "3d") or a number of seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        seconds = parse_duration(text, allow_days=True)
    except DurationError:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s or 2h, got {text!r}") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return seconds


def _instants(text: str) -> tuple[float, ...]:
    return tuple(_seconds(part.strip()) for part in text.split(",") if part.strip())
