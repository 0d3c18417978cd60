"""API server and etcd CPU per request of KAI's object protocol, and the floor it sets on pods/s.

`python bench/bench_request_cost.py`: what each request of a pod's way through KAI's object protocol costs a real
kube-apiserver and its etcd, in CPU-seconds, and the floor that puts under any implementation of the protocol.

A fresh control plane from `../shared/kube` (etcd + kube-apiserver v1.32 on loopback, stopped in a `finally`)
gets the project's CRDs (as `bench_fill.py` installs them). The bodies are the ones the components send: the
podgrouper, scheduler, binder and controllers run once in this process over an in-memory store on one pod
exactly as `bench_fill.py` creates it, and every write they make is recorded; those recorded requests are the
templates, with the pod's name, uid and node put in for each of `--requests` pods. Then, for each variant of
the request forms, a fresh set of pods goes through the pipeline one kind at a time, each kind as `--requests`
requests from `--threads` concurrent clients (no client rate limit):

pod create (the creator) → PodGroup create and the pod's `pod-group-name` annotation (podgrouper) →
BindRequest create, Scheduled event, PodGroup `kai.scheduler/last-start-timestamp` (scheduler) → pod binding
(binder) → the pod's status Running (`kai fake-nodes`' kubelet, in both schedulers' fills) → BindRequest status
Succeeded (binder) → PodGroup `resourcesStatus` (controllers).

For each kind: CPU-seconds of the API server and etcd (/proc/<pid>/stat before and after, less their idle
rate measured first over `--idle` seconds) per request, and the CPU of this process (the project's client:
`KubeStore`, urllib3, TLS, orjson) per request, with the request's and answer's sizes in bytes.

Variants (`--variants`), each on its own pods so that every request changes something:

- `as-sent`: the project's client as the components use it (JSON, merge patches).
- `validation-ignore`: the same requests with `?fieldValidation=Ignore` (the server skips looking for unknown
  fields; the default is Warn).
- `json-patch`: the patches as JSON patches (`application/json-patch+json`) with the same effect.
- `metadata-answer`: every write answered with the object's metadata alone (`Accept: application/json;
  as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, served for writes too): what the rest of the answer costs.
- `protobuf-answer`: core kinds (pods, binding, events) answered in protobuf (`Accept:
  application/vnd.kubernetes.protobuf`, as kube-scheduler asks), to show what encoding JSON answers costs
  the server; this client cannot read protobuf, so it is evidence, not a form the components could use.

The variants are run in turn `--repeat` times (as-sent, validation-ignore, …, as-sent, validation-ignore, …),
and each figure is the median of its passes with the range beside it: on a shared box one pass of 2,000
requests swings by a third (the server's garbage collection lands in one phase or the next, and other work
shares the caches), so only a difference larger than the ranges counts. The last row sums each variant over
one pod's requests (KAI's counts, low), which swings less than any one kind.

Then the floor: the API server's and etcd's CPU per pod for KAI's protocol (each request's cost times the
requests per pod that `bench_fill.py` counted, bench/README.md, and the fake kubelet's status write, which
both fills have) against kube-scheduler's three and that status write (create, binding, event; measured here
as JSON from this client: kube-scheduler sends protobuf, which costs the server less, so its floor is lower
still), and the most pods/s each allows on `--cores` cores once the fake nodes' and
the creator's CPU per pod are taken out. Watch fan-out is not in the per-request figures (no one watches here):
it makes every real fill cost more than the floor, never less.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
from bench_fill import ControlPlane, cpu_seconds  # noqa: E402
from tests.e2e import harness  # noqa: E402

from kai_scheduler.store.interface import JSON, RESOURCES  # noqa: E402
from kai_scheduler.store.kube import KubeOptions, KubeStore, collection_path, object_path  # noqa: E402
from kai_scheduler.store.kube_http.body import MERGE_PATCH_TYPE  # noqa: E402

JSON_PATCH_TYPE = "application/json-patch+json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
TEMPLATE_POD = "fill-0"  # the pod the components are run on in memory
TEMPLATE_NODE = "bench-node-0"


@dataclass(frozen=True)
class Kind:
    key: str
    label: str
    sender: str
    kai: tuple[float, float]  # requests per pod in KAI's protocol (low, high), bench/README.md
    kube: float  # requests per pod with kube-scheduler


KINDS = (
    Kind("pod-create", "pod create", "creator", (1, 1), 1),
    Kind("pg-create", "PodGroup create", "podgrouper", (1, 1), 0),
    Kind("pod-annotate", "pod annotation pod-group-name", "podgrouper", (1, 1), 0),
    Kind("br-create", "BindRequest create", "scheduler", (1, 1), 0),
    Kind("event", "Scheduled event create", "scheduler", (1, 1), 1),
    Kind("pg-start", "PodGroup last-start-timestamp", "scheduler", (0.9, 1), 0),
    Kind("binding", "pod binding", "binder", (1, 1), 1),
    Kind("pod-running", "pod status Running", "fake nodes", (1, 1), 1),
    Kind("br-status", "BindRequest status Succeeded", "binder", (1, 1), 0),
    Kind("pg-status", "PodGroup status resourcesStatus", "controllers", (0.3, 0.5), 0),
)
VARIANTS = ("as-sent", "validation-ignore", "json-patch", "metadata-answer", "protobuf-answer")


# --- the components' own requests, recorded in memory ---


class _Recorder:
    """A store that records the writes made through it and passes everything to the in-memory store."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.writes: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, obj: JSON) -> JSON:
        self.writes.append((f"create {obj.get('kind')}", copy.deepcopy(obj)))
        return self.inner.create(obj)  # type: ignore[no-any-return]

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        self.writes.append((f"patch {resource} {subresource}".strip(), copy.deepcopy(patch)))
        return self.inner.patch(resource, name, namespace, patch, subresource, strategic=strategic)  # type: ignore[no-any-return]

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.writes.append(("bind", {"pod": pod_name, "node": node_name}))
        self.inner.bind(namespace, pod_name, node_name, uid)


