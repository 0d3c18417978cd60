"""KAI's largest clusters through `kai run` on the real control plane: `python bench/bench_scale_real.py
[--nodes 1000] [--shards] [--keep-dir DIR]`.

`bench_scale.py`'s cluster (`scale_cluster.build(nodes, free=True)`: 35 pods, 7.5 PodGroups and half a queue a
node; gangs, subgroups, half-GPU pods, a rack/zone Topology) is loaded into a fresh kube-apiserver (etcd and
kube-apiserver v1.32 from `../shared/kube`), its nodes made by `kai fake-nodes` (8 GPUs, 16 nodes a rack, 512 a
zone; stopped once they are Ready, see `Bench.nodes_ready`) and its pods created already bound. Then:

1. **the API server's LIST cost, alone**: this process lists nodes, pods, PodGroups and Queues in pages of 500 read
   from etcd, then again with `resourceVersion=0`, from the API server's watch cache, as `kai run`'s informers list
   at their start; the API server's and etcd's CPU over each, and the wall time;
2. **`kai run`'s cold start**: from its start to the end of its first scheduling cycle (its lists, parse, first
   snapshot and cycle), with `kai run`'s CPU and the API server's over the same window, each on its own;
3. **steady cycles** once the controllers have written every PodGroup's first status and `kai run` is quiet
   (that first pass is timed too): every cycle's CPU
   (the scheduling thread's clock, `bench/cycle_log.py`), median;
4. **a new 24-pod one-GPU gang** (required zone) and then **1,000 new one-GPU pods** (one PodGroup each, 1,000
   queues): the cycles that placed them (CPU and wall, and their CPU by step: `cycle_log`'s phases), and the time
   from the first create until every pod is bound (its binding made by the binder);
5. the peak RSS of `kai run`;
6. **the scheduler's restart on its own**, as the Helm chart deploys it (a Deployment of `kai scheduler`, as KAI's
   scheduler runs apart from its binder, pod grouper and controllers): `kai run` stopped, then `kai scheduler`
   started on the full cluster, from its start to the end of its first cycle (its lists, parse, first snapshot and
   cycle), its CPU, the API server's, and its peak RSS. One pool only.

With `--shards` the same cluster is built as two node pools of half the nodes each (`kai.scheduler/node-pool` a
and b on the nodes, Queues, PodGroups and pods), each scheduled by its own `kai run --partition-label-value`
(leader-elected, so one binder, pod grouper and controllers lead for both); the same steps run per shard, and the
new pods are checked: each bound once (one BindRequest), on a node of its own pool.

CPU is from /proc (utime + stime) for processes, `time.thread_time` for a cycle; the box's load average is
printed, since other work on it moves every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cycle_log  # noqa: E402
import scale_cluster  # noqa: E402
from bench_fill import ControlPlane, _schedulable, cpu_seconds, start_through  # noqa: E402
from bench_memory import memory  # noqa: E402
from bench_status_pass import podgroups_with_status  # noqa: E402
from fill_timeline import Timeline, create_all  # noqa: E402
from tests.e2e import harness  # noqa: E402

from kai_scheduler.api import constants  # noqa: E402
from kai_scheduler.fakenodes.nodes import LABEL_RACK, LABEL_ZONE  # noqa: E402
from kai_scheduler.store.interface import AlreadyExists  # noqa: E402
from kai_scheduler.store.kube import KubeOptions, KubeStore  # noqa: E402

JSON = dict[str, Any]
POOL_KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY
NAMESPACE = "bench"  # the namespace of scale_cluster's PodGroups and pods
LEASES = "kai-scheduler"  # where leader-elected `kai run`s keep their Leases
BATCH = "bench.kai/batch"  # label of the pods a step submits, to find them again
KAI_REPORTED = "2.35-2.5 s a cycle (snapshot about 2.2 s)"


# --- the cluster, as objects for a real API server --------------------------------------------------------------


def node_prefix(pool: str) -> str:
    return pool or "n"


def pool_objects(nodes: int, pool: str) -> list[JSON]:
    """`scale_cluster.build(nodes, free=True)` but its Nodes and priority classes (fake-nodes and the install make
    them), with the pods bound to `kai fake-nodes`' names (`<prefix>-<i>`); in a pool, every name prefixed with the
    pool's and every object labelled with it."""
    out = []
    for obj in scale_cluster.build(nodes, free=True):
        kind = obj["kind"]
        if kind in ("Node", "PriorityClass", "Topology"):
            continue
        out.append(_in_pool(obj, pool) if pool else _bound_to_fake_nodes(obj, ""))
    return out


