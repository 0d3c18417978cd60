"""The scheduler cache's first sync through the real API server, its lists one by one against the pods' list made
on a thread while the others are made (`Informers(lists_ahead=True)`, as a component process lists):
`python bench/bench_first_lists.py [--nodes 4000] [--rounds 3]`.

`bench_scale_real.py`'s cluster is loaded into a fresh control plane (its nodes made by `kai fake-nodes`, then
stopped). Each round starts a fresh process per form, alternating, that tunes the collector as a component does and
times `ObjectCache(store, SCHEDULER_RESOURCES).sync()` from nothing: wall seconds, its CPU, and the API server's CPU
over the same window. The medians are printed as a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FORMS = {"one by one": False, "pods ahead": True}


def child(kubeconfig: str, ahead: bool) -> None:
    """In a fresh process: the cache's first sync, timed; one JSON line on stdout."""
    from kai_scheduler.store import collector
    from kai_scheduler.store.cache import SCHEDULER_RESOURCES, ObjectCache
    from kai_scheduler.store.informer import Informers
    from kai_scheduler.store.kube import KubeOptions, KubeStore

    collector.tune_for_service()
    store = KubeStore.connect(kubeconfig, options=KubeOptions(qps=0, user_agent="bench-first-lists"))
    try:
        informers = Informers(store, first_from_cache=True, lists_ahead=ahead)
        cache = ObjectCache(store, SCHEDULER_RESOURCES, informers=informers)
        wall, cpu = time.perf_counter(), time.process_time()
        cache.sync()
        out = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
        out["pods"] = len(cache.held("pods"))
    finally:
        store.close()
    print(json.dumps(out), flush=True)


def measure(bench: Any, ahead: bool) -> dict[str, float]:
    server = bench.server_cpu()
    argv = [sys.executable, __file__, "--child", bench.kubeconfig]
    if ahead:
        argv.append("--ahead")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the timed process failed: {done.stderr[-2000:]}")
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    out["server_cpu"] = bench.server_cpu() - server
    return out


def run(nodes: int, rounds: int, workdir: Path) -> dict[str, list[dict[str, float]]]:
    from bench_scale_real import loaded_cluster

    results: dict[str, list[dict[str, float]]] = {form: [] for form in FORMS}
    with loaded_cluster(nodes, workdir) as bench:
        for r in range(rounds):
            order = list(FORMS.items()) if r % 2 == 0 else list(FORMS.items())[::-1]
            for form, ahead in order:
                results[form].append(measure(bench, ahead))
                print(f"round {r + 1} {form}: {results[form][-1]} load {os.getloadavg()[0]:.1f}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4000, help="fake nodes (8 GPUs each); the rest in proportion")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--ahead", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.ahead)
        return
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-first-lists-") as tmp:
        results = run(args.nodes, args.rounds, Path(tmp))
    print(
        f"\nthe cache's first sync at {args.nodes} nodes, medians of {args.rounds} (load {load:.1f} → "
        f"{os.getloadavg()[0]:.1f})"
    )
    print("| form | wall s | client CPU s | API server CPU s | pods |")
    print("|---|---|---|---|---|")
    for form, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        server = statistics.median(r["server_cpu"] for r in runs)
        print(f"| {form} | {wall:.1f} | {cpu:.1f} | {server:.1f} | {int(runs[0]['pods'])} |")


if __name__ == "__main__":
    main()