def bench_pod(name: str) -> JSON:
    """The pod `bench_fill.py` creates (one GPU, `schedulerName: kai-scheduler`)."""
    pod = harness.pod(name, gpus=1)
    pod["spec"]["schedulerName"] = "kai-scheduler"
    return pod


def recorded_templates() -> tuple[dict[str, JSON], str]:
    """Each write of one pod's way through the four components, run over an in-memory store, by kind key; and
    the uid the template pod had there (to be replaced by each real pod's)."""
    from prometheus_client import CollectorRegistry

    from kai_scheduler import install as installer
    from kai_scheduler.api.clock import SystemClock
    from kai_scheduler.fakenodes.kubelet import FakeKubelet
    from kai_scheduler.fakenodes.nodes import FleetSpec, build_node
    from kai_scheduler.runtime import components
    from kai_scheduler.store.memory import MemoryStore

    clock = SystemClock()
    memory = MemoryStore(clock)
    for obj in installer.manifests(installer.defaults()):
        if obj["kind"] == "PriorityClass":
            memory.create(obj)
    memory.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": harness.NAMESPACE}})
    memory.create(build_node(FleetSpec(count=1, prefix="bench-node"), 0, clock.now()))
    recorder = _Recorder(memory)
    kubelet = FakeKubelet(recorder, clock, [TEMPLATE_NODE])
    built = {c.name: c for c in components.build(components.NAMES, recorder, clock, CollectorRegistry())}
    built["controllers"].step()  # the default queues
    recorder.writes.clear()
    uid = memory.create(bench_pod(TEMPLATE_POD))["metadata"]["uid"]
    deadline = time.monotonic() + 30
    wanted = {
        "create PodGroup": "pg-create",
        "patch pods": "pod-annotate",
        "create BindRequest": "br-create",
        "create Event": "event",
        "patch podgroups": "pg-start",
        "bind": "binding",
        "patch bindrequests status": "br-status",
        "patch podgroups status": "pg-status",
        "patch pods status": "pod-running",
    }
    found: dict[str, JSON] = {}
    while len(found) < len(wanted):
        if time.monotonic() > deadline:
            missing = sorted(set(wanted) - {w for w, _ in recorder.writes})
            raise RuntimeError(f"the components did not make these writes in memory: {missing}")
        for name in ("podgrouper", "scheduler", "binder", "controllers"):
            built[name].step()
        kubelet.step()
        time.sleep(0.2)  # the scheduler's events and start annotations are written in the background
        for what, body in recorder.writes:
            if what in wanted:
                found.setdefault(wanted[what], body)
    return found, uid


