"""Every decision of the victim actions, as a digest to compare two trees: `python bench/victim_decisions.py`.

Run it on two trees (by `PYTHONPATH`) and compare the digests; the same digest means the same operations (task,
op, placement before and after, eviction record) in the same order, cycle by cycle.

- `scenarios`: each `tests/scenarios/**/*.yaml` through `kai schedule FILE --output json`, every operation every
  statement committed (in commit order) and the JSON output;
- `reclaim`: `bench_scale.py`'s reclaim decision (a 2 x 8-GPU gang in a starved queue on the filled cluster)
  at `--nodes` (4,000), `--repeat` cycles, each undone as `bench_scale.py` undoes it; CPU and wall seconds each.

`--show` prints the operations of the reclaim cycles; `--profile FILE` profiles the last reclaim cycle: cProfile's
statistics into `FILE.prof`, else pyinstrument's text report into FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent


def describe(op: Any) -> str:
    """One operation as a line: op, task, before and after placements, the eviction record."""
    why = "" if op.eviction is None else f" [{op.eviction.action} {op.eviction.preemptor}: {op.eviction.message}]"
    return f"{op.op.value} {op.task.key} {op.before!r} -> {op.after!r}{why}"


@contextlib.contextmanager
def recorded() -> Iterator[list[str]]:
    """Every operation the sessions commit while inside, described, in commit order."""
    from kai_scheduler.framework.session import Session

    lines: list[str] = []
    original = Session.record_commit

    def record(self: Session, operations: Iterable[Any]) -> None:
        operations = list(operations)
        lines.extend(describe(op) for op in operations)
        lines.append("--")
        original(self, operations)

    Session.record_commit = record  # type: ignore[method-assign]
    try:
        yield lines
    finally:
        Session.record_commit = original  # type: ignore[method-assign]


def scenarios(each: bool) -> str:
    from kai_scheduler import cli

    digest = hashlib.sha256()
    files = sorted((ROOT / "tests" / "scenarios").rglob("*.yaml"))
    ops = 0
    for path in files:
        out = io.StringIO()
        with recorded() as lines, contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(["schedule", str(path), "--output", "json"])
        ops += sum(1 for line in lines if line != "--")
        text = f"{path.relative_to(ROOT)} {code}\n" + "\n".join(lines) + "\n" + _untimed(out.getvalue())
        digest.update(text.encode())
        if each:
            print(f"  {path.relative_to(ROOT)}: {hashlib.sha256(text.encode()).hexdigest()[:16]}")
    print(f"scenarios: {len(files)} files, {ops} operations, sha256 {digest.hexdigest()[:16]}")
    return digest.hexdigest()


def _untimed(output: str) -> str:
    """`kai schedule`'s JSON output without its timings (`seconds`), the only part that changes run to run."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "seconds"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    try:
        return json.dumps(strip(json.loads(output)), sort_keys=True)
    except ValueError:
        return output


def reclaim(nodes: int, repeat: int, show: bool, profile: str | None) -> str:
    import scale_cluster as sc
    from bench_scale import Cycles

    started = time.perf_counter()
    cycles = Cycles(nodes)
    cycles.fill()
    print(f"reclaim at {nodes} nodes: set-up {time.perf_counter() - started:.1f} s", flush=True)
    digest = hashlib.sha256()
    for i in range(repeat):
        added = sc.new_gang(f"reclaim{i}", "starved", 2, 8)
        cycles.store.add_many(added)
        profiler = _profiler(profile) if profile and i == repeat - 1 else None
        with recorded() as lines:
            wall, cpu = time.perf_counter(), time.process_time()
            if profiler is not None:
                profiler.start()
            result = cycles.scheduler.run_once()
            if profiler is not None:
                profiler.stop()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        # The cycle's names carry `i`: the digest is of the decisions with the repeat's number taken out.
        text = "\n".join(lines).replace(f"reclaim{i}", "reclaim#")
        digest.update(text.encode())
        evicted = [op.task.name for op in result.operations if op.op.value == "evict"]
        reclaim_s = result.action_seconds.get("reclaim", float("nan"))
        print(
            f"  cycle {i}: CPU {cpu:.3f} s, wall {wall:.3f} s (reclaim action {reclaim_s:.3f} s), "
            f"{len(result.operations)} operations, {len(evicted)} evicted, "
            f"sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}",
            flush=True,
        )
        if show:
            print(text)
        result.release()
        del result
        cycles._undo(added, evicted)
    print(f"reclaim: sha256 {digest.hexdigest()[:16]}")
    return digest.hexdigest()


class _profiler:
    """cProfile into FILE (`.prof`), else pyinstrument's text report into FILE."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path.endswith(".prof"):
            self.cprofile: cProfile.Profile | None = cProfile.Profile()
        else:
            from pyinstrument import Profiler

            self.cprofile, self.sampler = None, Profiler(interval=0.0005)

    def start(self) -> None:
        if self.cprofile is not None:
            self.cprofile.enable()
        else:
            self.sampler.start()

    def stop(self) -> None:
        if self.cprofile is not None:
            self.cprofile.disable()
            self.cprofile.dump_stats(self.path)
        else:
            self.sampler.stop()
            Path(self.path).write_text(self.sampler.output_text(show_all=False), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="scenarios,reclaim")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print the reclaim cycles' operations")
    parser.add_argument("--each", action="store_true", help="print each scenario file's digest")
    parser.add_argument("--profile", default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    cases = args.cases.split(",")
    if "scenarios" in cases:
        scenarios(args.each)
    if "reclaim" in cases:
        reclaim(args.nodes, args.repeat, args.show, args.profile)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
