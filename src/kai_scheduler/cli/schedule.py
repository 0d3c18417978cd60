"""`kai schedule FILE`: run scheduling cycles on a scenario, manifest or scheduler snapshot at one instant, print
the decisions. `kai snapshot-tool --filename snapshot.zip` is the same under the name and flags of KAI's tool."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
from typing import Final

from kai_scheduler.api.errors import UserError
from kai_scheduler.api.flags import SWITCH, Flag
from kai_scheduler.cli import arguments, file_flags, phases

EXPLAIN: Final = Flag(
    "explain", SWITCH, "name, after each reason a job was not placed, the plugin or action that rejected it"
)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "schedule",
        help="run scheduling cycles on a scenario or manifest and print the decisions",
        description="Load FILE (a scenario, see docs/scenario-reference.md, Kubernetes manifests, or a scheduler's "
        "snapshot.zip from its /get-snapshot, with the configuration and flags it ran with), run the "
        "scheduler on the embedded cluster and print, per task, its status before and after and its "
        "node; per queue, deserved, fair share, allocated and requested; per unplaced job, the reason. "
        "As json or yaml: every task by namespace/name with its status and node, every queue's shares, the "
        "evictions and the counts per cycle.",
    )
    p.add_argument("file", help="scenario file or Kubernetes manifest (YAML), or snapshot.zip")
    _run_flags(p)
    p.set_defaults(run=run)
    tool = sub.add_parser(
        "snapshot-tool",
        help="replay a scheduler's snapshot.zip (KAI's snapshot-tool): `kai schedule snapshot.zip`",
        description="Replay the snapshot.zip a scheduler serves at /get-snapshot (the snapshot plugin, on "
        "--plugin-server-port): its objects on the embedded cluster, with the configuration and flags it holds. "
        "KAI's cmd/snapshot-tool by name and flags; the same as `kai schedule FILE`.",
    )
    tool.add_argument("--filename", required=True, metavar="FILE", help="the snapshot.zip to replay")
    tool.add_argument(
        "--verbosity",
        type=int,
        default=4,
        metavar="N",
        help="log level as KAI's: 4 and over info, 5 and over debug, less than 4 warnings only (default 4)",
    )
    _run_flags(tool, check=False)
    tool.set_defaults(run=_snapshot_tool)


def _run_flags(p: argparse.ArgumentParser, *, check: bool = True) -> None:
    arguments.add(p, file_flags.CYCLES, None, shown="the file's `cycles`, else 1")
    if check:
        _check_flag(p)
    arguments.add(
        p,
        file_flags.OUTPUT,
        None,
        shown="table; with --check, only the check's lines",
        choices=("table", "json", "yaml"),
    )
    arguments.add(
        p, file_flags.CONFIG, None, shown="FILE's `config:` (a snapshot's configuration), else KAI's defaults"
    )
    arguments.add(p, EXPLAIN, False)
    arguments.add(p, file_flags.NO_PROGRESS, False)


def _check_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--check",
        action="store_true",
        help="check the file's `expect:` block: exit 0, or 1 with one line per mismatch on standard "
        "error; without --output, print no tables and an OK line on success",
    )


def _snapshot_tool(args: argparse.Namespace) -> int:
    import logging

    wanted = logging.DEBUG if args.verbosity >= 5 else logging.INFO if args.verbosity >= 4 else logging.WARNING
    root = logging.getLogger()  # `kai` configured its handler already: the level is what -v would have set
    if args.verbose == 0 or wanted < root.level:
        root.setLevel(wanted)
    args.file, args.check = args.filename, False
    return run(args)


def run(args: argparse.Namespace) -> int:
    from kai_scheduler import scenario as scenarios
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim import check, outcome
    from kai_scheduler.sim.embedded import EmbeddedCluster
    from kai_scheduler.sim.shards import shard_configs
    from kai_scheduler.store import collector

    progress = not args.no_progress
    # Loading and building make millions of objects that all live to the end and hold no reference cycles:
    # with the cyclic collector on, every burst walks all of them again (a fifth of the run at 20,000 jobs).
    with phases.step(f"loading {args.file}", enabled=progress), collector.paused():
        loaded = scenarios.load(args.file)
    if (note := loaded.skipped_note()) is not None:
        print(f"kai: {note}", file=sys.stderr)
    source = config_file.of_scenario(loaded, args.config)
    config = config_file.load(source)
    shards = shard_configs(loaded.shards, source)
    cycles = args.cycles if args.cycles is not None else (loaded.cycles or 1)
    if cycles < 1:
        raise UserError(f"--cycles: must be at least 1, got {cycles}")
    if args.check and loaded.expect is None:
        raise UserError(f"{args.file}: --check needs an `expect:` block in the scenario")
    building = f"building the cluster ({len(loaded.objects)} objects)"
    with phases.step(building, enabled=progress), collector.paused():
        cluster = EmbeddedCluster(loaded.objects, config, now=loaded.now, shards=shards)
        # The store holds its own copy: the loader's would double the memory of a large scenario.
        loaded = dataclasses.replace(loaded, objects=[])
        # What the report needs of the first snapshot, not the snapshot: the first cycle then reuses its model.
        before = outcome.initial(cluster.snapshot())
    gc.freeze()  # the cluster just built lives to the end: later collections need not walk it
    try:
        for i in range(cycles):
            if i:
                with phases.step(f"binder, kubelet and controllers after cycle {i}", enabled=progress):
                    cluster.between_cycles()
            with phases.step(f"cycle {i + 1} of {cycles}", enabled=progress):
                cluster.cycle()
        for done in cluster.results:  # the report reads their decisions: the final view then reuses the model
            done.release()
        with phases.step("preparing the report", enabled=progress), collector.paused():
            result = outcome.build(
                loaded.name or args.file,
                before,
                cluster.view(),
                cluster.results,
                explain=args.explain,
                placed_by=cluster.placed_by,
            )
    finally:
        gc.unfreeze()
    output = args.output or ("none" if args.check else "table")
    with phases.step("writing the result", enabled=progress):  # seconds for 100,000 tasks
        _print(result, output)
    if args.check:
        assert loaded.expect is not None
        mismatches = check.check(result, loaded.expect)
        for line in mismatches:
            print(f"{args.file}: {line}", file=sys.stderr)
        if not mismatches and args.output is None:  # with --output, standard output is the result alone
            print(f"{args.file}: OK, {check.count(loaded.expect)} expectation(s) hold")
        return 1 if mismatches else 0
    return 0


def _print(result: object, output: str) -> None:
    from kai_scheduler.cli import render

    assert isinstance(result, render.Outcome)
    if output == "json":
        print(render.as_json(result))
    elif output == "yaml":
        print(render.as_yaml(result), end="")
    elif output == "table":
        render.as_tables(result, render.console())