def topology() -> JSON:
    """scale_cluster's Topology `dc` over the labels `kai fake-nodes --rack-size --zone-size` gives its nodes."""
    obj: JSON = scale_cluster.topology()
    obj["spec"]["levels"] = [
        {"nodeLabel": LABEL_ZONE, "alias": "zone"},
        {"nodeLabel": LABEL_RACK, "alias": "rack"},
        {"nodeLabel": constants.LABEL_HOSTNAME},
    ]
    return obj


def _bound_to_fake_nodes(obj: JSON, pool: str) -> JSON:
    spec = obj.get("spec") or {}
    host = spec.get("nodeName")
    if obj["kind"] == "Pod" and host:
        spec["nodeName"] = f"{node_prefix(pool)}-{int(host[1:])}"
    return obj


def _in_pool(obj: JSON, pool: str) -> JSON:
    def named(name: str) -> str:
        return f"{pool}-{name}"

    meta, spec, kind = obj["metadata"], obj.get("spec") or {}, obj["kind"]
    meta["name"] = named(meta["name"])
    labels = meta.setdefault("labels", {})
    labels[POOL_KEY] = pool
    if kind == "Queue" and spec.get("parentQueue"):
        spec["parentQueue"] = named(spec["parentQueue"])
    elif kind == "PodGroup":
        spec["queue"] = named(spec["queue"])
    elif kind == "Pod":
        annotations = meta["annotations"]
        annotations[constants.ANNOTATION_POD_GROUP_NAME] = named(annotations[constants.ANNOTATION_POD_GROUP_NAME])
        labels[constants.LABEL_QUEUE] = named(labels[constants.LABEL_QUEUE])
        if constants.LABEL_GPU_GROUP in labels:
            labels[constants.LABEL_GPU_GROUP] = named(labels[constants.LABEL_GPU_GROUP])
    return _bound_to_fake_nodes(obj, pool)


def new_work(nodes: int, pool: str, batch: str, gangs: int, singles: int) -> list[JSON]:
    """`gangs` pending 24-pod one-GPU gangs (required zone) in the idle queue, then `singles` one-pod one-GPU jobs,
    one a leaf queue in turn; in a pool, named and labelled as its objects."""
    queues = scale_cluster.sizes(nodes).queues
    objs: list[JSON] = []
    for g in range(gangs):
        objs += scale_cluster.new_gang(f"{batch}-gang{g}", "idle", 24, 1, required="zone")
    for i in range(singles):
        objs += scale_cluster.new_gang(f"{batch}-{i:04d}", scale_cluster.leaf_name(i % queues), 1, 1)
    for obj in objs:
        obj["metadata"].pop("uid", None)
        if obj["kind"] == "Pod":
            obj["metadata"]["labels"][BATCH] = batch
        if pool:
            _in_pool(obj, pool)
    return objs


# --- the processes --------------------------------------------------------------------------------------------