def fill_in(template: JSON, uid: str, template_uid: str, pod: str, node: str) -> JSON:
    """The template with the template pod's uid, name and node replaced by this pod's."""
    text = orjson.dumps(template).decode()
    text = text.replace(template_uid, uid).replace(TEMPLATE_NODE, node).replace(TEMPLATE_POD, pod)
    return orjson.loads(text)  # type: ignore[no-any-return]


# --- sending ---


@dataclass
class Target:
    """One pod of a variant's set and what was created for it."""

    pod: str
    uid: str = ""
    node: str = ""
    podgroup: str = ""


@dataclass
class Measure:
    requests: int = 0
    wall: float = 0.0
    apiserver: float = 0.0  # CPU-s, idle subtracted
    etcd: float = 0.0
    client: float = 0.0  # CPU-s of this process
    request_bytes: int = 0
    answer_bytes: int = 0
    errors: list[str] = field(default_factory=list)

    def per(self, value: float) -> float:
        return 1000 * value / self.requests if self.requests else float("nan")


class Sender:
    """Requests through the project's client: its `KubeStore` methods for the `as-sent` forms, its transport
    (same connection pool, TLS and token) with other headers or query for the variants."""

    def __init__(self, store: KubeStore) -> None:
        self.store = store

    def raw(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> tuple[int, int]:
        """One request; (request bytes, answer bytes). An error status raises RuntimeError with the answer."""
        transport = self.store.transport
        data = orjson.dumps(body)
        headers = {"Accept": accept, "Content-Type": content_type}
        _, url, headers, _, _ = transport.api_client.param_serialize(
            method, path, query_params=query or [], header_params=headers, auth_settings=["BearerToken"]
        )
        resp = transport.api_client.rest_client.pool_manager.request(
            method, url, body=data, headers=headers, preload_content=False
        )
        try:
            raw = resp.data
        finally:
            resp.release_conn()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status}: {raw[:300]!r}")
        if accept.startswith("application/json"):
            orjson.loads(raw)  # the client decodes what it gets
        return len(data), len(raw)


