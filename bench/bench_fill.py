"""Fill fake GPU nodes through a real kube-apiserver, this project beside upstream kube-scheduler: `python
bench/bench_fill.py`.

For each client-QPS setting and each scheduler a fresh control plane (`../shared/kube/cluster.sh`, etcd and
kube-apiserver v1.32 on loopback) gets 500 `kai fake-nodes` × 8 GPUs and then 4,000 single-GPU pods from a
concurrent creator (4 processes × 8 clients, no client limit: the creator is not the bottleneck; its own
rate is printed).

- `kai`: `kai podgrouper|scheduler|binder|controllers`, one process each, with `--qps/--burst` of the row
  (none given in the `default` row: KAI's 50/300); pods have `schedulerName: kai-scheduler`.
- `kube`: upstream kube-scheduler (`cluster.sh bin kube-scheduler`) with the default profile and
  `clientConnection.qps/burst` of the row (none in the `default` row: its 50/100); pods have
  `schedulerName: default-scheduler`.

`--kai-qps Q --kai-burst B` give this project's components that client setting in every row while
kube-scheduler keeps the row's (e.g. `--qps default --kai-qps 100 --kai-burst 300`: ours at 100/300, kube-scheduler
at its default 50/100); the row is labelled `default (kai 100/300)`.

Printed: pods/s from the first create to the last bind, p50/p99 create-to-bound, CPU-seconds of each process
(the API server and etcd too) and the same per pod in milliseconds (from /proc, during the fill), the ratio to
kube-scheduler at the same setting, and for `kai` the median and p99 of each stage (create → PodGroup →
BindRequest → bound → Running) as a watch in this process saw them.

`--gang 4` submits the pods as gangs of four: by default each gang is a batch Job (suspended, so no Job
controller acts on it) carrying `kai.scheduler/batch-min-member: 4`, its pods owned by it, and the podgrouper
makes the PodGroups (the Jobs are created before the timed pods); `--gang-groups submitter` creates the
PodGroups (minMember 4) before the pods instead, as an operator would, so the podgrouper writes nothing for
them. `--rate 50` offers the pods at a fixed rate instead of all at once (for the latency at a given load),
`--kubeconfig` runs once on any other cluster (nothing started or stopped but the components). `--kai-run` starts
this project's four components as one `kai run` process (one list and watch per resource for all of them) instead
of one process each; its CPU is the `run` column. `--kai-profile PATH` (with `--kai-run`) runs it under
`sample_profile.py`, whose CPU profile of the process's threads goes to PATH (`python bench/sample_profile.py
report PATH` prints it); a PATH ending in `.prof` runs it under `thread_cprofile.py` instead (cProfile, each thread on
its CPU clock; `python bench/thread_cprofile.py report PATH`).

`--ceiling N` first measures, on a fresh control plane of its own, what each request of KAI's protocol costs the
API server and etcd (`bench_request_cost.py`'s as-sent requests, N of each kind, two passes), and ends with a table
of each kai fill against the most pods/s that protocol allows on this box (with the fill's own fake-node CPU per
pod) and against kube-scheduler's fill at the same setting.

To see where the API server's time goes: `--server-profile PATH` saves its Go CPU profile of the first 30 s of
each fill (`PATH.kai`, `PATH.kube`), and `--extra-pod-watchers N` adds N clients that watch every pod and do
nothing (what one more watcher costs the server).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fill_timeline import (  # noqa: E402
    STAGES,
    IdleWatcher,
    Timeline,
    Watcher,
    create_all,
    percentile,
    profile_server,
    server_requests,
)
from tests import children  # noqa: E402
from tests.e2e import harness  # noqa: E402  (the same process harness as the e2e suite)
from tests.loopback import free_port  # noqa: E402

COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")
RUN = "run"  # with --kai-run: the four components as one `kai run` process
SCHEDULER_SIDE = (*COMPONENTS, RUN, "kube-scheduler")  # the processes whose CPU and memory are the scheduler's
CLUSTER = ROOT.parent / "shared" / "kube" / "cluster.sh"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux /proc), in seconds; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class ControlPlane:
    """A fresh etcd + kube-apiserver in its own run directory, stopped on exit."""

    def __init__(self, run_dir: Path) -> None:
        self.env = {**os.environ, "KAI_KUBE_RUN": str(run_dir)}
        self.run_dir = run_dir

    def __enter__(self) -> ControlPlane:
        out = subprocess.run([str(CLUSTER), "start"], env=self.env, capture_output=True, text=True, check=True)
        self.kubeconfig = out.stdout.strip().splitlines()[-1]
        return self

    def pids(self) -> dict[str, int]:
        return {name: int((self.run_dir / f"{name}.pid").read_text()) for name in ("apiserver", "etcd")}

    def __exit__(self, *exc: object) -> None:
        subprocess.run([str(CLUSTER), "stop"], env=self.env, capture_output=True, check=False)


def kube_scheduler_config(workdir: Path, kubeconfig: str, qps: int | None) -> Path:
    client = f"  kubeconfig: {kubeconfig}\n"
    if qps is not None:
        client += f"  qps: {qps}\n  burst: {2 * qps}\n"
    path = workdir / "kube-scheduler.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection:\n{client}leaderElection:\n  leaderElect: false\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    return path


def workload(
    pods: int, gang: int, scheduler_name: str, jobs: dict[str, dict[str, Any]] | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(pod name or "" for a PodGroup, object) in submission order. With `jobs` (gang name → the created Job)
    each gang's pods are owned by its Job and the podgrouper groups them."""
    for first in range(0, pods, gang):
        names = [f"fill-{i}" for i in range(first, min(first + gang, pods))]
        group = ""
        if jobs is not None and gang > 1:
            for name in names:
                pod = harness.pod(name, gpus=1, owner=jobs[f"gang-{first // gang}"])
                pod["spec"]["schedulerName"] = scheduler_name
                yield name, pod
            continue
        if gang > 1:
            group = f"gang-{first // gang}"
            pg = harness.podgroup(group, min_member=len(names), queue="default-queue")
            pg["spec"].pop("priorityClassName")
            pg["metadata"]["labels"]["bench/pods"] = ".".join(names)
            yield "", pg
        for name in names:
            pod = harness.pod(name, gpus=1, group=group)
            pod["spec"]["schedulerName"] = scheduler_name
            yield name, pod