class Bench:
    """One fresh control plane with the cluster loaded, fake nodes running, and `kai run`s started on demand."""

    def __init__(self, plane: ControlPlane, workdir: Path) -> None:
        self.plane = plane
        self.workdir = workdir
        self.kubeconfig = plane.kubeconfig
        self.store = KubeStore.connect(self.kubeconfig, options=KubeOptions(qps=0, user_agent="bench-scale-real"))
        self.processes = harness.Processes(self.kubeconfig, workdir)
        self.runs: dict[str, str] = {}  # `kai run` process name → its cycle log

    def server_cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.plane.pids().values())

    def install(self) -> None:
        harness.install(self.store, self.kubeconfig, real=True)
        for name in (NAMESPACE, LEASES):
            with suppress(AlreadyExists):
                self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            with suppress(AlreadyExists):
                self.store.create(
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}}
                )
        with suppress(AlreadyExists):
            self.store.create(topology())

    def start_nodes(self, nodes: int, pool: str) -> None:
        flags = ["--count", str(nodes), "--gpus", "8", "--prefix", node_prefix(pool)]
        flags += ["--rack-size", str(scale_cluster.NODES_PER_RACK)]
        flags += ["--zone-size", str(scale_cluster.NODES_PER_RACK * scale_cluster.RACKS_PER_ZONE)]
        flags += ["--heartbeat-period", "120s", "--qps", "1000", "--burst", "2000"]
        if pool:
            flags += ["--node-pool", pool]
        self.processes.start(f"fake-nodes-{node_prefix(pool)}", "fake-nodes", *flags)

    def nodes_ready(self, nodes: int, fleets: list[str]) -> float:
        """Until `nodes` nodes are schedulable; then stop their fake kubelets, leaving the Nodes Ready (no
        controller-manager runs to mark them otherwise) and every pod created later bound but Pending, which the
        scheduler counts as allocated as it does a Running one. Started by the fake kubelet, 140,000 pods took
        more than an hour of pod status writes on this box (48,000 in the first 30 minutes under load), a churn no
        steady cycle can be measured under."""
        started = time.monotonic()
        while _schedulable(self.store) < nodes:
            if time.monotonic() - started > 1800:
                raise SystemExit(f"fewer than {nodes} schedulable nodes after 1,800 s")
            time.sleep(5)
        self.processes.stop(fleets)
        return time.monotonic() - started

    def load(self, objects: list[JSON]) -> float:
        """Create the queues, then PodGroups and pods; the seconds it took."""
        started = time.monotonic()
        queues = [("", o) for o in objects if o["kind"] == "Queue"]
        create_all(self.kubeconfig, queues, Timeline(), processes=1, threads=16)
        rest = [(o["metadata"]["name"] if o["kind"] == "Pod" else "", o) for o in objects if o["kind"] != "Queue"]
        create_all(self.kubeconfig, rest, Timeline())
        return time.monotonic() - started

    def wait_quiet(self, names: list[str], what: str, *, rate: float = 0.15, window: float = 10.0) -> float:
        """Until the processes `names` together spend less than `rate` CPU-seconds a second over `window`; the
        seconds it took."""
        started = time.monotonic()
        pids = [self.processes.running[n].pid for n in names]
        last = sum(cpu_seconds(p) for p in pids)
        while True:
            time.sleep(window)
            now = sum(cpu_seconds(p) for p in pids)
            if now - last < rate * window:
                return time.monotonic() - started
            if time.monotonic() - started > 3600:
                raise SystemExit(f"{what}: not quiet after an hour")
            last = now

    def wait_statuses(self, groups: int) -> float:
        """Until `groups` PodGroups have the status the controllers write (each one's first write after `kai run`
        starts changes every PodGroup, so a cycle before the last of them is not steady); the seconds it took."""
        started = time.monotonic()
        while True:
            done = podgroups_with_status(self.store, NAMESPACE)
            if done >= groups:
                return time.monotonic() - started
            if time.monotonic() - started > 3600:
                raise SystemExit(f"{done} of {groups} PodGroups with a status after an hour")
            _say(f"{done} of {groups} PodGroups with a status")
            time.sleep(15)

    def start_run(self, name: str, *flags: str, component: str = "run") -> None:
        log = str(self.workdir / f"{name}.cycles.jsonl")
        self.runs[name] = log
        start_through(self.processes, ["cycle_log.py", log], component, "--qps=1000", "--burst=2000", *flags, name=name)

    def cycles(self, name: str) -> list[dict[str, Any]]:
        return cycle_log.read(self.runs[name])

    def pid(self, name: str) -> int:
        return self.processes.running[name].pid

    def bound(self, batch: str) -> list[JSON]:
        pods, _ = self.store.list("pods", NAMESPACE, f"{BATCH}={batch}")
        return [p for p in pods if p["spec"].get("nodeName")]

    def close(self) -> None:
        try:
            self.processes.stop_all()
        finally:
            self.store.close()


