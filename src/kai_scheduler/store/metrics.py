"""The standard series of a controller-runtime program: its controllers' reconciles and work queues
(controller-runtime v0.19) and its client's requests (client-go v0.32), which SREs' dashboards and alerts use.

The components are level-triggered loops, not per-key work queues; the series map onto them so (docs/components.md,
"Controller metrics"):

- a *reconcile* is one object the loop handles (a BindRequest bound, a pod grouped, a PodGroup's or a Queue's
  status computed and written), with its result: `success`, `error` (the API server refused a write, a bind
  failed), `requeue` / `requeue_after` (taken up again at a later pass without an error: a reservation pod still
  waiting for its GPU, a failed object retried after a backoff);
- the *work queue* is the set of keys a pass took up: `add` when a pass finds a key due (a key already waiting
  is not added twice, as client-go's queue), `start` when the loop begins on it, `done` when it is handled.

The counts are plain numbers under one lock each, read into families when /metrics is scraped: a reconcile or a
request costs a lock, an add and a `bisect`, not the Python client's per-child locks and label lookups (the store's
request path is hot, bench/README.md).
"""

from __future__ import annotations

import bisect
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

RESULTS = ("success", "error", "requeue", "requeue_after")

# controller-runtime v0.19 `controller_runtime_reconcile_time_seconds`.
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0,
    50.0, 60.0,
)  # fmt: skip
# client-go's work queue histograms: prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns … 1000 s.
WORKQUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 4))
# client-go v0.32 (component-base) `rest_client_request_duration_seconds`.
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

Now = Callable[[], float]


class Histogram:
    """Bucket counts (not cumulative), sum and count; the caller holds the lock that guards it."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def buckets(self) -> list[tuple[str, float]]:
        out, total = [], 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), float(total)))
        return out


@dataclass(frozen=True, slots=True)
class Item:
    """A key the loop began on: what `Controller.done` needs."""

    key: str
    started: float


class Reconcile:
    """The result a `Controller.reconcile` block reports."""

    __slots__ = ("_controller", "result")

    def __init__(self, controller: Controller) -> None:
        self._controller = controller
        self.result = "success"

    def retry(self) -> None:
        """The key failed and will be taken up again after a backoff: an error, and one retry."""
        self._controller.retry()
        self.result = "error"


class Controller:
    """One controller's reconciles and work queue; thread-safe (the binder's and pod grouper's writer threads)."""

    def __init__(self, name: str, max_concurrent: int = 1, now: Now = time.monotonic) -> None:
        self.name = name
        self.max_concurrent = max_concurrent
        self.now = now
        self._lock = threading.Lock()
        self.results = dict.fromkeys(RESULTS, 0)
        self.errors = 0
        self.adds = 0
        self.retries = 0
        self.active = 0
        self._queued: dict[str, float] = {}  # key → when it was added, while it waits
        self._running: dict[int, float] = {}  # id of an Item → when it started
        self.reconcile_time = Histogram(RECONCILE_BUCKETS)
        self.queue_duration = Histogram(WORKQUEUE_BUCKETS)
        self.work_duration = Histogram(WORKQUEUE_BUCKETS)

    def add(self, keys: Iterable[str]) -> None:
        """The keys a pass found due; one already waiting is not added again."""
        now = self.now()
        with self._lock:
            for key in keys:
                if key not in self._queued:
                    self._queued[key] = now
                    self.adds += 1

    def start(self, key: str, spent: float = 0.0) -> Item:
        """The loop begins on `key` (added first if it was not waiting). `spent`: seconds of this reconcile
        already done before (the pod grouper plans a pod on its loop thread, then writes it on a writer thread):
        they count in its reconcile time, not in its wait."""
        now = self.now()
        item = Item(key, now - spent)
        with self._lock:
            added = self._queued.pop(key, None)
            if added is None:
                self.adds += 1
                added = item.started
            self.queue_duration.observe(max(0.0, item.started - added))
            self.active += 1
            self._running[id(item)] = item.started
        return item

    def done(self, item: Item, result: str = "success") -> None:
        """`item` handled with `result` (one of RESULTS)."""
        seconds = max(0.0, self.now() - item.started)
        with self._lock:
            self._running.pop(id(item), None)
            self.active -= 1
            self.results[result] += 1
            if result == "error":
                self.errors += 1
            self.reconcile_time.observe(seconds)
            self.work_duration.observe(seconds)

    def retry(self) -> None:
        """A key failed and will be taken up again after a backoff (client-go's AddRateLimited)."""
        with self._lock:
            self.retries += 1

    @contextmanager
    def reconcile(self, key: str) -> Iterator[Reconcile]:
        """Count the block as the reconcile of `key`: `error` if it raises, else the result it set on the
        `Reconcile` it is given (`success` unless it says otherwise)."""
        outcome = Reconcile(self)
        item = self.start(key)
        try:
            yield outcome
        except BaseException:
            self.done(item, "error")
            raise
        self.done(item, outcome.result)

    def forget(self, keys: Iterable[str]) -> None:
        """Keys that were added but will not be worked on in this pass (gone, or not due after all)."""
        with self._lock:
            for key in keys:
                self._queued.pop(key, None)

    def snapshot(self) -> _Snapshot:
        now = self.now()
        with self._lock:
            running = list(self._running.values())
            return _Snapshot(
                results=dict(self.results),
                errors=self.errors,
                adds=self.adds,
                retries=self.retries,
                active=self.active,
                depth=len(self._queued),
                unfinished=sum(now - s for s in running),
                longest=max((now - s for s in running), default=0.0),
                reconcile_time=(self.reconcile_time.buckets(), self.reconcile_time.sum),
                queue_duration=(self.queue_duration.buckets(), self.queue_duration.sum),
                work_duration=(self.work_duration.buckets(), self.work_duration.sum),
            )