def gang_jobs(store: Any, pods: int, gang: int) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """One suspended batch Job per gang with `kai.scheduler/batch-min-member`, created now (their uids go in
    the pods' owner references); also each Job's pod names, for the timeline."""
    members = {
        f"gang-{first // gang}": [f"fill-{i}" for i in range(first, min(first + gang, pods))]
        for first in range(0, pods, gang)
    }

    def create(name: str) -> tuple[str, dict[str, Any]]:
        job = harness.suspended_job(name, "default-queue")
        job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": str(len(members[name]))}
        return name, store.create(job)

    with ThreadPoolExecutor(16) as pool:
        return dict(pool.map(create, members)), members


def run(
    kubeconfig: str,
    scheduler: str,
    *,
    pods: int,
    nodes: int,
    qps: int | None,
    gang: int,
    rate: float,
    workdir: Path,
    server: dict[str, int],
    gang_groups: str = "podgrouper",
    extra_watchers: int = 0,
    profile: str = "",
    kai_limits: tuple[int, int] | None = None,
    kai_run: bool = False,
    kai_profile: str = "",
) -> dict[str, Any]:
    store = harness.connect(kubeconfig)
    harness.install(store, kubeconfig, real=True)
    processes = harness.Processes(kubeconfig, workdir)
    try:
        start_fake_nodes(processes, nodes)
        cluster = harness.Cluster(store, processes, "bench-node")
        cluster.wait(f"{nodes} schedulable nodes", lambda: _schedulable(store) >= nodes, timeout=600)
        if scheduler == "kai":
            limits: tuple[str, ...] = () if qps is None else (f"--qps={qps}", f"--burst={2 * qps}")
            if kai_limits is not None:
                limits = (f"--qps={kai_limits[0]}", f"--burst={kai_limits[1]}")
            for component in (RUN,) if kai_run else COMPONENTS:
                if kai_profile:
                    wrapper = "thread_cprofile.py" if kai_profile.endswith(".prof") else "sample_profile.py"
                    start_through(processes, [wrapper, kai_profile], component, *limits)
                else:
                    processes.start_component(component, *limits)
        else:
            config = kube_scheduler_config(workdir, kubeconfig, qps)
            binary = subprocess.run(
                [str(CLUSTER), "bin", "kube-scheduler"], capture_output=True, text=True, check=True
            ).stdout.strip()
            log = open(workdir / "kube-scheduler.log", "ab")  # noqa: SIM115 - the child owns it
            processes.running["kube-scheduler"] = subprocess.Popen(
                [binary, f"--config={config}", "--secure-port=0", "-v=1"], stdout=log, stderr=subprocess.STDOUT
            )
        jobs, members = gang_jobs(store, pods, gang) if gang > 1 and gang_groups == "podgrouper" else (None, {})
        time.sleep(5)  # the components have listed and are idle
        pids = {name: p.pid for name, p in processes.running.items()} | server
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        requests_before = server_requests(kubeconfig)
        timeline = Timeline()
        watcher = Watcher(kubeconfig, harness.NAMESPACE, timeline, owned=members)
        idle = [IdleWatcher(kubeconfig, "pods") for _ in range(extra_watchers)]
        time.sleep(1)
        started = time.monotonic()
        profiling = profile_server(kubeconfig, f"{profile}.{scheduler}", 30) if profile else None
        scheduler_name = "kai-scheduler" if scheduler == "kai" else "default-scheduler"
        create_seconds = create_all(kubeconfig, workload(pods, gang, scheduler_name, jobs), timeline, rate=rate)
        cluster.wait(f"{pods} pods bound", lambda: timeline.count("bound") >= pods, timeout=3600, every=0.2)
        out: dict[str, Any] = {
            "cpu": {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()},
            "rss": {name: rss_bytes(pid) for name, pid in pids.items()},
        }
        requests_after = server_requests(kubeconfig)
        per_pod = {key: (n - requests_before.get(key, 0.0)) / pods for key, n in requests_after.items()}
        out["requests"] = {
            f"{verb} {res}": n
            for (verb, res), n in sorted(per_pod.items(), key=lambda kv: -kv[1])
            if n >= 0.05 and verb != "WATCH"
        }
        cluster.wait(f"{pods} pods running", lambda: timeline.count("running") >= pods, timeout=120, every=0.2)
        watcher.close()
        if profiling is not None:
            profiling.join()
        for one in idle:
            one.close()
        first, last = timeline.first("created"), timeline.last("bound")
        to_bound = timeline.gaps("created", "bound")
        out |= {
            "pods_per_second": pods / (last - first),
            "wall": last - first,
            "create_seconds": create_seconds,
            "create_rate": pods / create_seconds,
            "p50": percentile(to_bound, 50),
            "p99": percentile(to_bound, 99),
            "stages": {
                f"{a}→{b}": (percentile(timeline.gaps(a, b), 50), percentile(timeline.gaps(a, b), 99))
                for a, b in itertools.pairwise(STAGES)
                if timeline.gaps(a, b)
            },
            "started": started,
            "pods": pods,
        }
    finally:
        processes.stop_all()
        store.close()
    out["limiter"] = _limiter_waits(workdir)
    return out