# --- the steps ------------------------------------------------------------------------------------------------


def list_cost(bench: Bench, *, cached: bool) -> JSON:
    """List what `kai run` lists at its start: pages of 500 read from etcd, or (`cached`) `resourceVersion=0`, which
    the API server answers from its watch cache, as `kai run`'s informers list first. The API server's CPU, this
    process's and the wall."""
    server, own, wall = bench.server_cpu(), time.process_time(), time.perf_counter()
    counts = {}
    store = KubeStore.connect(bench.kubeconfig, options=KubeOptions(qps=0, page_size=500, user_agent="bench-list"))
    try:
        for resource in ("nodes", "pods", "podgroups", "queues", "bindrequests"):
            counts[resource] = len(store.list(resource, cached=cached)[0])
    finally:
        store.close()
    return {
        "server_cpu": bench.server_cpu() - server,
        "client_cpu": time.process_time() - own,
        "wall": time.perf_counter() - wall,
        "counts": counts,
    }


def cold_start(bench: Bench, names: list[str], flags: dict[str, list[str]], component: str = "run") -> dict[str, JSON]:
    """Start each `kai run` (or `kai <component>`) and wait for its first cycle: seconds to it, its CPU and the API
    server's over the window (the server's is shared when several start at once)."""
    server = bench.server_cpu()
    started = time.monotonic()
    for name in names:
        bench.start_run(name, *flags[name], component=component)
    out: dict[str, JSON] = {}
    deadline = started + 1800
    while len(out) < len(names):
        if time.monotonic() > deadline:
            raise SystemExit(f"no first cycle after 1,800 s:\n{bench.processes.log_tail()}")
        for name in names:
            if name not in out and bench.cycles(name):
                out[name] = {"wall": time.monotonic() - started, "cpu": cpu_seconds(bench.pid(name))}
        time.sleep(0.2)
    for figures in out.values():
        figures["server_cpu"] = bench.server_cpu() - server
    return out


def steady(bench: Bench, name: str, since: float, at_least: int = 10) -> JSON:
    """The cycles after `since` that placed and evicted nothing (waiting for `at_least` of them)."""

    def idle() -> list[dict[str, Any]]:
        return [c for c in bench.cycles(name) if c["end"] > since and not c["placed"] and not c["evicted"]]

    deadline = time.monotonic() + 300
    while len(idle()) < at_least and time.monotonic() < deadline:
        time.sleep(1)
    cycles = idle()
    return {
        "cycles": len(cycles),
        "cpu": statistics.median(c["cpu"] for c in cycles) if cycles else float("nan"),
        "wall": statistics.median(c["wall"] for c in cycles) if cycles else float("nan"),
    }


def submit(bench: Bench, names: list[str], objects: list[JSON], batch: str, expected: int) -> JSON:
    """Create `objects` (PodGroups first) and wait until `expected` pods of `batch` are bound: the seconds from the
    first create, and per `kai run` the cycles in that window that placed something."""
    since = time.time()
    started = time.monotonic()
    groups = [("", o) for o in objects if o["kind"] != "Pod"]
    pods = [(o["metadata"]["name"], o) for o in objects if o["kind"] == "Pod"]
    create_all(bench.kubeconfig, groups, Timeline(), processes=1, threads=16)
    create_all(bench.kubeconfig, pods, Timeline(), processes=2, threads=8)
    created = time.monotonic() - started
    deadline = started + 600
    while len(bench.bound(batch)) < expected:
        if time.monotonic() > deadline:
            raise SystemExit(f"{batch}: {len(bench.bound(batch))} of {expected} bound after 600 s")
        time.sleep(0.5)
    bound = time.monotonic() - started
    out: JSON = {"created": created, "bound": bound, "cycles": {}}
    for name in names:
        placing = [c for c in bench.cycles(name) if c["end"] >= since and c["placed"]]
        out["cycles"][name] = {
            "n": len(placing),
            "cpu": sum(c["cpu"] for c in placing),
            "wall": sum(c["wall"] for c in placing),
            "max_cpu": max((c["cpu"] for c in placing), default=0.0),
            "placed": sum(c["placed"] for c in placing),
            "phases": _phase_sums(placing),
        }
    return out


