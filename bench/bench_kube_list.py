"""Decode and cache a 90,000-pod LIST through the API store: `python bench/bench_kube_list.py` prints a table.

KAI's 1000-node sizing profile: 90,000 pods of about 2 KB of JSON each, served by the mock API server
(tests/store/mock_apiserver.py, in its own process so its memory and CPU are not counted) over loopback HTTP
in pages of 500. Each measurement runs in a fresh child process, so its peak RSS is its own:

- `list`: `KubeStore.list("pods")`: HTTP, orjson decoding, the list-item normalisation;
- `cache`: `ObjectCache(store, ["pods"]).sync()`: the same LIST, then every pod parsed into a typed `Pod`
  (the figure the target is about: ≤ 5 s and ≤ 1.5 GiB);
- `cache, GC paused`: the same with the cyclic garbage collector paused by the caller during the fill,
  to show what the collector costs while 90,000 objects are built;
- `relist`: on a filled cache, the relist a watch's `410 Gone` triggers; pods whose resourceVersion did not
  change keep their parsed object, so this is the stall a running scheduler sees.

Columns: wall seconds; the child's own CPU seconds (the machine may be shared; the server's CPU is not in
it); "peak RSS": growth of max RSS during the step; "heap kept" and "heap peak": Python heap held after the
step (the cache itself) and at its peak, from tracemalloc in a separate run (tracemalloc slows the fill, so
its time is not reported). RSS after the step is not a measure of the cache: freed decoded JSON stays in the
allocator's arenas.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_GIB = 5.0, 1.5
MODES = {
    "list": "list: HTTP + decode",
    "cache": "cache fill: list + parse",
    "cache-gc-paused": "cache fill, GC paused",
    "relist": "relist after 410 Gone (filled cache)",
}


def make_pod(i: int) -> dict[str, Any]:
    """A running PyTorchJob worker as `kubectl get pod -o json` shows it (less managedFields): ~2 KB."""
    job, ns = f"train-{i // 8:05d}", f"team-{i % 40:02d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{i % 8}",
            "namespace": ns,
            "uid": f"{i:08x}-1f2e-4c3d-9a8b-{i * 7919 % 10**12:012x}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "app": job,
                "kai.scheduler/queue": f"queue-{i % 40}",
                "training.kubeflow.org/job-name": job,
                "training.kubeflow.org/replica-type": "worker",
            },
            "annotations": {"pod-group-name": f"pg-{job}"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": job,
                    "uid": f"{i // 8:08x}-aaaa-4bbb-8ccc-000000000000",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "priorityClassName": "train",
            "nodeName": f"gpu-node-{i % 1000:04d}",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default",
            "containers": [
                {
                    "name": "pytorch",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "command": ["torchrun", "--nnodes=4", "--nproc-per-node=1", "/workspace/train.py"],
                    "env": [
                        {"name": "MASTER_ADDR", "value": f"{job}-master-0"},
                        {"name": "WORLD_SIZE", "value": "8"},
                        {"name": "RANK", "value": str(i % 8)},
                    ],
                    "resources": {
                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                        "limits": {"memory": "16Gi", "nvidia.com/gpu": "1"},
                    },
                    "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}],
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "dnsPolicy": "ClusterFirst",
            "priority": 50,
        },
        "status": {
            "phase": "Running",
            "hostIP": f"10.0.{i % 250}.{i % 200}",
            "podIP": f"10.244.{i % 250}.{i % 250}",
            "startTime": "2026-01-01T00:00:05Z",
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:07Z"}},
                }
            ],
        },
    }


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(mode: str, url: str, page_size: int, heap: bool) -> dict[str, float]:
    """One step in this (child) process; see the module docstring."""
    from kubernetes.client import ApiClient, Configuration

    from kai_scheduler.store.cache import ObjectCache
    from kai_scheduler.store.kube import KubeOptions, KubeStore

    store = KubeStore(ApiClient(Configuration(host=url)), KubeOptions(page_size=page_size, qps=0))
    cache = ObjectCache(store, ["pods"])
    gc.collect()
    if heap:
        tracemalloc.start()
    if mode == "relist":
        cache.sync()  # filled first, untimed; the relist below is what a watch answering 410 Gone runs
    base_max = max_rss_mib()
    started, cpu = time.perf_counter(), time.process_time()
    if mode == "relist":
        cache.relist("pods")  # the informer lists again and the cache takes the whole resource in
        cache.sync()
        count = len(cache.objects("pods"))
    elif mode == "list":
        items, _ = store.list("pods")
        count = len(items)
        del items
    else:
        if mode == "cache-gc-paused":
            gc.disable()
        cache.sync()
        gc.enable()
        count = len(cache.objects("pods"))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory() if heap else (0, 0)
    return {
        "pods": count,
        "seconds": seconds,
        "cpu": cpu,
        "peak_rss_mib": max_rss_mib() - base_max,
        "heap_kept_mib": kept / 2**20,
        "heap_peak_mib": peak / 2**20,
    }


def serve(pods: int, workdir: Path) -> tuple[subprocess.Popen[str], str, float]:
    """Start the mock API server loaded with `pods` pods; return it, its URL and the mean pod size."""
    path = workdir / "pods.jsonl"
    total = 0
    with open(path, "wb") as out:
        for i in range(pods):
            line = orjson.dumps(make_pod(i))
            total += len(line)
            out.write(line + b"\n")
    server, url = start_mock_apiserver("--load", str(path))
    return server, url, total / pods


def start_mock_apiserver(*args: str) -> tuple[subprocess.Popen[str], str]:
    """tests/store/mock_apiserver.py in a process of its own (its CPU and memory not counted here), this tree's
    code first on its path; return it and its URL."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.store.mock_apiserver", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        server.kill()
        raise SystemExit(f"the mock API server did not start: {url!r}")
    return server, url