def request_for(kind: str, variant: str, t: Target, body: JSON, sender: Sender) -> Callable[[], tuple[int, int]]:
    """The request of `kind` for pod `t` in `variant`'s form; calling it sends it."""
    ns = harness.NAMESPACE
    store = sender.store
    ignore = [("fieldValidation", "Ignore")] if variant == "validation-ignore" else None
    core_proto = variant == "protobuf-answer"
    accept = f"{PROTOBUF}, application/json" if core_proto else "application/json"
    if variant == "metadata-answer":
        accept = METADATA_ONLY
    as_sent = variant == "as-sent"
    size = len(orjson.dumps(body))

    def create(resource: str) -> Callable[[], tuple[int, int]]:
        res = RESOURCES[resource]
        if as_sent:
            return lambda: (size, _size_of(store.create(body)))
        own = res.api_version == "v1" or not core_proto
        return lambda: sender.raw(
            "POST", collection_path(res, ns), body, accept=accept if own else "application/json", query=ignore
        )

    def patch(resource: str, name: str, subresource: str, json_patch: list[JSON]) -> Callable[[], tuple[int, int]]:
        res = RESOURCES[resource]
        path = object_path(res, name, ns, subresource)
        if as_sent:
            return lambda: (size, _size_of(store.patch(resource, name, ns, body, subresource)))
        if variant == "json-patch":
            return lambda: sender.raw("PATCH", path, json_patch, content_type=JSON_PATCH_TYPE)
        own = res.api_version == "v1" or not core_proto
        return lambda: sender.raw(
            "PATCH",
            path,
            body,
            content_type=MERGE_PATCH_TYPE,
            accept=accept if own else "application/json",
            query=ignore,
        )

    if kind == "pod-create":
        return create("pods")
    if kind == "pg-create":
        return create("podgroups")
    if kind == "br-create":
        return create("bindrequests")
    if kind == "event":
        return create("events")
    if kind == "pod-annotate":
        value = body["metadata"]["annotations"]
        return patch("pods", t.pod, "", [{"op": "add", "path": "/metadata/annotations", "value": value}])
    if kind == "pg-start":
        (key, value), *_ = body["metadata"]["annotations"].items()
        pointer = "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")
        return patch("podgroups", t.podgroup, "", [{"op": "add", "path": pointer, "value": value}])
    if kind == "pod-running":  # the fake kubelet's, not a component's: the same in every variant
        return lambda: (size, _size_of(store.patch("pods", t.pod, ns, body, "status")))
    if kind == "br-status":
        return patch("bindrequests", t.pod, "status", [{"op": "add", "path": "/status", "value": body["status"]}])
    if kind == "pg-status":
        return patch("podgroups", t.podgroup, "status", [{"op": "add", "path": "/status", "value": body["status"]}])
    if kind == "binding":
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": t.pod, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": t.node},
        }
        if as_sent:
            return lambda: (len(orjson.dumps(binding)), _bind(store, t))
        path = object_path(RESOURCES["pods"], t.pod, ns, "binding")
        answer = "application/json" if variant == "metadata-answer" else accept  # a Status, not an object
        return lambda: sender.raw("POST", path, binding, accept=answer, query=ignore)
    raise ValueError(f"unknown request kind {kind!r}")


def _bind(store: KubeStore, t: Target) -> int:
    store.bind(harness.NAMESPACE, t.pod, t.node)
    return 0  # the answer (a Status) is read and dropped by the store; its size is not known here


def _size_of(answer: JSON) -> int:
    return len(orjson.dumps(answer))


class Meter:
    """CPU of the API server and etcd, less their idle rate, and of this process, over one phase."""

    def __init__(self, pids: dict[str, int], idle: dict[str, float]) -> None:
        self.pids = pids
        self.idle = idle  # CPU-s per second when nothing is asked

    def run(self, calls: list[Callable[[], tuple[int, int]]], threads: int) -> Measure:
        m = Measure(requests=len(calls))
        lock = threading.Lock()

        def one(call: Callable[[], tuple[int, int]]) -> None:
            try:
                sent, got = call()
            except Exception as err:
                with lock:
                    m.errors.append(f"{type(err).__name__}: {err}")
                return
            with lock:
                m.request_bytes += sent
                m.answer_bytes += got

        before = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        client_before = time.process_time()
        started = time.monotonic()
        with ThreadPoolExecutor(threads, thread_name_prefix="bench-request") as pool:
            list(pool.map(one, calls))
        m.client = time.process_time() - client_before
        time.sleep(0.3)  # what the writes set going (watch cache, etcd's fsync) settles
        m.wall = time.monotonic() - started
        used = {name: cpu_seconds(pid) - before[name] for name, pid in self.pids.items()}
        m.apiserver = max(0.0, used["apiserver"] - self.idle["apiserver"] * m.wall)
        m.etcd = max(0.0, used["etcd"] - self.idle["etcd"] * m.wall)
        return m


