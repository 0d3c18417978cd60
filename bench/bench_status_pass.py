"""The status controllers' first pass over many PodGroups through a real API server: `python
bench/bench_status_pass.py [--podgroups 5000] [--kubeconfig K] [--max-concurrent-reconciles N]`.

A fresh control plane (`../shared/kube/cluster.sh`, etcd and kube-apiserver v1.32 on loopback) gets KAI's CRDs and
default queues, then `--podgroups` PodGroups of one pod each, the pod created already bound (`spec.nodeName`; no
node nor kubelet is needed: the PodGroup status controller counts a pod with a node as allocated). Then `kai
controllers` starts alone (QPS 1,000, burst 2,000, as `bench_scale_real.py` runs `kai run`) and writes every
PodGroup's first status in its first pass. `--max-concurrent-reconciles` is passed on only when given (code from
before the flag reached `kai controllers` refuses it).

Printed: the load average before the controllers start; the seconds from their start until every PodGroup has a
status (polled every 2 s); and the span of the writes themselves, from the first status written to the last, by
the API server's own stamps (`managedFields` of the status subresource, to the second).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_fill import ControlPlane  # noqa: E402
from fill_timeline import Timeline, create_all  # noqa: E402
from tests.e2e import harness  # noqa: E402


def podgroups_with_status(store: Any, namespace: str) -> int:
    """How many PodGroups of `namespace` have the `resourcesStatus` the status controller writes."""
    listed, _ = store.list("podgroups", namespace)
    return sum(1 for g in listed if (g.get("status") or {}).get("resourcesStatus"))


def workload(groups: int) -> list[tuple[str, dict[str, Any]]]:
    items: list[tuple[str, dict[str, Any]]] = []
    for i in range(groups):
        pg = harness.podgroup(f"status-{i}", min_member=1, queue="default-queue")
        pg["spec"].pop("priorityClassName")
        pod = harness.pod(f"status-{i}", gpus=1, group=f"status-{i}")
        pod["spec"]["nodeName"] = f"bench-node-{i // 8}"
        items += [("", pg), (f"status-{i}", pod)]
    return items


def _status_times(kubeconfig: str) -> list[float]:
    """When each PodGroup's status was last written: the API server's managedFields stamp of the status
    subresource (the store drops managedFields; kubectl shows them when asked)."""
    resource = "podgroups.v2alpha2.scheduling.run.ai"
    out = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            kubeconfig,
            "get",
            resource,
            "-n",
            harness.NAMESPACE,
            "-o",
            "json",
            "--show-managed-fields",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    times = []
    for g in json.loads(out.stdout)["items"]:
        stamps = [
            m["time"]
            for m in g["metadata"].get("managedFields") or []
            if m.get("subresource") == "status" and m.get("time")
        ]
        if stamps:
            times.append(max(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in stamps))
    return times


def run(kubeconfig: str, workdir: Path, groups: int, timeout: float, concurrency: int | None) -> dict[str, float]:
    store = harness.connect(kubeconfig)
    harness.install(store, kubeconfig, real=True)
    processes = harness.Processes(kubeconfig, workdir)
    try:
        started = time.monotonic()
        create_all(kubeconfig, workload(groups), Timeline())
        print(f"# {groups} PodGroups and pods created in {time.monotonic() - started:.0f} s", flush=True)
        time.sleep(5)
        load = os.getloadavg()[0]
        flags = ["--qps=1000", "--burst=2000"]
        if concurrency is not None:
            flags.append(f"--max-concurrent-reconciles={concurrency}")
        started = time.monotonic()
        processes.start_component("controllers", *flags)
        deadline = started + timeout
        while True:
            done = podgroups_with_status(store, harness.NAMESPACE)
            if done >= groups:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{done} of {groups} PodGroups with a status after {timeout:.0f} s")
            time.sleep(2)
        elapsed = time.monotonic() - started
        stamps = _status_times(kubeconfig)
        return {"load": load, "elapsed": elapsed, "span": max(stamps) - min(stamps) if stamps else 0.0}
    finally:
        processes.stop_all()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="run on this cluster instead of a fresh control plane")
    parser.add_argument("--podgroups", type=int, default=5000)
    parser.add_argument("--max-concurrent-reconciles", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every status")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kai-bench-status-") as tmp:
        workdir = Path(tmp)
        if args.kubeconfig:
            out = run(args.kubeconfig, workdir, args.podgroups, args.timeout, args.max_concurrent_reconciles)
        else:
            with ControlPlane(workdir / "kube") as plane:
                out = run(plane.kubeconfig, workdir, args.podgroups, args.timeout, args.max_concurrent_reconciles)
    print(
        f"{args.podgroups} PodGroups: every status {out['elapsed']:.0f} s after `kai controllers` started; "
        f"writes from first to last {out['span']:.0f} s ({args.podgroups / max(out['span'], 1):.0f}/s); "
        f"load average {out['load']:.2f} before"
    )


if __name__ == "__main__":
    main()