def _phase_sums(cycles: list[dict[str, Any]]) -> dict[str, float]:
    """The cycles' CPU seconds by step (`cycle_log`'s phases), the collections on the scheduling thread as `gc`."""
    out: dict[str, float] = {}
    for c in cycles:
        for phase, seconds in c.get("phases", {}).items():
            out[phase] = out.get(phase, 0.0) + seconds
        out["gc"] = out.get("gc", 0.0) + sum(s for _, s in c.get("gc", []))
    return out


def bound_once_in_pool(bench: Bench, batches: list[str]) -> list[str]:
    """Problems with the pods of these batches: one bound on a node of another pool than its own label's, or with
    other than one BindRequest."""
    requests, _ = bench.store.list("bindrequests", NAMESPACE)
    per_pod: dict[str, int] = {}
    for br in requests:
        pod = br["spec"].get("podName", "")
        per_pod[pod] = per_pod.get(pod, 0) + 1
    problems = []
    for batch in batches:
        for pod in bench.bound(batch):
            name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
            pool = pod["metadata"]["labels"].get(POOL_KEY, "")
            if not node.startswith(f"{node_prefix(pool)}-"):
                problems.append(f"{name} (pool {pool}) bound on {node}")
            if per_pod.get(name, 0) != 1:
                problems.append(f"{name}: {per_pod.get(name, 0)} BindRequests")
    return problems


# --- the runs ---------------------------------------------------------------------------------------------------


@contextmanager
def loaded_cluster(nodes: int, workdir: Path) -> Iterator[Bench]:
    """A fresh control plane with one pool of `nodes` fake nodes Ready (their kubelets then stopped) and the rest of
    the cluster loaded, for the scripts that measure one step of this benchmark again and again."""
    with ControlPlane(workdir / "kube") as plane:
        bench = Bench(plane, workdir)
        try:
            bench.install()
            bench.start_nodes(nodes, "")
            bench.nodes_ready(nodes, [f"fake-nodes-{node_prefix('')}"])
            _say(f"{nodes} nodes Ready; loading")
            bench.load(pool_objects(nodes, ""))
            yield bench
        finally:
            bench.close()


def run(nodes: int, workdir: Path, pools: list[str]) -> JSON:
    """One fresh control plane measured with the cluster as `pools` ([""]: one unlabelled pool, one `kai run`)."""
    with ControlPlane(workdir / "kube") as plane:
        bench = Bench(plane, workdir)
        try:
            return _measure(bench, nodes, pools)
        finally:
            bench.close()


