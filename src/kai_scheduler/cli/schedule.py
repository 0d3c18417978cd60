"""`kai schedule FILE`: run scheduling cycles on a scenario or manifest at one instant, print the decisions."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from kai_scheduler import scenario as scenarios
from kai_scheduler.cli import render
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import check, outcome
from kai_scheduler.sim.embedded import EmbeddedCluster


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "schedule", help="run scheduling cycles on a scenario or manifest and print the decisions",
        description="Load FILE (a scenario, SCENARIOS format, or Kubernetes manifests), run the scheduler on the "
                    "embedded cluster and print, per task, its status before and after and its node; per queue, "
                    "deserved, fair share, allocated and requested; per unplaced job, the reason.",
    )
    p.add_argument("file", help="scenario file or Kubernetes manifest (YAML)")
    p.add_argument("--cycles", type=int, default=None,
                   help="scheduling cycles to run (default: the file's `cycles`, else 1); the binder and "
                        "kubelet act between cycles")
    p.add_argument("--check", action="store_true",
                   help="check the file's `expect:` block; exit 1 with one line per mismatch")
    p.add_argument("--output", "-o", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--config", help="scheduler configuration file (KAI ConfigMap shape); overrides the file's")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = scenarios.load(args.file)
    raw_config = loaded.config
    if args.config:
        raw_config = _read_config(args.config)
    config = load_config(raw_config)
    cycles = args.cycles if args.cycles is not None else (loaded.cycles or 1)
    if cycles < 1:
        raise ValueError(f"--cycles: must be at least 1, got {cycles}")
    cluster = EmbeddedCluster(loaded.objects, config, now=loaded.now)
    before = cluster.scheduler.snapshot()
    results = cluster.run(cycles)
    result = outcome.build(loaded.name or args.file, before, cluster.view(), results)
    if args.output == "json":
        print(render.as_json(result))
    elif args.output == "yaml":
        print(render.as_yaml(result), end="")
    else:
        render.as_tables(result, Console())
    if args.check:
        if loaded.expect is None:
            raise ValueError(f"{args.file}: --check needs an `expect:` block in the scenario")
        mismatches = check.check(result, loaded.expect)
        for line in mismatches:
            print(f"{args.file}: {line}", file=sys.stderr)
        return 1 if mismatches else 0
    return 0


def _read_config(path: str) -> dict[str, object]:
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {str(err).splitlines()[0]}") from None
    if isinstance(data, dict) and "config.yaml" in data.get("data", {}):   # a ConfigMap as kubectl prints it
        data = yaml.safe_load(data["data"]["config.yaml"])
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a scheduler configuration mapping")
    return data
