"""The scheduler's restart through the real API server, an earlier revision against this tree, alternating:
`python bench/ab_restart.py --base REV [--nodes 4000] [--rounds 3]`.

`bench_scale_real.py`'s cluster is loaded into a fresh control plane (its nodes made by `kai fake-nodes`, then
stopped). Each round starts `kai scheduler` alone (as `bench_scale_real.py`'s step 6 does) once with the revision's
`src` first on `PYTHONPATH` (from `git archive`) and once with this tree's, the order swapped every round, and
times it from its start to the end of its first cycle: wall seconds, its CPU, the API server's CPU. Medians at
the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ab_cold import base_src  # noqa: E402
from bench_scale_real import Bench, cold_start, loaded_cluster  # noqa: E402

FIGURES = ("wall", "cpu", "server_cpu")


def restart(bench: Bench, name: str, pythonpath: str) -> dict[str, Any]:
    """`kai scheduler` started on the full cluster with `pythonpath` ("" for this tree) and stopped after its
    first cycle; `cold_start`'s figures."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = pythonpath
    try:
        figures = cold_start(bench, [name], {name: ["--queue-access-control=false"]}, component="scheduler")[name]
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
        bench.processes.stop([name])
    return dict(figures)


def run(base: str, nodes: int, rounds: int, workdir: Path) -> dict[str, list[dict[str, Any]]]:
    trees = {"base": str(base_src(base, workdir / "base")), "this tree": ""}
    results: dict[str, list[dict[str, Any]]] = {tree: [] for tree in trees}
    with loaded_cluster(nodes, workdir) as bench:
        for r in range(rounds):
            order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
            for tree, path in order:
                figures = restart(bench, f"scheduler-{r}-{'base' if path else 'tree'}", path)
                results[tree].append(figures)
                print(f"round {r + 1} {tree}: {figures} load {os.getloadavg()[0]:.1f}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare with (git rev)")
    parser.add_argument("--nodes", type=int, default=4000, help="fake nodes (8 GPUs each); the rest in proportion")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ab-restart-") as tmp:
        results = run(args.base, args.nodes, args.rounds, Path(tmp))
    print(
        f"\nkai scheduler's restart at {args.nodes} nodes, medians of {args.rounds} (load {load:.1f} → "
        f"{os.getloadavg()[0]:.1f})"
    )
    print("| tree | wall s to the first cycle's end | its CPU s | API server CPU s |")
    print("|---|---|---|---|")
    for tree, runs in results.items():
        cells = " | ".join(f"{statistics.median(r[f] for r in runs):.1f}" for f in FIGURES)
        print(f"| {tree} ({args.base if tree == 'base' else 'HEAD'}) | {cells} |")


if __name__ == "__main__":
    main()