def warm_up(url: str) -> None:
    """One small LIST, so that the server has built its snapshot (as a real server's watch cache has)."""
    from kubernetes.client import ApiClient, Configuration

    from kai_scheduler.store.kube import KubeOptions, KubeStore

    with KubeStore(ApiClient(Configuration(host=url)), KubeOptions(page_size=1)) as store:
        store.transport.call("GET", "/api/v1/pods", query=[("limit", "1")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=90_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--child", choices=sorted(MODES), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--heap", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.url, args.page_size, args.heap)))
        return
    from rich.console import Console
    from rich.table import Table

    with tempfile.TemporaryDirectory() as tmp:
        server, url, mean_size = serve(args.pods, Path(tmp))
        try:
            warm_up(url)
            rows = {mode: _child(mode, url, args.page_size) for mode in MODES}
            for mode in ("list", "cache"):
                traced = _child(mode, url, args.page_size, heap=True)
                rows[mode].update(heap_kept_mib=traced["heap_kept_mib"], heap_peak_mib=traced["heap_peak_mib"])
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)
    table = Table(title=f"LIST of {args.pods:,} pods (~{mean_size:,.0f} B each) in pages of {args.page_size}")
    for col in ("step", "pods", "wall s", "cpu s", "pods/s", "peak RSS MiB", "heap peak MiB", "heap kept MiB"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for mode, r in rows.items():
        heap = [f"{r[k]:,.0f}" if r[k] else "-" for k in ("heap_peak_mib", "heap_kept_mib")]
        table.add_row(
            MODES[mode],
            f"{r['pods']:,.0f}",
            f"{r['seconds']:.2f}",
            f"{r['cpu']:.2f}",
            f"{r['pods'] / r['seconds']:,.0f}",
            f"{r['peak_rss_mib']:,.0f}",
            *heap,
        )
    Console(width=140).print(table)
    Console().print(f"target for the cache fill: ≤ {TARGET_S:g} s and ≤ {TARGET_GIB:g} GiB")


def _child(mode: str, url: str, page_size: int, heap: bool = False) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", mode, "--url", url, "--page-size", str(page_size)]
    out = subprocess.run(
        [*command, "--heap"] if heap else command, capture_output=True, text=True, check=True, cwd=ROOT
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