@dataclass(frozen=True, slots=True)
class _Snapshot:
    results: dict[str, int]
    errors: int
    adds: int
    retries: int
    active: int
    depth: int
    unfinished: float
    longest: float
    reconcile_time: tuple[list[tuple[str, float]], float]
    queue_duration: tuple[list[tuple[str, float]], float]
    work_duration: tuple[list[tuple[str, float]], float]


class ControllerCollector(Collector):
    """controller-runtime's controller and work queue series for every controller registered in one registry."""

    def __init__(self) -> None:
        self.controllers: list[Controller] = []

    def collect(self) -> Iterator[Metric]:
        snaps = [(c.name, c.max_concurrent, c.snapshot()) for c in self.controllers]
        total = CounterMetricFamily(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            labels=["controller", "result"],
        )
        errors = CounterMetricFamily(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            labels=["controller"],
        )
        seconds = HistogramMetricFamily(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            labels=["controller"],
        )
        active = GaugeMetricFamily(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels=["controller"],
        )
        maximum = GaugeMetricFamily(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            labels=["controller"],
        )
        queue = ["name", "controller"]
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=queue)
        adds = CounterMetricFamily("workqueue_adds", "Total number of adds handled by workqueue", labels=queue)
        waited = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels=queue,
        )
        worked = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=queue,
        )
        retries = CounterMetricFamily("workqueue_retries", "Total number of retries handled by workqueue", labels=queue)
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads "
            "by observing the rate at which this increases.",
            labels=queue,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=queue,
        )
        for name, most, snap in snaps:
            for result, count in snap.results.items():
                total.add_metric([name, result], float(count))
            errors.add_metric([name], float(snap.errors))
            seconds.add_metric([name], snap.reconcile_time[0], snap.reconcile_time[1])
            active.add_metric([name], float(snap.active))
            maximum.add_metric([name], float(most))
            q = [name, name]  # controller-runtime names a controller's queue after the controller
            depth.add_metric(q, float(snap.depth))
            adds.add_metric(q, float(snap.adds))
            waited.add_metric(q, snap.queue_duration[0], snap.queue_duration[1])
            worked.add_metric(q, snap.work_duration[0], snap.work_duration[1])
            retries.add_metric(q, float(snap.retries))
            unfinished.add_metric(q, snap.unfinished)
            longest.add_metric(q, snap.longest)
        yield from (total, errors, seconds, active, maximum, depth, adds, waited, worked, retries, unfinished, longest)


_COLLECTORS: weakref.WeakKeyDictionary[CollectorRegistry, ControllerCollector] = weakref.WeakKeyDictionary()
_COLLECTORS_LOCK = threading.Lock()


def controller(registry: CollectorRegistry | None, name: str, max_concurrent: int = 1) -> Controller:
    """A controller's counts, exported in `registry` (None: counted, exported nowhere, as in the simulator)."""
    ctrl = Controller(name, max_concurrent)
    if registry is None:
        return ctrl
    with _COLLECTORS_LOCK:
        collector = _COLLECTORS.get(registry)
        if collector is None:
            collector = _COLLECTORS[registry] = ControllerCollector()
            registry.register(collector)
        # A controller built again under the same name (a component rebuilt) takes the place of the old one.
        collector.controllers = [c for c in collector.controllers if c.name != name] + [ctrl]
    return ctrl


class Requests(Collector):
    """client-go's `rest_client_requests_total{code,method,host}` and `rest_client_request_duration_seconds{verb,
    host}`: one count and one observation per attempt sent to the API server (a retried 429 is two), `code`
    `<error>` when no answer came."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._codes: dict[tuple[int, str], int] = {}  # (status or 0, method) → count
        self._durations: dict[str, Histogram] = {}  # verb → histogram

    def record(self, method: str, status: int, seconds: float) -> None:
        """One attempt: its HTTP method, status (0: no answer) and time to the answer's headers."""
        with self._lock:
            key = (status, method)
            self._codes[key] = self._codes.get(key, 0) + 1
            histogram = self._durations.get(method)
            if histogram is None:
                histogram = self._durations[method] = Histogram(REQUEST_BUCKETS)
            # `histogram.observe(seconds)` without its call: this runs for every request
            histogram.counts[bisect.bisect_left(histogram.bounds, seconds)] += 1
            histogram.sum += seconds

    def count(self, code: str, method: str) -> int:
        with self._lock:
            return self._codes.get((int(code) if code != "<error>" else 0, method), 0)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            codes = sorted(self._codes.items())
            durations = sorted((verb, h.buckets(), h.sum) for verb, h in self._durations.items())
        requests = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=["code", "method", "host"],
        )
        for (status, method), count in codes:
            requests.add_metric([str(status) if status else "<error>", method, self.host], float(count))
        latency = HistogramMetricFamily(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            labels=["verb", "host"],
        )
        for verb, buckets, total in durations:
            latency.add_metric([verb, self.host], buckets, total)
        yield requests
        yield latency
