"""The store's own CPU per request on a real kube-apiserver: `python bench/bench_client_cpu.py [--tree DIR ...]`.

A fresh control plane from `../shared/kube` (etcd + kube-apiserver on loopback, TLS with a client certificate as
its kubeconfig says, stopped in a `finally`). Each pass runs in a process of its own with one tree's `src` on its
path (`--tree`, default this one; give two, say a checkout of the base commit and this one, to compare them): a
`KubeStore` without a client rate limit makes `--requests` GETs of one ConfigMap, then as many merge patches of
its labels, one thread, and prints this process's CPU (`time.process_time`) per request of each kind. A third
kind, `fenced PATCH`, sends the same patches the way a component of `kai run` writes: through its `Fenced` store
(not under leader election) and a store whose rate limiter takes a token for each request (a limit too high to
make any request wait, so that its CPU is the limiter's bookkeeping, not a sleep). The trees'
passes alternate `--repeat` times, so a shared box's load falls on both alike; each figure is the median of its
passes, with the range beside it.
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
sys.path.insert(0, str(ROOT / "bench"))

NAMESPACE = "default"
NAME = "bench-client-cpu"


def worker(kubeconfig: str, requests: int) -> dict[str, float]:
    """CPU µs per GET and per merge PATCH of this process, through the tree on its path."""
    from kai_scheduler.store.kube import KubeOptions, KubeStore

    figures = plain_requests(kubeconfig, requests)
    limited = KubeOptions(qps=1e9, burst=1_000_000_000, user_agent="bench-client-cpu")
    with KubeStore.connect(kubeconfig, options=limited) as store:
        figures["fenced PATCH"] = fenced_patches(store, requests)
    return figures


def fenced_patches(store: Any, requests: int) -> float:
    """CPU µs per merge patch through a component's `Fenced` store over `store`."""
    from kai_scheduler.runtime.fence import Fenced

    fenced = Fenced(store)
    for i in range(100):
        fenced.patch("configmaps", NAME, NAMESPACE, {"metadata": {"labels": {"n": str(i)}}})
    start = time.process_time()
    for i in range(requests):
        fenced.patch("configmaps", NAME, NAMESPACE, {"metadata": {"labels": {"n": str(i)}}})
    return (time.process_time() - start) / requests * 1e6


def plain_requests(kubeconfig: str, requests: int) -> dict[str, float]:
    """CPU µs per GET and per merge PATCH of a store without a rate limit."""
    from kai_scheduler.store.kube import KubeOptions, KubeStore

    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NAMESPACE}}
    with KubeStore.connect(kubeconfig, options=KubeOptions(qps=0, user_agent="bench-client-cpu")) as store:
        try:
            store.create(config_map)
        except Exception as err:  # made by an earlier pass
            if "already exists" not in str(err):
                raise
        for i in range(100):  # connection made, code warmed
            store.get("configmaps", NAME, NAMESPACE)
            store.patch("configmaps", NAME, NAMESPACE, {"metadata": {"labels": {"n": str(i)}}})
        start = time.process_time()
        for _ in range(requests):
            store.get("configmaps", NAME, NAMESPACE)
        get = time.process_time() - start
        start = time.process_time()
        for i in range(requests):
            store.patch("configmaps", NAME, NAMESPACE, {"metadata": {"labels": {"n": str(i)}}})
        patch = time.process_time() - start
    return {"GET": get / requests * 1e6, "PATCH": patch / requests * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", help="a source tree (its src/ goes on the path); repeatable")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.requests)))
        return
    from bench_fill import ControlPlane

    trees = [Path(t).resolve() for t in (args.tree or [str(ROOT)])]
    results: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="kai-bench-client-") as tmp, ControlPlane(Path(tmp) / "kube") as plane:
        for _ in range(args.repeat):
            for tree in trees:
                env = {**os.environ, "PYTHONPATH": str(tree / "src")}
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", plane.kubeconfig, "--requests", str(args.requests)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=600,
                )
                results[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"# {tree}: {results[tree][-1]}", flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'tree':<40} {'kind':<12} {'median CPU µs':>14} {'range':>16}")
    for tree, passes in results.items():
        for kind in ("GET", "PATCH", "fenced PATCH"):
            values = [p[kind] for p in passes]
            span = f"{min(values):.0f}–{max(values):.0f}"
            print(f"{str(tree)[-40:]:<40} {kind:<12} {statistics.median(values):>14.0f} {span:>16}")


if __name__ == "__main__":
    main()