def start_through(
    processes: harness.Processes, wrapper: list[str], component: str, *flags: str, name: str = ""
) -> None:
    """Start a component as `processes.start_component` does, its `kai` command run by the bench script
    `wrapper[0]` with the arguments `wrapper[1:]` before the command's own (`request_ledger.py`,
    `sample_profile.py`, `cycle_log.py`); `name`: the process's name (default the component's)."""
    extra = (f"--plugin-server-port={free_port()}",) if component in ("scheduler", RUN) else ()
    command = [
        sys.executable,
        str(ROOT / "bench" / wrapper[0]),
        *wrapper[1:],
        "-v",
        component,
        f"--listen-address=127.0.0.1:{free_port()}",
        *harness.COMPONENT_FLAGS.get(component, ()),
        *extra,
        *flags,
        "--kubeconfig",
        processes.kubeconfig,
    ]
    log = open(processes.logs / f"{name or component}.log", "ab")  # noqa: SIM115 - the child owns it
    processes.running[name or component] = children.spawn(command, stdout=log, stderr=subprocess.STDOUT)


def start_fake_nodes(processes: harness.Processes, nodes: int, *flags: str) -> None:
    """`kai fake-nodes` playing `nodes` 8-GPU nodes named bench-node-N, with a client that never waits."""
    processes.start(
        "fake-nodes",
        "fake-nodes",
        "--count",
        str(nodes),
        "--gpus",
        "8",
        "--prefix",
        "bench-node",
        "--qps",
        "1000",
        "--burst",
        "2000",
        *flags,
    )


