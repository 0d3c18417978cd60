"""The benchmarks' common parts: one entry, one timed cycle, one table.

`run_cases(script, doc, names, run_case)` parses `--only NAME` and the hidden child entry `--case NAME`. In a
child it prints `run_case(NAME)` as one JSON line and returns None; otherwise it runs the chosen cases, each
as `python SCRIPT --case NAME` (so its peak memory is its own), and returns their results by name, in order.
`time_cycle(objects, actions)` times one scheduling cycle of a fresh scheduler over an in-memory store;
`allocate_figures` and `allocate_cells` are an allocate cycle's figures and their first cells in a table (under
`ALLOCATE_COLUMNS`); `print_table` prints each case's description, then the figures as a table.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kai_scheduler.cluster.snapshot import Snapshot
    from kai_scheduler.scheduler.result import CycleResult

Result = dict[str, Any]
EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z, the benchmarks' clock at start


def run_cases(
    script: str, doc: str | None, names: Iterable[str], run_case: Callable[[str], Result]
) -> dict[str, Result] | None:
    names = list(names)
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    parser.add_argument("--only", choices=sorted(names))
    parser.add_argument("--case", help=argparse.SUPPRESS)  # child process entry
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return None
    results = {}
    for name in [args.only] if args.only else names:
        out = subprocess.run([sys.executable, script, "--case", name], capture_output=True, text=True, check=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


@dataclass(frozen=True)
class Cycle:
    """One timed cycle, in wall seconds; `peak_gib` is this process' peak RSS after it."""

    snapshot: Snapshot  # as the cycle's first step builds it, taken once on its own
    result: CycleResult
    parse_s: float  # the cache's first sync: listing and parsing every object
    snapshot_s: float
    cycle_s: float
    peak_gib: float
    cycle_cpu_s: float = 0.0  # CPU seconds of the cycle (the process' user + system time): steadier on a shared box


def time_cycle(objects: Iterable[dict[str, Any]], actions: str) -> Cycle:
    """Load `objects` into an in-memory store and time a fresh scheduler's sync, snapshot and one cycle."""
    from kai_scheduler.api.clock import ManualClock
    from kai_scheduler.scheduler.scheduler import Scheduler, load_config
    from kai_scheduler.store.memory import MemoryStore

    clock = ManualClock(EPOCH)
    store = MemoryStore(clock)
    store.add_many(objects)
    scheduler = Scheduler(store, load_config({"actions": actions}), clock)
    t0 = time.perf_counter()
    scheduler.cache.sync()
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    snap = scheduler.snapshot()
    snapshot_s = time.perf_counter() - t0
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = scheduler.run_once()
    cycle_s, cycle_cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return Cycle(snap, result, parse_s, snapshot_s, cycle_s, peak_gib, cycle_cpu_s)


ALLOCATE_COLUMNS = ("pods", "binds", "parse s", "snapshot s", "allocate s", "cycle s")


def allocate_figures(cycle: Cycle, pods: int) -> Result:
    """An allocate cycle's figures, as a case's child process prints them: seconds (wall, and the cycle's CPU),
    peak GiB, pods and binds."""
    return {
        "pods": float(pods),
        "binds": float(cycle.result.binds),
        "parse_s": cycle.parse_s,
        "snapshot_s": cycle.snapshot_s,
        "allocate_s": cycle.result.action_seconds.get("allocate", 0.0),
        "cycle_s": cycle.cycle_s,
        "cycle_cpu_s": cycle.cycle_cpu_s,
        "peak_gib": cycle.peak_gib,
    }


def allocate_cells(figures: Result) -> tuple[str, ...]:
    """The cells of `ALLOCATE_COLUMNS` for `allocate_figures`."""
    return (
        f"{figures['pods']:.0f}",
        f"{figures['binds']:.0f}",
        f"{figures['parse_s']:.2f}",
        f"{figures['snapshot_s']:.2f}",
        f"{figures['allocate_s']:.2f}",
        f"{figures['cycle_s']:.2f}",
    )


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Mapping[str, Sequence[str]],
    notes: Mapping[str, str],
    width: int | None = None,
) -> None:
    """Print each case's note line, then a table: the case name first (left), then `columns` (right)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=width)
    table = Table(title=title)
    table.add_column("case")
    for col in columns:
        table.add_column(col, justify="right")
    for name, cells in rows.items():
        table.add_row(name, *cells)
        console.print(f"{name}: {notes[name]}")
    console.print(table)
