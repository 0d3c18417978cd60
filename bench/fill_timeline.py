"""What `bench_fill.py` measures in its own process: a concurrent pod creator and a watcher that stamps each
pod's stages (created, its PodGroup seen, its BindRequest seen, bound, Running) with the time the watch
delivered them.

Times are `time.monotonic()` of the benchmark process; a watch delivers an event a few milliseconds after the
write, the same delay for every scheduler compared.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kai_scheduler.store.interface import JSON, AlreadyExists, Gone
from kai_scheduler.store.kube import KubeOptions, KubeStore

STAGES = ("created", "podgroup", "bindrequest", "bound", "running")


@dataclass
class Timeline:
    """Per pod name: stage -> first time seen."""

    stamps: dict[str, dict[str, float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mark(self, pod: str, stage: str, at: float | None = None) -> None:
        with self.lock:
            self.stamps.setdefault(pod, {}).setdefault(stage, time.monotonic() if at is None else at)

    def count(self, stage: str) -> int:
        with self.lock:
            return sum(1 for s in self.stamps.values() if stage in s)

    def first(self, stage: str) -> float:
        return min(s[stage] for s in self.stamps.values() if stage in s)

    def last(self, stage: str) -> float:
        return max(s[stage] for s in self.stamps.values() if stage in s)

    def gaps(self, start: str, end: str) -> list[float]:
        return [s[end] - s[start] for s in self.stamps.values() if start in s and end in s]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


class Watcher:
    """Watches pods, PodGroups and BindRequests of one namespace and stamps the timeline."""

    def __init__(
        self, kubeconfig: str, namespace: str, timeline: Timeline, owned: dict[str, list[str]] | None = None
    ) -> None:
        self.store = KubeStore.connect(kubeconfig, options=KubeOptions(qps=0, user_agent="bench-watcher"))
        self.namespace = namespace
        self.timeline = timeline
        self.owned = owned or {}  # owner name → its pods (a PodGroup the podgrouper made for that owner)
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(res, fn), daemon=True)
            for res, fn in (("pods", self._pod), ("podgroups", self._podgroup), ("bindrequests", self._bindrequest))
        ]
        for t in self.threads:
            t.start()

    def _run(self, resource: str, handle: Callable[[JSON], None]) -> None:
        items, version = self.store.list(resource, self.namespace)
        for obj in items:
            handle(obj)
        while not self.stop.is_set():
            try:
                events = list(self.store.watch(resource, version, timeout=0.05))
            except Gone:
                items, version = self.store.list(resource, self.namespace)
                for obj in items:
                    handle(obj)
                continue
            for event in events:
                version = event.object.get("metadata", {}).get("resourceVersion", version)
                if event.type in ("ADDED", "MODIFIED") and event.object["metadata"].get("namespace") == self.namespace:
                    handle(event.object)

    def _pod(self, pod: JSON) -> None:
        name = pod["metadata"]["name"]
        if pod.get("spec", {}).get("nodeName"):
            self.timeline.mark(name, "bound")
        if pod.get("status", {}).get("phase") == "Running":
            self.timeline.mark(name, "running")

    def _podgroup(self, pg: JSON) -> None:
        for ref in pg["metadata"].get("ownerReferences") or ():
            if ref.get("kind") == "Pod":
                self.timeline.mark(ref["name"], "podgroup")
            for pod in self.owned.get(ref.get("name", "")) or ():
                self.timeline.mark(pod, "podgroup")
        for pod in pg["metadata"].get("labels", {}).get("bench/pods", "").split("."):
            if pod:
                self.timeline.mark(pod, "podgroup")

    def _bindrequest(self, br: JSON) -> None:
        name = br.get("spec", {}).get("podName")
        if name:
            self.timeline.mark(name, "bindrequest")

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)
        self.store.close()


class IdleWatcher:
    """A client that watches every object of one kind and drops the events: what one more watcher costs."""

    def __init__(self, kubeconfig: str, resource: str) -> None:
        self.store = KubeStore.connect(kubeconfig, options=KubeOptions(qps=0, user_agent="bench-idle-watcher"))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(resource,), daemon=True)
        self.thread.start()

    def _run(self, resource: str) -> None:
        _, version = self.store.list(resource)
        while not self.stop.is_set():
            try:
                for event in self.store.watch(resource, version, timeout=0.05):
                    version = event.object.get("metadata", {}).get("resourceVersion", version)
            except Gone:
                _, version = self.store.list(resource)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.store.close()


def create_all(
    kubeconfig: str,
    objects: Iterable[tuple[str, JSON]],
    timeline: Timeline,
    *,
    processes: int = 4,
    threads: int = 8,
    rate: float = 0.0,
) -> float:
    """Create every object from `processes` processes of `threads` clients each (no client limit: one Python
    process alone tops out near 150 creates/s on a busy 2-core box); stamp each pod's `created`.

    `rate` > 0 paces the submissions at that many objects per second in all (an offered load) instead of as
    fast as the server takes them. Returns the seconds from the first create to the last answer."""
    items = list(objects)
    others = [obj for pod, obj in items if not pod]
    if others:  # PodGroups before any of their pods, untimed
        _create_chunk(kubeconfig, [("", obj) for obj in others], threads, 0.0, 0.0)
    pods = [(pod, obj) for pod, obj in items if pod]
    if not pods:
        return 0.0
    chunks = [pods[i::processes] for i in range(processes)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        go = time.time() + 3.0  # every process has connected by then
        pending = [
            pool.apply_async(_create_chunk, (kubeconfig, chunk, threads, rate / processes, go)) for chunk in chunks
        ]
        for result in pending:
            for pod, at in result.get():
                timeline.mark(pod, "created", at)
    return timeline.last("created") - timeline.first("created")


def _create_chunk(
    kubeconfig: str, items: list[tuple[str, JSON]], threads: int, rate: float, go: float
) -> list[tuple[str, float]]:
    """Create `items` with `threads` clients, starting at wall-clock time `go`; (pod, monotonic time created)."""
    store = KubeStore.connect(kubeconfig, options=KubeOptions(qps=0, user_agent="bench-creator"))
    stamps: list[tuple[str, float]] = []

    def one(item: tuple[str, JSON]) -> None:
        pod_name, obj = item
        with contextlib.suppress(AlreadyExists):
            store.create(obj)
        if pod_name:
            stamps.append((pod_name, time.monotonic()))

    time.sleep(max(0.0, go - time.time()))
    started = time.monotonic()
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-create") as pool:
        futures = []
        for i, item in enumerate(items):
            if rate > 0:
                delay = started + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            futures.append(pool.submit(one, item))
        for f in futures:
            f.result()
    store.close()
    return stamps


def server_requests(kubeconfig: str) -> dict[tuple[str, str], float]:
    """The API server's `apiserver_request_total` by (verb, resource[/subresource]), from its /metrics."""
    from kai_scheduler.store.kube_http.config import load_client

    client = load_client(kubeconfig)
    _, url, headers, _, _ = client.param_serialize(
        "GET", "/metrics", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"]
    )
    try:
        text = client.rest_client.pool_manager.request("GET", url, headers=headers).data.decode()
    finally:
        client.close()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, value = line[len("apiserver_request_total{") :].rsplit("} ", 1)
        labels = dict(part.split("=", 1) for part in labels_text.split('",') if "=" in part)
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("verb") in ("WATCH", "LIST", "GET", "POST", "PUT", "PATCH", "DELETE", "APPLY"):
            resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
            key = (labels["verb"], resource)
            out[key] = out.get(key, 0.0) + float(value)
    return out


def profile_server(kubeconfig: str, path: str, seconds: int) -> threading.Thread:
    """Fetch the API server's Go CPU profile (`/debug/pprof/profile`, on by default) over the next `seconds`
    into `path`, in a background thread; read it with `go tool pprof`."""
    from kai_scheduler.store.kube_http.config import load_client

    def fetch() -> None:
        client = load_client(kubeconfig)
        _, url, headers, _, _ = client.param_serialize(
            "GET", "/debug/pprof/profile", query_params=[("seconds", str(seconds))], auth_settings=["BearerToken"]
        )
        try:
            answer = client.rest_client.pool_manager.request("GET", url, headers=headers, timeout=seconds + 60)
            with open(path, "wb") as out:
                out.write(answer.data)
        finally:
            client.close()

    thread = threading.Thread(target=fetch, daemon=True)
    thread.start()
    return thread