def _schedulable(store: Any) -> int:
    nodes, _ = store.list("nodes")
    return sum(1 for n in nodes if not any(t.get("effect") == "NoSchedule" for t in n["spec"].get("taints") or ()))


def _limiter_waits(workdir: Path) -> dict[str, str]:
    """What each component's client rate limiter made it wait, from its shutdown log line."""
    out = {}
    for component in (*COMPONENTS, RUN):
        path = workdir / f"{component}.log"
        if path.exists():
            lines = [line for line in path.read_text(errors="replace").splitlines() if "client rate limiter" in line]
            if lines:
                text = lines[-1].split("client rate limiter", 1)[1]
                out[component] = text.split(" requests=", 1)[0].strip(" :")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="run once on this cluster instead of fresh control planes")
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument(
        "--qps",
        nargs="*",
        default=["default", "1000"],
        help="client QPS settings, each on its own cluster ('default': each scheduler's own)",
    )
    parser.add_argument(
        "--kai-qps",
        type=int,
        help="this project's components get this client QPS in every row (kube-scheduler keeps the row's)",
    )
    parser.add_argument("--kai-burst", type=int, help="with --kai-qps: their burst (default: 2 × --kai-qps)")
    parser.add_argument("--schedulers", nargs="*", default=["kai", "kube"], choices=["kai", "kube"])
    parser.add_argument("--gang", type=int, default=1, help="pods per gang (a PodGroup with that minMember)")
    parser.add_argument(
        "--gang-groups",
        choices=["podgrouper", "submitter"],
        default="podgrouper",
        help="who makes a gang's PodGroup: the podgrouper (from a batch Job) or the submitter",
    )
    parser.add_argument("--rate", type=float, default=0.0, help="offered pods/s (default: as fast as possible)")
    parser.add_argument("--runs", type=int, default=1, help="repeat each row this many times")
    parser.add_argument(
        "--server-profile",
        metavar="PATH",
        default="",
        help="write the API server's CPU profile of the first 30 s of the fill to PATH.kai|kube",
    )
    parser.add_argument(
        "--extra-pod-watchers",
        type=int,
        default=0,
        help="this many more clients watching every pod and doing nothing (what a watcher costs)",
    )
    parser.add_argument(
        "--kai-run",
        action="store_true",
        help="this project's components as one `kai run` process instead of four",
    )
    parser.add_argument(
        "--ceiling",
        type=int,
        default=0,
        metavar="REQUESTS",
        help="first measure the protocol's ceiling on this box (bench_request_cost.py's as-sent variant, twice, this "
        "many requests of each kind) and print each fill against it",
    )
    parser.add_argument(
        "--kai-profile",
        metavar="PATH",
        default="",
        help="with --kai-run: sample the process's CPU by stack into PATH (bench/sample_profile.py); a PATH ending "
        "in .prof: cProfile each thread on its CPU clock instead (bench/thread_cprofile.py)",
    )
    args = parser.parse_args()
    if args.kai_burst is not None and args.kai_qps is None:
        parser.error("--kai-burst needs --kai-qps")
    kai_limits = None if args.kai_qps is None else (args.kai_qps, args.kai_burst or 2 * args.kai_qps)
    from rich.console import Console
    from rich.table import Table

    sent = _protocol_costs(args.ceiling, args.nodes) if args.ceiling and not args.kubeconfig else None
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for setting in args.qps:
        qps = None if setting == "default" else int(setting)
        for scheduler in args.schedulers:
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="kai-bench-fill-") as tmp:
                    workdir = Path(tmp)
                    kwargs = {
                        "pods": args.pods,
                        "nodes": args.nodes,
                        "qps": qps,
                        "gang": args.gang,
                        "rate": args.rate,
                        "workdir": workdir,
                        "gang_groups": args.gang_groups,
                        "extra_watchers": args.extra_pod_watchers,
                        "profile": args.server_profile,
                        "kai_limits": kai_limits if scheduler == "kai" else None,
                        "kai_run": args.kai_run,
                        "kai_profile": args.kai_profile,
                    }
                    if args.kubeconfig:
                        result = run(args.kubeconfig, scheduler, server={}, **kwargs)
                    else:
                        with ControlPlane(workdir / "kube") as plane:
                            result = run(plane.kubeconfig, scheduler, server=plane.pids(), **kwargs)
                label = setting
                if scheduler == "kai" and kai_limits is not None:
                    label = f"{setting} (kai {kai_limits[0]}/{kai_limits[1]})"
                rows.append((setting, scheduler, result | {"label": label}))
                _print_row(label, scheduler, result)
    console = Console(width=200)
    what = f"gangs of {args.gang} (PodGroups by the {args.gang_groups})" if args.gang > 1 else "single-GPU pods"
    offered = f", offered at {args.rate:g} pods/s" if args.rate else ""
    table = Table(title=f"{args.pods:,} {what} onto {args.nodes} fake nodes x 8 GPUs{offered}")
    processes = ["apiserver", "etcd", *COMPONENTS, *([RUN] if args.kai_run else []), "kube-scheduler", "fake-nodes"]
    for col in (
        "QPS",
        "scheduler",
        "pods/s",
        "ratio",
        "p50 s",
        "p99 s",
        "wall s",
        "creator pods/s",
        *(f"{n} cpu s" for n in processes),
        "RSS MiB (scheduler side)",
    ):
        table.add_column(col, justify="right")
    kube_rate = {s: r["pods_per_second"] for s, sched, r in rows if sched == "kube"}
    for setting, scheduler, r in rows:
        ratio = r["pods_per_second"] / kube_rate[setting] if setting in kube_rate else float("nan")
        rss = sum(r["rss"].get(n, 0) for n in SCHEDULER_SIDE) / 2**20
        table.add_row(
            r["label"],
            scheduler,
            f"{r['pods_per_second']:.1f}",
            f"{ratio:.2f}",
            f"{r['p50']:.2f}",
            f"{r['p99']:.2f}",
            f"{r['wall']:.1f}",
            f"{r['create_rate']:.0f}",
            *(f"{r['cpu'][n]:.1f}" if n in r["cpu"] else "" for n in processes),
            f"{rss:.0f}",
        )
    console.print(table)
    stages = Table(title="stages (kai): median / p99 seconds")
    stages.add_column("QPS")
    for a, b in itertools.pairwise(STAGES):
        stages.add_column(f"{a}→{b}", justify="right")
    stages.add_column("client rate-limiter waits")
    for _setting, scheduler, r in rows:
        if scheduler == "kai":
            cells = [
                f"{r['stages'][f'{a}→{b}'][0]:.2f} / {r['stages'][f'{a}→{b}'][1]:.2f}"
                if f"{a}→{b}" in r["stages"]
                else ""
                for a, b in itertools.pairwise(STAGES)
            ]
            stages.add_row(r["label"], *cells, "; ".join(f"{k}: {v}" for k, v in r["limiter"].items()))
    console.print(stages)
    if sent is not None:
        console.print(_against_ceiling(rows, sent))