def idle_rate(pids: dict[str, int], seconds: float) -> dict[str, float]:
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: (cpu_seconds(pid) - before[name]) / seconds for name, pid in pids.items()}


def run_variant(
    variant: str,
    index: int,
    n: int,
    nodes: int,
    templates: dict[str, JSON],
    template_uid: str,
    sender: Sender,
    meter: Meter,
    threads: int,
) -> dict[str, Measure]:
    """One fresh set of `n` pods through every request kind in pipeline order, in `variant`'s forms."""
    prefix = f"rc{index}-"
    targets = [Target(f"{prefix}{i}", node=f"bench-node-{i % nodes}") for i in range(n)]
    out: dict[str, Measure] = {}
    for kind in KINDS:
        calls = []
        for t in targets:
            if kind.key == "pod-create":
                body = bench_pod(t.pod)
            else:
                body = fill_in(templates[kind.key], t.uid, template_uid, t.pod, t.node)
            calls.append(request_for(kind.key, variant, t, body, sender))
        m = meter.run(calls, threads)
        out[kind.key] = m
        if kind.key == "pod-create":  # their uids go into every later body (read outside the measure)
            uids = pod_uids(sender.store, prefix)
            for t in targets:
                t.uid = uids.get(t.pod, "")
                pg = fill_in(templates["pg-create"], t.uid, template_uid, t.pod, t.node)
                t.podgroup = pg["metadata"]["name"]
        errors = f" errors {len(m.errors)}: {m.errors[0]}" if m.errors else ""
        print(
            f"# {variant:<18} {kind.label:<34} server {m.per(m.apiserver):6.2f} ms  etcd {m.per(m.etcd):5.2f} ms"
            f"  client {m.per(m.client):5.2f} ms  wall {m.wall:5.1f} s{errors}",
            flush=True,
        )
    return out


def pod_uids(store: KubeStore, prefix: str) -> dict[str, str]:
    pods, _ = store.list("pods", harness.NAMESPACE)
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods if p["metadata"]["name"].startswith(prefix)}


def median_ms(passes: list[Measure], value: Callable[[Measure], float]) -> float:
    return statistics.median(m.per(value(m)) for m in passes)


def span_ms(passes: list[Measure], value: Callable[[Measure], float]) -> str:
    """ "median (min–max)" of a figure over the passes, in ms per request."""
    figures = [m.per(value(m)) for m in passes]
    text = f"{statistics.median(figures):.2f}"
    return text if len(figures) == 1 else f"{text} ({min(figures):.2f}–{max(figures):.2f})"


def server_of(m: Measure) -> float:
    return m.apiserver + m.etcd


def per_pod(passes: list[dict[str, Measure]]) -> list[float]:
    """Each pass's API server + etcd CPU over one pod's requests in KAI's protocol (low counts), ms."""
    return [sum(k.kai[0] * p[k.key].per(server_of(p[k.key])) for k in KINDS) for p in passes]


@dataclass(frozen=True)
class Ceiling:
    """What KAI's protocol costs the API server and etcd per pod (from the `as-sent` medians), and the most pods/s
    that allows on `cores` cores with the fake nodes' and the creator's CPU per pod: for any implementation of the
    protocol (its components' own CPU not counted), and with this project's client for the components' requests."""

    cores: float
    fake_nodes_ms: float
    creator_ms: float
    kai_ms: tuple[float, float]  # API server + etcd per pod, KAI's low and high request counts
    kube_ms: float  # the same for kube-scheduler's requests
    client_ms: float  # this project's client for the components' requests (low counts)

    def rate(self, ms: float) -> float:
        return 1000 * self.cores / (ms + self.fake_nodes_ms + self.creator_ms)

    @property
    def kai_rates(self) -> tuple[float, float]:
        """The most pods/s of KAI's protocol at its high and at its low request counts."""
        return self.rate(self.kai_ms[1]), self.rate(self.kai_ms[0])

    @property
    def kube_rate(self) -> float:
        return self.rate(self.kube_ms)


