"""bench_scale's reclaim decision, an earlier revision against this tree in one process: `python bench/ab_reclaim.py
[--base REV] [--nodes 4000] [--rounds 6]`.

On a shared box the load moves CPU seconds by a fifth from one minute to the next, more than a change of that
size. Here both trees build their own cluster in the same process (the revision's `src` and bench modules from
`git archive`, its package renamed `kai_scheduler_base` by a text replacement so that both import side by
side), then their reclaim cycles alternate (base first in even rounds, this tree first in odd ones), each
undone as `bench_scale.py` undoes it. Printed per cycle: CPU and wall seconds and a digest of the decisions
(every operation, as `victim_decisions.py` describes it); at the end each tree's median, and whether every
cycle of both made the same decisions. Peak memory is both clusters' (about 3 GiB at 4,000 nodes).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_MODULES = ("bench_scale", "scale_cluster", "workloads", "bench_kube_list")


def renamed_base(rev: str, into: Path) -> None:
    """The revision's package as `kai_scheduler_base` and its bench modules as `b_<name>`, under `into`."""
    raw = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "bench"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(raw.stdout)) as tar:
        tar.extractall(into / "archive", filter="data")
    names = re.compile(r"\b(kai_scheduler|" + "|".join(BENCH_MODULES) + r")\b")

    def rename(text: str) -> str:
        return names.sub(lambda m: "kai_scheduler_base" if m[1] == "kai_scheduler" else f"b_{m[1]}", text)

    package = into / "archive" / "src" / "kai_scheduler"
    for path in package.rglob("*"):
        if not path.is_file():
            continue
        target = into / "base" / "kai_scheduler_base" / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in (".py", ".yaml"):
            target.write_text(rename(path.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            target.write_bytes(path.read_bytes())
    for name in BENCH_MODULES:
        source = into / "archive" / "bench" / f"{name}.py"
        (into / "base" / f"b_{name}.py").write_text(rename(source.read_text(encoding="utf-8")), encoding="utf-8")


def one_cycle(cycles: Any, sc: ModuleType, i: int) -> tuple[float, float, str]:
    from victim_decisions import describe

    added = sc.new_gang(f"reclaim{i}", "starved", 2, 8)
    cycles.store.add_many(added)
    wall, cpu = time.perf_counter(), time.process_time()
    result = cycles.scheduler.run_once()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    text = "\n".join(describe(op) for op in result.operations).replace(f"reclaim{i}", "reclaim#")
    evicted = [op.task.name for op in result.operations if op.op.value == "evict"]
    result.release()
    del result
    cycles._undo(added, evicted)
    return cpu, wall, hashlib.sha256(text.encode()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare with (git rev)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        renamed_base(args.base, Path(tmp))
        sys.path[:0] = [str(Path(tmp) / "base"), str(ROOT / "src"), str(ROOT / "bench")]
        import b_bench_scale  # type: ignore[import-not-found]
        import b_scale_cluster  # type: ignore[import-not-found]
        import bench_scale
        import scale_cluster

        started = time.perf_counter()
        trees = {"base": (b_bench_scale.Cycles(args.nodes), b_scale_cluster)}
        trees["base"][0].fill()
        trees["this"] = (bench_scale.Cycles(args.nodes), scale_cluster)
        trees["this"][0].fill()
        print(f"base {args.base}, {args.nodes} nodes: set-up {time.perf_counter() - started:.0f} s", flush=True)
        cpus: dict[str, list[float]] = {"base": [], "this": []}
        digests: set[str] = set()
        for i in range(args.rounds):
            for name in ("base", "this") if i % 2 == 0 else ("this", "base"):
                cycles, sc = trees[name]
                cpu, wall, digest = one_cycle(cycles, sc, i)
                cpus[name].append(cpu)
                digests.add(digest)
                print(
                    f"round {i} {name:4s}: CPU {cpu:.3f} s, wall {wall:.3f} s, decisions {digest}, "
                    f"load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    for name, values in cpus.items():
        print(f"{name}: median CPU {statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})")
    print("same decisions in every cycle of both" if len(digests) == 1 else f"DIFFERENT decisions: {sorted(digests)}")


if __name__ == "__main__":
    main()
