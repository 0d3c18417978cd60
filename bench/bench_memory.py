"""Memory of the four components at 5,000 nodes and 40,000 pods through a real API server: `python
bench/bench_memory.py [--nodes 5000] [--pods 40000] [--kubeconfig K]`.

A fresh control plane (`../shared/kube/cluster.sh`, etcd and kube-apiserver v1.32 on loopback) gets `kai
fake-nodes` × 8 GPUs and this project's four components (`kai podgrouper|scheduler|binder|controllers`, QPS
1,000). Then the pods are created already bound, one GPU each, eight to a node, in gangs of four whose
PodGroups the submitter creates first (minMember 4) and the pods name: the fill is not what is measured, and
the podgrouper writes nothing for them. The components still list and watch everything, the scheduler builds
its snapshot of every node, pod and PodGroup each cycle, the controllers write every PodGroup's status and the
fake kubelet starts every pod.

Printed: RSS and peak RSS (VmHWM) of each component when every pod is Running and every PodGroup has its
status (or after `--timeout`, saying so), and the sum against the 2 GiB target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_fill import COMPONENTS, ControlPlane, _schedulable, cpu_seconds, start_fake_nodes  # noqa: E402
from fill_timeline import Timeline, create_all  # noqa: E402
from tests.e2e import harness  # noqa: E402

TARGET_GIB = 2.0


def memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in bytes; zeros once it is gone."""
    out = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key = line.split(" ", 1)[0].split("\t", 1)[0]
            if key in out:
                out[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out["VmRSS:"], out["VmHWM:"]


def workload(nodes: int, pods: int, gang: int = 4) -> list[tuple[str, dict[str, Any]]]:
    items: list[tuple[str, dict[str, Any]]] = []
    for first in range(0, pods, gang):
        names = [f"mem-{i}" for i in range(first, min(first + gang, pods))]
        group = f"gang-{first // gang}"
        pg = harness.podgroup(group, min_member=len(names), queue="default-queue")
        pg["spec"].pop("priorityClassName")
        items.append(("", pg))
        for name in names:
            pod = harness.pod(name, gpus=1, group=group)
            pod["spec"]["nodeName"] = f"bench-node-{int(name.split('-')[1]) // 8 % nodes}"
            items.append((name, pod))
    return items


def run(kubeconfig: str, workdir: Path, nodes: int, pods: int, timeout: float) -> dict[str, Any]:
    store = harness.connect(kubeconfig)
    harness.install(store, kubeconfig, real=True)
    processes = harness.Processes(kubeconfig, workdir)
    try:
        # One kubelet plays every node, renewing leases one write at a time: at 5,000 nodes a 10 s period would
        # leave it no time for the pods.
        start_fake_nodes(processes, nodes, "--heartbeat-period", "120s")
        cluster = harness.Cluster(store, processes, "bench-node")
        started = time.monotonic()
        cluster.wait(f"{nodes} schedulable nodes", lambda: _schedulable(store) >= nodes, timeout=1800, every=5)
        print(f"# {nodes} nodes ready after {time.monotonic() - started:.0f} s", flush=True)
        for component in COMPONENTS:
            processes.start_component(component, "--qps=1000", "--burst=2000")
        time.sleep(5)
        started = time.monotonic()
        create_all(kubeconfig, workload(nodes, pods), Timeline())
        print(f"# {pods} pods created in {time.monotonic() - started:.0f} s", flush=True)

        def settled() -> bool:
            listed, _ = store.list("pods", harness.NAMESPACE)
            running = sum(1 for p in listed if (p.get("status") or {}).get("phase") == "Running")
            groups, _ = store.list("podgroups", harness.NAMESPACE)
            with_status = sum(
                1 for g in groups if ((g.get("status") or {}).get("resourcesStatus") or {}).get("allocated")
            )
            print(f"#   {running} running, {with_status} PodGroups with a status", flush=True)
            return running >= pods and with_status >= len(groups)

        pids = {name: p.pid for name, p in processes.running.items()}
        try:
            cluster.wait("every pod Running and every PodGroup's status", settled, timeout=timeout, every=30)
            print(f"# settled after {time.monotonic() - started:.0f} s", flush=True)
        except AssertionError:
            print(f"# not settled after {timeout:.0f} s: measured as it is", flush=True)
        time.sleep(10)  # a few idle scheduler cycles over the full cluster
        return {name: (*memory(pid), cpu_seconds(pid)) for name, pid in pids.items()}
    finally:
        processes.stop_all()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="run on this cluster instead of a fresh control plane")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=40000)
    parser.add_argument(
        "--timeout", type=float, default=1200, help="seconds to wait for every pod Running before measuring anyway"
    )
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    with tempfile.TemporaryDirectory(prefix="kai-bench-memory-") as tmp:
        workdir = Path(tmp)
        if args.kubeconfig:
            result = run(args.kubeconfig, workdir, args.nodes, args.pods, args.timeout)
        else:
            with ControlPlane(workdir / "kube") as plane:
                result = run(plane.kubeconfig, workdir, args.nodes, args.pods, args.timeout)
    table = Table(title=f"{args.pods:,} bound pods on {args.nodes:,} fake nodes x 8 GPUs, through a real API server")
    for col in ("process", "RSS MiB", "peak RSS MiB", "CPU s"):
        table.add_column(col, justify="right")
    for name in (*COMPONENTS, "fake-nodes"):
        rss, peak, cpu = result[name]
        table.add_row(name, f"{rss / 2**20:.0f}", f"{peak / 2**20:.0f}", f"{cpu:.0f}")
    rss = sum(result[n][0] for n in COMPONENTS) / 2**30
    peak = sum(result[n][1] for n in COMPONENTS) / 2**30
    table.add_row("four components", f"{rss * 1024:.0f}", f"{peak * 1024:.0f}", "")
    Console(width=160).print(table)
    verdict = "met" if peak <= TARGET_GIB else "NOT met"
    print(f"four components: {rss:.2f} GiB now, {peak:.2f} GiB at peak; target <= {TARGET_GIB} GiB: {verdict}")


if __name__ == "__main__":
    main()