def ceiling(sent: list[dict[str, Measure]], cores: float, fake_nodes_ms: float) -> Ceiling:
    """The ceiling from passes of the `as-sent` variant."""
    server = {k.key: median_ms([p[k.key] for p in sent], server_of) for k in KINDS}
    client = {k.key: median_ms([p[k.key] for p in sent], lambda m: m.client) for k in KINDS}
    return Ceiling(
        cores=cores,
        fake_nodes_ms=fake_nodes_ms,
        creator_ms=client["pod-create"],
        kai_ms=(sum(k.kai[0] * server[k.key] for k in KINDS), sum(k.kai[1] * server[k.key] for k in KINDS)),
        kube_ms=sum(k.kube * server[k.key] for k in KINDS),
        client_ms=sum(k.kai[0] * client[k.key] for k in KINDS if k.sender != "creator"),
    )


def floors(
    results: dict[str, list[dict[str, Measure]]], cores: float, fake_nodes_ms: float, kube_rate: float
) -> list[tuple[str, str, str]]:
    """(what, KAI's protocol, kube-scheduler's) rows of the floor table, from the `as-sent` figures (medians)."""
    c = ceiling(results["as-sent"], cores, fake_nodes_ms)
    slow, fast = c.kai_rates
    return [
        (
            "requests per pod (with the fake kubelet's Running)",
            f"{sum(k.kai[0] for k in KINDS):.1f}–{sum(k.kai[1] for k in KINDS):.1f}",
            f"{sum(k.kube for k in KINDS):g}",
        ),
        ("API server + etcd CPU per pod", f"{c.kai_ms[0]:.2f}–{c.kai_ms[1]:.2f} ms", f"{c.kube_ms:.2f} ms"),
        (
            "+ fake nodes + creator per pod",
            f"{fake_nodes_ms:.2f} + {c.creator_ms:.2f} ms",
            f"{fake_nodes_ms:.2f} + {c.creator_ms:.2f} ms",
        ),
        (
            f"most pods/s on {cores:g} cores (any scheduler implementation)",
            f"{slow:.0f}–{fast:.0f}",
            f"{c.kube_rate:.0f}",
        ),
        (
            "… with this project's client for the components' requests",
            f"{c.rate(c.kai_ms[1] + c.client_ms):.0f} (client {c.client_ms:.2f} ms per pod)",
            "",
        ),
        (
            f"against kube-scheduler's measured {kube_rate:g} pods/s (bench_fill.py, QPS 1,000)",
            f"{slow / kube_rate:.2f}–{fast / kube_rate:.2f}×",
            "1×",
        ),
    ]