def _measure(bench: Bench, nodes: int, pools: list[str]) -> JSON:
    per_pool = nodes // len(pools)
    out: JSON = {"nodes": nodes, "pools": pools, "load": [os.getloadavg()[0]]}
    bench.install()
    for pool in pools:
        bench.start_nodes(per_pool, pool)
    out["nodes_s"] = bench.nodes_ready(nodes, [f"fake-nodes-{node_prefix(p)}" for p in pools])
    objects = [obj for pool in pools for obj in pool_objects(per_pool, pool)]
    out["objects"] = {k: sum(1 for o in objects if o["kind"] == k) for k in ("Queue", "PodGroup", "Pod")}
    _say(f"{nodes} nodes Ready in {out['nodes_s']:.0f} s; loading {out['objects']}")
    out["load_s"] = bench.load(objects)
    del objects
    _say(f"loaded in {out['load_s']:.0f} s")
    out["list"] = list_cost(bench, cached=False)
    _say(f"LIST alone: {out['list']}")
    out["list_cached"] = list_cost(bench, cached=True)
    _say(f"LIST alone, from the watch cache: {out['list_cached']}")
    names = [f"run-{node_prefix(p)}" for p in pools]
    flags = {
        f"run-{node_prefix(p)}": (
            [f"--partition-label-value={p}", "--leader-elect", f"--leader-elect-namespace={LEASES}"] if p else []
        )
        for p in pools
    }
    out["cold"] = cold_start(bench, names, flags)
    _say(f"first cycles: {out['cold']}")
    out["settle_s"] = bench.wait_statuses(out["objects"]["PodGroup"])
    bench.wait_quiet(names, "kai run after the PodGroups' statuses", rate=0.3)
    out["load"].append(os.getloadavg()[0])
    out["steady"] = {n: steady(bench, n, time.time()) for n in names}
    _say(f"steady: {out['steady']}")
    gang = [o for p in pools for o in new_work(per_pool, p, "gang", 1, 0)]
    out["gang"] = submit(bench, names, gang, "gang", 24 * len(pools))
    _say(f"gang: {out['gang']}")
    bench.wait_quiet(names, "kai run after the gang", rate=0.3)
    # 1,000 in all, or what the free GPUs hold beside the gang on a small cluster
    free = (per_pool - per_pool // scale_cluster.FRACTION_EVERY) * scale_cluster.free_per_node(per_pool) - 24
    each = min(1000 // len(pools), free)
    out["singles_n"] = each * len(pools)
    singles = [o for p in pools for o in new_work(per_pool, p, "one", 0, each)]
    out["singles"] = submit(bench, names, singles, "one", each * len(pools))
    _say(f"{out['singles_n']} pods: {out['singles']}")
    if len(pools) > 1:
        out["problems"] = bound_once_in_pool(bench, ["gang", "one"])
    out["rss"] = {n: memory(bench.pid(n))[1] for n in names}
    if pools == [""]:
        out["restart"] = scheduler_restart(bench, names[0])
        _say(f"the scheduler restarted alone: {out['restart']}")
    out["load"].append(os.getloadavg()[0])
    return out


def scheduler_restart(bench: Bench, run_name: str) -> JSON:
    """Stop `kai run`, then start `kai scheduler` alone on the full cluster and wait for its first cycle. It gets
    `kai run`'s scheduling flags: `--queue-access-control`, which the harness gives a scheduler of the e2e suite,
    is off here as in `kai run`."""
    bench.processes.stop([run_name])
    name = "scheduler"
    figures = cold_start(bench, [name], {name: ["--queue-access-control=false"]}, component="scheduler")[name]
    figures["rss"] = memory(bench.pid(name))[1]
    first = bench.cycles(name)[0]
    figures["first_cycle_cpu"] = first["cpu"]
    return figures


def _say(text: str) -> None:
    print(f"# {time.strftime('%H:%M:%S')} {text}", flush=True)


# --- the table --------------------------------------------------------------------------------------------------


def print_result(r: JSON) -> None:
    from rich.console import Console
    from rich.table import Table

    names = list(r["cold"])
    loads = ", ".join(f"{x:.1f}" for x in r["load"])
    shape = "one kai run" if r["pools"] == [""] else f"{len(r['pools'])} shards, one kai run each"
    objects = r["objects"]
    table = Table(
        title=f"{r['nodes']:,} fake nodes x 8 GPUs, {objects['Pod']:,} pods, {objects['PodGroup']:,} PodGroups, "
        f"{objects['Queue']:,} queues on kube-apiserver v1.32; {shape} (load average {loads})"
    )
    for col in ("figure", *names, "KAI (reported, Go)"):
        table.add_column(col, justify="right")
    lst, cached = r["list"], r["list_cached"]
    rows: list[tuple[str, Callable[[str], str], str]] = [
        (
            "LIST of everything alone, pages from etcd: API server CPU s / client CPU s / wall s",
            lambda n: f"{lst['server_cpu']:.1f} / {lst['client_cpu']:.1f} / {lst['wall']:.1f}",
            "",
        ),
        (
            "  the same from the watch cache (resourceVersion=0, as kai run lists)",
            lambda n: f"{cached['server_cpu']:.1f} / {cached['client_cpu']:.1f} / {cached['wall']:.1f}",
            "",
        ),
        ("cold start to the end of the first cycle: wall s", lambda n: f"{r['cold'][n]['wall']:.1f}", ""),
        ("  kai run CPU s over it", lambda n: f"{r['cold'][n]['cpu']:.1f}", ""),
        ("  API server + etcd CPU s over it", lambda n: f"{r['cold'][n]['server_cpu']:.1f}", ""),
        ("every PodGroup's first status written: s after the first cycle", lambda n: f"{r['settle_s']:.0f}", ""),
        ("steady cycle: CPU s (wall s), median", lambda n: _steady(r["steady"][n]), KAI_REPORTED),
        ("new 24-pod gang: placing cycles, CPU s (wall s)", lambda n: _placing(r["gang"]["cycles"][n]), ""),
        ("  by step: CPU s", lambda n: _steps(r["gang"]["cycles"][n]), ""),
        ("  first create to all bound: s", lambda n: f"{r['gang']['bound']:.1f}", ""),
        (
            f"{r['singles_n']:,} new one-GPU pods: placing cycles, CPU s (wall s)",
            lambda n: _placing(r["singles"]["cycles"][n]),
            "",
        ),
        ("  by step: CPU s", lambda n: _steps(r["singles"]["cycles"][n]), ""),
        ("  first create to all bound: s", lambda n: f"{r['singles']['bound']:.1f}", ""),
        ("peak RSS of kai run: GiB", lambda n: f"{r['rss'][n] / 2**30:.2f}", ""),
    ]
    if "restart" in r:
        rs = r["restart"]
        rows += [
            (
                "the scheduler restarted alone (kai scheduler, as Helm runs it): wall s to its first cycle's end",
                lambda n: f"{rs['wall']:.1f}",
                "",
            ),
            (
                "  its CPU s (the first cycle's); API server + etcd CPU s",
                lambda n: f"{rs['cpu']:.1f} ({rs['first_cycle_cpu']:.1f}); {rs['server_cpu']:.1f}",
                "",
            ),
            ("  its peak RSS: GiB", lambda n: f"{rs['rss'] / 2**30:.2f}", ""),
        ]
    for label, value, kai in rows:
        table.add_row(label, *(value(n) for n in names), kai)
    Console(width=180).print(table)
    if "problems" in r:
        problems = r["problems"]
        verdict = "yes" if not problems else "NO: " + "; ".join(problems[:10])
        print(f"new pods bound once, each in its own pool: {verdict}")


def _steady(s: JSON) -> str:
    return f"{s['cpu']:.3f} ({s['wall']:.3f}), {s['cycles']} cycles"


def _placing(c: JSON) -> str:
    return f"{c['cpu']:.3f} ({c['wall']:.3f}) in {c['n']}, the longest {c['max_cpu']:.3f} CPU"


def _steps(c: JSON) -> str:
    """The largest steps of the placing cycles (`cycle_log`'s phases), the others summed."""
    phases = sorted(c.get("phases", {}).items(), key=lambda kv: -kv[1])
    shown = [f"{k} {v:.3f}" for k, v in phases[:5]]
    rest = sum(v for _, v in phases[5:])
    return ", ".join([*shown, f"other steps {rest:.3f}"]) if phases else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000, help="fake nodes (8 GPUs each); the rest in proportion")
    parser.add_argument("--shards", action="store_true", help="also run the cluster as two pools, a kai run each")
    parser.add_argument("--only-shards", action="store_true", help="run only the two-shard set-up")
    parser.add_argument("--keep-dir", help="keep the logs here instead of a temporary directory")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="kai-bench-scale-real-") as tmp:
        base = Path(args.keep_dir or tmp)
        if not args.only_shards:
            (base / "whole").mkdir(parents=True, exist_ok=True)
            results.append(run(args.nodes, base / "whole", [""]))
        if args.shards or args.only_shards:
            (base / "shards").mkdir(parents=True, exist_ok=True)
            results.append(run(args.nodes, base / "shards", ["a", "b"]))
    for result in results:
        print_result(result)


if __name__ == "__main__":
    main()
