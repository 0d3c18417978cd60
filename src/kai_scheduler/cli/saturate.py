"""`kai simulate --trace PODS --nodes NODES --saturate`: argument handling and output of the saturation
experiment (`sim.saturate`; the report is `sim.saturation_report`)."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kai_scheduler.api.errors import UserError

if TYPE_CHECKING:
    from kai_scheduler.sim.saturate import SaturationRun

DEFAULT_CONFIG: dict[str, Any] = {"actions": "allocate"}  # KAI's plugins, placement only
LEVELS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3)
DEFAULT_OUT = "sim-report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--saturate",
        action="store_true",
        help="with --trace/--nodes: fill the cluster with tasks drawn from the trace (--seed) until "
        "they ask for --until-demand times its GPUs, none leaving, and report the share of "
        "GPUs left unallocated against the demand arrived (docs/simulate.md)",
    )
    p.add_argument(
        "--until-demand",
        type=float,
        default=1.3,
        help="--saturate: stop when the tasks ask for this multiple of the cluster's GPUs (1.3)",
    )
    p.add_argument(
        "--arrivals-per-cycle",
        type=int,
        default=None,
        metavar="N",
        help="--saturate: tasks that arrive before each scheduling cycle (default 1: a cycle per task)",
    )


def run(args: argparse.Namespace) -> int:
    import orjson

    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim import saturate, trace

    _check(args)
    if not args.no_report and importlib.util.find_spec("matplotlib") is None:
        raise UserError("the HTML report needs matplotlib: pip install 'kai-scheduler[sim]', or pass --no-report")
    every = trace.read_tasks(args.trace)
    nodes = trace.read_nodes(args.nodes)
    total = sum(float(n["gpus"]) for n in nodes)
    drawn = saturate.draw(every, total, args.until_demand, args.seed)
    asked = sum(saturate.task_gpus(t) for t in drawn)
    print(
        f"saturate: {len(drawn)} tasks drawn from {len(every)} (seed {args.seed}) ask for {asked:.6g} GPUs, "
        f"{asked / total:.3g} times the {total:g} GPUs of {len(nodes)} nodes",
        file=sys.stderr,
    )
    if args.compare:
        configs = list(zip(_labels(args.compare), (config_file.read(path) for path in args.compare), strict=True))
    elif args.config:
        configs = [("", config_file.read(args.config))]
    else:
        configs = [("", config_file.ConfigSource(DEFAULT_CONFIG, "the default configuration"))]
    name = f"saturate {Path(args.trace).stem} on {Path(args.nodes).stem}"
    runs = []
    for label, raw in configs:
        experiment = saturate.Saturation(
            nodes, drawn, config_file.load(raw), per_cycle=args.arrivals_per_cycle or 1, name=name, label=label
        )
        progress = None if args.no_progress else _Progress(label or name)
        runs.append(experiment.run(progress))
        if progress is not None:
            progress.close()
    if args.output == "json":
        one = [{"name": r.name, "saturation": r.to_json()} for r in runs]
        out: Any = one[0] if len(runs) == 1 else {r.label: o for r, o in zip(runs, one, strict=True)}
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    else:
        _print_table(runs)
    if not args.no_report:
        from kai_scheduler.sim import saturation_report

        path = saturation_report.write(runs, Path(args.out or Path(DEFAULT_OUT) / f"{Path(args.trace).stem}-saturate"))
        print(f"report: {path}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> None:
    if not args.trace or not args.nodes:
        raise UserError("--saturate needs --trace PODS_CSV and --nodes NODES_CSV")
    if args.file:
        raise UserError("--saturate replays --trace, not a scenario FILE")
    unused = [
        flag
        for flag, value in (
            ("--sample", args.sample is not None),
            ("--time-scale", args.time_scale != 1.0),
            ("--until", args.until is not None),
            ("--schedule-period", args.schedule_period is not None),
            ("--occupancy-at", args.occupancy_at is not None),
        )
        if value
    ]
    if unused:
        raise UserError(f"{unused[0]} does not apply to --saturate (tasks are drawn with --seed until --until-demand)")
    if args.compare and args.config:
        raise UserError("--compare replaces --config: give one or the other")
    if args.arrivals_per_cycle is not None and args.arrivals_per_cycle < 1:
        raise UserError(f"--arrivals-per-cycle: must be at least 1, got {args.arrivals_per_cycle}")


def check_unused(args: argparse.Namespace) -> None:
    """The saturation flags given without --saturate: a one-line error."""
    if args.until_demand != 1.3 or args.arrivals_per_cycle is not None:
        raise UserError("--until-demand and --arrivals-per-cycle go with --saturate")


def _labels(paths: list[str]) -> list[str]:
    stems = [Path(path).stem for path in paths]
    if len(set(stems)) == len(stems):
        return stems
    return list(paths) if len(set(paths)) == len(paths) else [f"{s} ({c})" for s, c in zip(stems, "AB", strict=False)]


class _Progress:
    """The demand arrived so far, on standard error: on a terminal one line redrawn at each whole percent;
    elsewhere (a log, a pipe) a line of its own at each tenth of the cluster's GPUs, so no carriage returns."""

    STEP = 10  # percent between two lines off a terminal

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.shown = -1  # the last percent printed
        self.open = False  # a redrawn line waits for its newline

    def __call__(self, arrived: float) -> None:
        percent = int(arrived * 100)
        if self.terminal and percent != self.shown:
            print(f"\r{self.label}: demand arrived {percent} % of the cluster's GPUs", end="", file=self.stream)
            self.open = True
        elif not self.terminal and percent // self.STEP > self.shown // self.STEP:
            print(f"{self.label}: demand arrived {percent} % of the cluster's GPUs", file=self.stream)
        else:
            return
        self.shown = percent

    def close(self) -> None:
        if self.open:
            print(file=self.stream)
            self.open = False


def _print_table(runs: list[SaturationRun]) -> None:
    from rich.table import Table

    from kai_scheduler.cli import render

    table = Table(title=f"kai simulate: {runs[0].name}", title_justify="left")
    table.add_column("")
    for r in runs:
        table.add_column(r.label or "run", justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("tasks (withdrawn unplaced)", [f"{r.points[-1].tasks} ({r.points[-1].failed})" for r in runs]),
        ("cycles; wall time", [f"{r.cycles}; {r.wall_seconds:.1f} s" for r in runs]),
    ]
    for level in LEVELS:
        rows.append((f"unallocated GPUs at demand {level:g}", [_percent(r.at(level)) for r in runs]))
    rows.append(("fragmentation at demand 1", [_percent(r.at(1.0, [p.fragmentation for p in r.points])) for r in runs]))
    for name, cells in rows:
        table.add_row(name, *cells)
    render.console().print(table)


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.2f} %"