def _protocol_costs(requests: int, nodes: int) -> list[Any]:
    """The API server's and etcd's CPU per request of KAI's protocol on this box now (two passes)."""
    import bench_request_cost

    return bench_request_cost.measure(["as-sent"], requests, 16, nodes, repeat=2, idle_seconds=5)["as-sent"]


def _against_ceiling(rows: list[tuple[str, str, dict[str, Any]]], sent: list[Any]) -> Any:
    """Each kai fill against the most pods/s KAI's protocol allows on this box (measured in this run, with the
    fill's own fake-node CPU per pod), and against kube-scheduler's fill at the same setting."""
    import statistics

    import bench_request_cost
    from rich.table import Table

    cores = float(os.cpu_count() or 2)
    table = Table(title=f"kai's fills against the protocol's ceiling on {cores:g} cores (measured in this run)")
    columns = ("QPS", "pods/s", "ceiling pods/s", "fill / ceiling", "kube-scheduler pods/s", "kai / kube", "ours ms")
    for col in columns:
        table.add_column(col, justify="right")
    kube = {s: r["pods_per_second"] for s, sched, r in rows if sched == "kube"}
    for setting, scheduler, r in rows:
        if scheduler != "kai":
            continue
        fake_ms = 1000 * r["cpu"].get("fake-nodes", 0.0) / r["pods"]
        c = bench_request_cost.ceiling(sent, cores, fake_ms)
        slow, fast = c.kai_rates
        rate = r["pods_per_second"]
        ours = sum(1000 * r["cpu"].get(n, 0.0) / r["pods"] for n in SCHEDULER_SIDE)
        table.add_row(
            r["label"],
            f"{rate:.1f}",
            f"{slow:.0f}–{fast:.0f}",
            f"{rate / fast:.2f}–{rate / slow:.2f}",
            f"{kube[setting]:.1f}" if setting in kube else "",
            f"{rate / kube[setting]:.2f}" if setting in kube else "",
            f"{ours:.2f}",
        )
    medians = [statistics.median(m[k].per(bench_request_cost.server_of(m[k])) for m in sent) for k in sent[0]]
    table.caption = f"API server + etcd ms per request, median of each kind: {', '.join(f'{v:.2f}' for v in medians)}"
    return table


def _print_row(setting: str, scheduler: str, r: dict[str, Any]) -> None:
    cpu = " ".join(f"{k}={v:.1f}" for k, v in r["cpu"].items())
    print(
        f"# qps={setting} {scheduler}: {r['pods_per_second']:.1f} pods/s wall {r['wall']:.1f}s p50 {r['p50']:.2f}"
        f" p99 {r['p99']:.2f} creator {r['create_rate']:.0f}/s cpu {cpu} stages {r['stages']}"
        f" limiter {r['limiter']}",
        flush=True,
    )
    print("#   API requests per pod: " + ", ".join(f"{k} {v:.2f}" for k, v in r["requests"].items()), flush=True)
    per_pod = {k: 1000 * v / r["pods"] for k, v in r["cpu"].items()}
    ours = sum(per_pod.get(c, 0.0) for c in SCHEDULER_SIDE)
    print(
        "#   CPU ms per pod: "
        + ", ".join(f"{k} {v:.2f}" for k, v in per_pod.items())
        + f"; scheduler side in all {ours:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
