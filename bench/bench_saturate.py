"""The saturation experiment, three placement policies × seeds: `.venv/bin/python bench/bench_saturate.py`.

Fills the cluster of openb_node_list_all_node.csv (1,523 nodes, 6,212 GPUs) with tasks drawn from
openb_pod_list_default.csv until they ask for 1.3× its GPUs (`kai simulate --saturate`, docs/simulate.md), under
examples/config/gpupack.yaml (KAI's default placement), gpuspread.yaml and gpufrag.yaml, the same draw per seed
for all three. Prints, per seed and policy, the share of GPUs left unallocated at arrived demand 0.8 … 1.3
(`at 1.0` is `unallocated_gpu_ratio_at_full`), the expected fragmentation at 1.0 and the wall time; then per
policy the mean over seeds, gpufrag against gpupack at 1.0 (goal ≤ 0.6×), whether gpufrag is lower than gpupack
at every level from 0.8 to 1.3 on every seed, and the replay time against its target (≤ 60 s). Each run in a
process of its own (`--jobs N` at once); 200 tasks arrive per cycle (`--arrivals-per-cycle`). `--json FILE` keeps
every point.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"
POLICIES = ("gpupack", "gpuspread", "gpufrag")
LEVELS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3)
GOAL_RATIO = 0.6
TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(TRACES / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(TRACES / "openb_node_list_all_node.csv"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--until-demand", default="1.3")
    parser.add_argument("--arrivals-per-cycle", default="200")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each is one process)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--json", metavar="FILE", help="write every run's saturation JSON here")
    parser.add_argument(
        "--node-every",
        type=int,
        default=1,
        metavar="K",
        help="keep every K-th node of the list (a smaller cluster of the same mix; default all)",
    )
    args = parser.parse_args()
    if args.node_every > 1:
        args.nodes = _thinned(Path(args.nodes), args.node_every)

    todo = [(seed, policy) for seed in args.seeds for policy in args.policies]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = dict(zip(todo, pool.map(lambda sp: _run(args, *sp), todo), strict=True))
    results = {key: done[key] for key in todo}
    if args.json:
        Path(args.json).write_text(json.dumps({f"{p} seed {s}": r for (s, p), r in results.items()}, indent=1))
    _print(args, results)
    return 0


def _thinned(path: Path, every: int) -> str:
    """The node list with every `every`-th node kept, in a temporary file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = [lines[0], *lines[every::every]]
    out = Path(tempfile.mkdtemp(prefix="kai-saturate-")) / f"{path.stem}-every-{every}.csv"
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"nodes: {len(kept) - 1} of {len(lines) - 1} (every {every}th) in {out}", file=sys.stderr)
    return str(out)


def _run(args: argparse.Namespace, seed: int, policy: str) -> dict[str, object]:
    argv = [
        sys.executable,
        "-m",
        "kai_scheduler.cli",
        "simulate",
        "--trace",
        args.pods,
        "--nodes",
        args.nodes,
        "--saturate",
        "--seed",
        str(seed),
        "--until-demand",
        args.until_demand,
        "--config",
        str(ROOT / "examples" / "config" / f"{policy}.yaml"),
        "-o",
        "json",
        "--no-report",
        "--no-progress",
    ]
    if args.arrivals_per_cycle:
        argv += ["--arrivals-per-cycle", args.arrivals_per_cycle]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{policy} seed {seed}: kai simulate failed: {done.stderr.strip()}")
    out: dict[str, object] = json.loads(done.stdout)["saturation"]
    out["process_seconds"] = time.perf_counter() - started
    print(f"seed {seed} {policy}: done in {out['process_seconds']:.0f} s", file=sys.stderr)
    return out


def _at(run: dict[str, object], level: float, key: str = "unallocated_gpu_ratio") -> float:
    xs, ys = run["arrived"], run[key]
    assert isinstance(xs, list) and isinstance(ys, list)
    if not xs or level > xs[-1] + 1e-12:
        return math.nan
    for i in range(1, len(xs)):
        if xs[i] >= level:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return float(y0 + (y1 - y0) * (level - x0) / (x1 - x0)) if x1 > x0 else float(y1)
    return float(ys[-1])


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.2f}"


def _print(args: argparse.Namespace, results: dict[tuple[int, str], dict[str, object]]) -> None:
    head = ["seed", "policy", *(f"@{level:g}" for level in LEVELS), "frag@1", "withdrawn", "cycles", "wall s", "CPU s"]
    print(
        f"Saturation: {Path(args.pods).name} on {Path(args.nodes).name}, demand to {args.until_demand}× the "
        "cluster's GPUs; unallocated GPUs in % of the cluster's at each arrived demand"
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for (seed, policy), run in results.items():
        cells = [
            str(seed),
            policy,
            *(_pct(_at(run, level)) for level in LEVELS),
            _pct(_at(run, 1.0, "fragmentation_ratio")),
            str(run["failed_tasks"]),
            str(run["cycles"]),
            f"{run['wall_seconds']:.1f}",
            f"{run['cpu_seconds']:.1f}",
        ]
        print(" | ".join(cells))
    print()
    seeds = sorted({s for s, _ in results})
    print(f"Mean over seeds {', '.join(map(str, seeds))}: unallocated GPUs in % at each arrived demand")
    print(
        " | ".join(["policy", *(f"@{level:g}" for level in LEVELS), "frag@1", "wall s", "CPU s", "target ≤ 60 s (CPU)"])
    )
    print(" | ".join("---" for _ in range(len(LEVELS) + 5)))
    for policy in args.policies:
        runs = [results[(s, policy)] for s in seeds]
        cells = [_pct(_mean(_at(r, level) for r in runs)) for level in LEVELS]
        frag = _pct(_mean(_at(r, 1.0, "fragmentation_ratio") for r in runs))
        wall = _mean(float(str(r["wall_seconds"])) for r in runs)
        cpu = _mean(float(str(r["cpu_seconds"])) for r in runs)
        print(
            " | ".join(
                [policy, *cells, frag, f"{wall:.0f}", f"{cpu:.0f}", "met" if cpu <= TARGET_SECONDS else "not met"]
            )
        )
    if "gpupack" in args.policies and "gpufrag" in args.policies:
        pack = _mean(_at(results[(s, "gpupack")], 1.0) for s in seeds)
        frag_full = _mean(_at(results[(s, "gpufrag")], 1.0) for s in seeds)
        ratio = frag_full / pack if pack > 0 else math.nan
        lower = [
            level
            for level in LEVELS
            if all(_at(results[(s, "gpufrag")], level) < _at(results[(s, "gpupack")], level) for s in seeds)
        ]
        print()
        print(
            f"gpufrag / gpupack unallocated @1.0: {ratio:.3f} (goal ≤ {GOAL_RATIO}: "
            f"{'met' if ratio <= GOAL_RATIO + 1e-9 else 'not met'}); gpufrag below gpupack on every seed at demand: "
            f"{', '.join(f'{level:g}' for level in lower) or 'none'} (of {', '.join(f'{v:g}' for v in LEVELS)})"
        )


def _mean(values: object) -> float:
    items = list(values)  # type: ignore[call-overload]
    return sum(items) / len(items) if items else math.nan


if __name__ == "__main__":
    sys.exit(main())
