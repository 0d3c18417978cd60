"""bench_scale's cold start, an earlier revision against this tree, alternating: `python bench/ab_cold.py
[--base REV] [--nodes 4000] [--rounds 3]`.

One mock API server holds `bench_scale.py`'s cluster; each round runs `bench_scale.py --child cold` (the cold
start as `kai run` makes it: LIST, typed parse, first snapshot, first cycle) once with the revision's `src` first
on `PYTHONPATH` (from `git archive`) and once with this tree's, the order swapped every round so that the load
of a shared box moves both alike. Printed per run: CPU seconds of the sync (LIST, decode and typed parse), of the
first snapshot and of the whole cold start; at the end each tree's medians.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

PARTS = ("sync", "snapshot", "total")


def base_src(rev: str, into: Path) -> Path:
    """The revision's `src` under `into`."""
    raw = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(raw.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def cold_run(url: str, src: Path) -> dict[str, float]:
    """One cold start in a fresh process importing `kai_scheduler` from `src`: each part's CPU seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, str(ROOT / "bench" / "bench_scale.py"), "--child", "cold", "--url", url]
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if out.returncode:
        raise SystemExit(f"cold start with {src} failed:\n{out.stderr[-3000:]}")
    cold: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "sync": cold["list_cpu"],
        "snapshot": cold["snapshot_cpu"] - cold["list_cpu"],
        "total": cold["cpu"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare with (git rev)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import scale_cluster
    from bench_kube_list import start_mock_apiserver, warm_up

    runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"base": base_src(args.base, Path(tmp) / "base"), "this": ROOT / "src"}
        path = Path(tmp) / "cluster.jsonl"
        with open(path, "wb") as out:
            for obj in scale_cluster.build(args.nodes, free=True):
                out.write(orjson.dumps(obj) + b"\n")
        server, url = start_mock_apiserver("--load", str(path), "--bookmark-interval", "0")
        try:
            warm_up(url)
            for i in range(args.rounds):
                for tree in ("base", "this") if i % 2 == 0 else ("this", "base"):
                    cold = cold_run(url, trees[tree])
                    runs[tree].append(cold)
                    parts = ", ".join(f"{part} {cold[part]:.2f}" for part in PARTS)
                    print(f"round {i + 1} {tree:4s}: {parts} (CPU s)", flush=True)
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=60)
    for tree, cold_runs in runs.items():
        medians = ", ".join(f"{part} {statistics.median(r[part] for r in cold_runs):.2f}" for part in PARTS)
        print(f"median {tree:4s}: {medians} (CPU s, {len(cold_runs)} runs)")


if __name__ == "__main__":
    main()
