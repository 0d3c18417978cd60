"""Fill 500 fake nodes with 4,000 single-GPU pods end to end through an API server: `python bench/bench_fill.py`.

KAI's daily scale test times this fill at about 6.5 minutes (BEHAVIOR.md §10); upstream kube-scheduler on a
2-core machine with a loopback kube-apiserver binds about 50 pods/s at its default client QPS and about 300
pods/s with QPS 1,000. Here every part is a real process talking HTTP:

- the API server: a kube-apiserver named by `--kubeconfig`, else the project's mock API server
  (tests/store/mock_apiserver.py, Python, in its own process; it is not kube-apiserver, so its share of the
  time says little about a real one);
- `kai fake-nodes --count 500 --gpus 8` (nodes, and the kubelet that starts bound pods);
- `kai podgrouper`, `kai scheduler`, `kai binder`, `kai controllers`, one process each, with `--qps/--burst`
  of the run.

The benchmark creates the pods (bare pods: the podgrouper makes one PodGroup each, as for 4,000 one-pod Jobs)
as fast as it can, then waits until every pod is bound. It prints pods bound per second from the first
create, the wall time, and the CPU seconds each process used, so one sees where the time goes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e import harness  # noqa: E402  (the same process harness as the e2e suite)

COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(kubeconfig: str, *, pods: int, nodes: int, qps: int, burst: int, logs: Path,
        server_pid: int | None) -> dict[str, float]:
    store = harness.connect(kubeconfig)
    harness.install(store, kubeconfig, real=server_pid is None)
    processes = harness.Processes(kubeconfig, logs)
    limits = (f"--qps={qps}", f"--burst={burst}")
    processes.start("fake-nodes", "fake-nodes", "--count", str(nodes), "--gpus", "8", "--prefix", "bench-node",
                    "--qps", str(max(qps, 1000)), "--burst", str(max(burst, 2000)))
    cluster = harness.Cluster(store, processes, "bench-node")
    cluster.wait(f"{nodes} nodes", lambda: len(store.list("nodes")[0]) >= nodes, timeout=300)
    for component in COMPONENTS:
        processes.start_component(component, *limits)
    time.sleep(3)       # the components have listed and are idle
    before = {name: cpu_seconds(p.pid) for name, p in processes.running.items()}
    server_before = cpu_seconds(server_pid) if server_pid else 0.0
    started = time.monotonic()
    for i in range(pods):
        store.create(harness.pod(f"fill-{i}", gpus=1))
    created = time.monotonic() - started
    cluster.wait(f"{pods} pods bound", lambda: len(cluster.bound("e2e=true")) >= pods, timeout=3600, every=1.0)
    seconds = time.monotonic() - started
    out = {"pods": float(pods), "seconds": seconds, "create_seconds": created, "pods_per_second": pods / seconds}
    for name, proc in processes.running.items():
        out[f"cpu_{name}"] = cpu_seconds(proc.pid) - before[name]
    if server_pid:
        out["cpu_apiserver"] = cpu_seconds(server_pid) - server_before
    processes.stop_all()
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="a real cluster (default: the mock API server in a child process)")
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--qps", type=int, nargs="*", default=[50, 1000], help="client QPS of each run")
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    rows = []
    for qps in args.qps:
        burst = 300 if qps <= 50 else 2 * qps
        with tempfile.TemporaryDirectory() as tmp:
            if args.kubeconfig:
                rows.append((qps, run(args.kubeconfig, pods=args.pods, nodes=args.nodes, qps=qps, burst=burst,
                                      logs=Path(tmp), server_pid=None)))
            else:
                server, kubeconfig = start_mock(Path(tmp))
                try:
                    rows.append((qps, run(kubeconfig, pods=args.pods, nodes=args.nodes, qps=qps, burst=burst,
                                          logs=Path(tmp), server_pid=server.pid)))
                finally:
                    assert server.stdin is not None
                    server.stdin.close()
                    server.wait(timeout=30)
    table = Table(title=f"{args.pods:,} single-GPU pods onto {args.nodes} fake nodes x 8 GPUs")
    names = ["apiserver", *COMPONENTS, "fake-nodes"]
    for col in ("client QPS", "bound/s", "wall s", "create s", *(f"{n} cpu s" for n in names)):
        table.add_column(col, justify="right")
    for qps, r in rows:
        table.add_row(str(qps), f"{r['pods_per_second']:.1f}", f"{r['seconds']:.1f}", f"{r['create_seconds']:.1f}",
                      *(f"{r.get(f'cpu_{n}', float('nan')):.1f}" for n in names))
    Console(width=160).print(table)


def start_mock(workdir: Path) -> tuple[object, str]:
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    empty = workdir / "empty.jsonl"
    empty.write_text("")
    server = subprocess.Popen([sys.executable, "-m", "tests.store.mock_apiserver", "--load", str(empty)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    return server, harness.write_kubeconfig(workdir / "kubeconfig", url)


if __name__ == "__main__":
    main()