def measure(
    variants: list[str], requests: int, threads: int, nodes: int, repeat: int, idle_seconds: float
) -> dict[str, list[dict[str, Measure]]]:
    """`repeat` interleaved passes of each variant on a fresh control plane (stopped before this returns)."""
    templates, template_uid = recorded_templates()
    results: dict[str, list[dict[str, Measure]]] = {}
    with tempfile.TemporaryDirectory(prefix="kai-bench-request-") as tmp, ControlPlane(Path(tmp) / "kube") as plane:
        store = KubeStore.connect(plane.kubeconfig, options=KubeOptions(qps=0, user_agent="bench-request-cost"))
        try:
            harness.install(store, plane.kubeconfig, real=True)
            pids = plane.pids()
            time.sleep(3)
            idle = idle_rate(pids, idle_seconds)
            print(f"# idle: API server {idle['apiserver']:.3f}, etcd {idle['etcd']:.3f} CPU-s per s", flush=True)
            meter = Meter(pids, idle)
            sender = Sender(store)
            order = [v for _ in range(repeat) for v in VARIANTS if v in variants]
            for index, variant in enumerate(order):
                results.setdefault(variant, []).append(
                    run_variant(variant, index, requests, nodes, templates, template_uid, sender, meter, threads)
                )
        finally:
            store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests of each kind per variant (one per pod)")
    parser.add_argument("--threads", type=int, default=16, help="concurrent clients")
    parser.add_argument("--nodes", type=int, default=500, help="node names the bindings name (no Node objects)")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--repeat", type=int, default=2, help="passes of each variant, interleaved")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds to measure the idle server first")
    parser.add_argument(
        "--cores", type=float, default=float(os.cpu_count() or 2), help="CPU the floor divides (default: this box's)"
    )
    parser.add_argument(
        "--fake-nodes-ms",
        type=float,
        default=3.0,
        help="the fake nodes' CPU per pod in a fill (bench_fill.py's fake-nodes CPU-s / pods)",
    )
    parser.add_argument(
        "--kube-rate", type=float, default=221.8, help="kube-scheduler's pods/s in bench_fill.py at QPS 1,000"
    )
    args = parser.parse_args()
    if "as-sent" not in args.variants:
        parser.error("--variants must include as-sent (the floor is computed from it)")
    from rich.console import Console
    from rich.table import Table

    results = measure(args.variants, args.requests, args.threads, args.nodes, args.repeat, args.idle)

    console = Console(width=240)
    title = (
        f"CPU per request, {args.requests:,} of each kind from {args.threads} clients, ms: median (range) of "
        f"{args.repeat} passes"
    )
    table = Table(title=title)
    for col in (
        "request",
        "sent by",
        "per pod KAI",
        "per pod kube",
        "API server",
        "etcd",
        "server+etcd",
        "client",
        "bytes sent",
        "bytes answered",
    ):
        table.add_column(col, justify="right" if col not in ("request", "sent by") else "left")
    others = [v for v in results if v != "as-sent"]
    for v in others:
        table.add_column(f"server+etcd {v}", justify="right")
    sent = results["as-sent"]
    for kind in KINDS:
        passes = [p[kind.key] for p in sent]
        last = passes[-1]
        low, high = kind.kai
        cells = [
            kind.label,
            kind.sender,
            f"{low:g}" if low == high else f"{low:g}–{high:g}",
            f"{kind.kube:g}" if kind.kube else "",
            f"{median_ms(passes, lambda m: m.apiserver):.2f}",
            f"{median_ms(passes, lambda m: m.etcd):.2f}",
            span_ms(passes, server_of),
            span_ms(passes, lambda m: m.client),
            f"{last.request_bytes / last.requests:.0f}",
            f"{last.answer_bytes / last.requests:.0f}" if last.answer_bytes else "",
        ]
        for v in others:
            other = [p[kind.key] for p in results[v]]
            errors = sum(len(m.errors) for m in other)
            cells.append(span_ms(other, server_of) + (f" ({errors} errors)" if errors else ""))
        table.add_row(*cells)
    totals = {v: per_pod(passes) for v, passes in results.items()}

    def total(v: str) -> str:
        figures = totals[v]
        text = f"{statistics.median(figures):.2f}"
        return text if len(figures) == 1 else f"{text} ({min(figures):.2f}–{max(figures):.2f})"

    table.add_row("one pod, KAI's counts (low)", "", "", "", "", "", total("as-sent"), "", "", "", *map(total, others))
    console.print(table)
    floor = Table(title=f"The floor on {args.cores:g} cores (fake nodes {args.fake_nodes_ms:g} ms per pod, given)")
    for col in ("", "KAI's protocol", "kube-scheduler"):
        floor.add_column(col, justify="left" if not col else "right")
    for row in floors(results, args.cores, args.fake_nodes_ms, args.kube_rate):
        floor.add_row(*row)
    console.print(floor)


if __name__ == "__main__":
    main()
