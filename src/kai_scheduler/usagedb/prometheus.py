"""Queue usage from Prometheus' HTTP query API (§5.5; KAI `pkg/scheduler/cache/usagedb/prometheus/`).

The queue controller exports `kai_queue_allocated_gpus`, `kai_queue_allocated_cpu_cores` and
`kai_queue_allocated_memory_bytes` (label `queue_name`); node capacity comes from kube-state-metrics. Per
resource, two instant queries (sliding window), with D = `0.5^((<now> - time()) / <halfLife>)` when a half-life
is set:

    sum_over_time(((<capacity metric>) * (D))[<window>s:<resolution>s])
    sum_over_time(((<allocation metric>) * (D))[<window>s:<resolution>s])

Tumbling and cron windows use range queries of `(<metric>) * (D)` from the window start to now with the
resolution as step, summing each series' points. Usage = allocation sum / capacity sum, per queue. A capacity
query without data fails the fetch, as in KAI (so every capacity metric must have an exporter); a capacity of 0
leaves that resource's usage out.

Failures never reach the scheduler: `usage(now)` fetches at most once per fetch interval, each request bounded
by `usageQueryTimeout`; on failure it logs a warning and answers the last usage it got. Data older than the
staleness period is still used, with a warning. `start()` moves fetching to a background thread, as KAI does,
so a slow Prometheus never delays a cycle; `wait_first()` lets the scheduler wait up to `waitTimeout` for the
first answer at start.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

import orjson
import urllib3

from kai_scheduler.api.clock import Clock
from kai_scheduler.usagedb import windows
from kai_scheduler.usagedb.interface import QueueUsage, UsageVector
from kai_scheduler.usagedb.params import UsageParams, WindowType

log = logging.getLogger(__name__)
QUEUE_LABEL = "queue_name"


class UsageFetchError(Exception):
    """Prometheus could not be asked, or its answer was not usable; the message says which."""


class PrometheusUsage:
    """States: never fetched (usage empty) → fetched (usage as of `fetched_at`); a failed fetch keeps the last
    good usage. Thread-safe: the background fetcher and the scheduler share `_latest` under a lock."""

    def __init__(self, url: str, params: UsageParams, clock: Clock, *, http: urllib3.PoolManager | None = None) -> None:
        self.url = url.rstrip("/")
        self.params = params
        self.clock = clock
        self.http = http or urllib3.PoolManager(retries=False)
        self._lock = threading.Lock()
        self._latest = QueueUsage()
        self._last_attempt: float | None = None
        self._stale_warned_for: float | None = None
        self._first = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- what the scheduler calls ---------------------------------------------------------------------------

    def usage(self, now: float) -> QueueUsage:
        """The latest usage; fetches first when due and no background thread runs. Never raises."""
        if self._thread is None and (
            self._last_attempt is None or now - self._last_attempt >= self.params.fetch_interval
        ):
            self.refresh(now)
        with self._lock:
            latest = self._latest
        self._warn_if_stale(latest, now)
        return latest

    def observe(self, now: float, allocated: Mapping[str, UsageVector], capacity: UsageVector) -> None:
        """Nothing to do: in a cluster the queue controller exports allocation to Prometheus."""

    def start(self) -> None:
        """Fetch every fetch interval on a daemon thread until `stop()`."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="usage-fetcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.params.extra.usage_query_timeout + 1)

    def wait_first(self) -> bool:
        """Wait up to the wait timeout for the first fetch attempt to end; whether it did."""
        return self._first.wait(self.params.wait_timeout)

    # --- fetching -------------------------------------------------------------------------------------------

    def refresh(self, now: float) -> bool:
        """Fetch once; keep the result, or log why not and keep the last one. Whether it succeeded."""
        self._last_attempt = now
        try:
            fresh = self.fetch(now)
        except UsageFetchError as err:
            with self._lock:
                since = self._latest.fetched_at
            log.warning(
                "usage DB unavailable; scheduling on the last known usage",
                extra={"url": self.url, "reason": str(err), "last_fetch": since},
            )
            return False
        finally:
            self._first.set()
        with self._lock:
            self._latest = fresh
        return True

    def fetch(self, now: float) -> QueueUsage:
        """Query capacity and allocation of every resource at `now`; UsageFetchError on any failure."""
        started = time.perf_counter()
        per_queue: dict[str, list[float]] = {}
        for r, (allocation, capacity_metric) in enumerate(self.params.extra.metrics()):
            capacity = self._capacity(capacity_metric, now)
            if capacity <= 0:
                continue
            for queue, amount in self._query(allocation, now, by_queue=True).items():
                per_queue.setdefault(queue, [0.0, 0.0, 0.0])[r] = amount / capacity
        by_queue = {q: (v[0], v[1], v[2]) for q, v in sorted(per_queue.items())}
        return QueueUsage(by_queue, now, query_seconds=time.perf_counter() - started)

    def _capacity(self, metric: str, now: float) -> float:
        """The capacity summed over the window; UsageFetchError when the metric has no data, as KAI fails the
        whole fetch then (a capacity metric without its exporter, kube-state-metrics by default)."""
        found = self._query(metric, now)
        if not found:
            raise UsageFetchError(f"no data for the capacity metric {self.query_text(metric, now)}")
        return sum(found.values())

    def query_text(self, metric: str, now: float) -> str:
        """The PromQL for one metric: instant `sum_over_time` (sliding) or the decayed series (range)."""
        decayed = metric
        if self.params.half_life is not None:
            decayed = f"(({metric}) * ({decay_expression(now, self.params.half_life)}))"
        if self.params.window_type is WindowType.SLIDING:
            window = _duration(self.params.window_size)
            return f"sum_over_time(({decayed})[{window}:{_duration(self.params.extra.query_resolution)}])"
        return decayed

    def _query(self, metric: str, now: float, *, by_queue: bool = False) -> dict[str, float]:
        """Sum of each series (by `queue_name` when `by_queue`, else one total under "")."""
        text = self.query_text(metric, now)
        if self.params.window_type is WindowType.SLIDING:
            data = self._get("/api/v1/query", {"query": text, "time": f"{now:.3f}"})
        else:
            start = windows.window_start(self.params, now)
            data = self._get(
                "/api/v1/query_range",
                {
                    "query": text,
                    "start": f"{start:.3f}",
                    "end": f"{now:.3f}",
                    "step": _duration(self.params.extra.query_resolution),
                },
            )
        out: dict[str, float] = {}
        for series in _result(data):
            key = str(series.get("metric", {}).get(QUEUE_LABEL, "")) if by_queue else ""
            if by_queue and not key:
                continue
            out[key] = out.get(key, 0.0) + _series_sum(series)
        return out

    def _get(self, path: str, fields: dict[str, str]) -> Any:
        timeout = urllib3.Timeout(total=self.params.extra.usage_query_timeout)
        try:
            response = self.http.request("GET", self.url + path, fields=fields, timeout=timeout, retries=False)
        except urllib3.exceptions.HTTPError as err:
            raise UsageFetchError(f"{path}: {type(err).__name__}: {err}") from err
        if response.status != 200:
            raise UsageFetchError(f"{path}: HTTP {response.status}: {response.data[:200]!r}")
        try:
            body = orjson.loads(response.data)
        except orjson.JSONDecodeError as err:
            raise UsageFetchError(f"{path}: the answer is not JSON") from err
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error", "") if isinstance(body, dict) else ""
            raise UsageFetchError(f"{path}: query failed: {error or repr(body)[:200]}")
        return body.get("data")

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.refresh(self.clock.now())
            self._stop.wait(self.params.fetch_interval)

    def _warn_if_stale(self, latest: QueueUsage, now: float) -> None:
        fetched = latest.fetched_at
        if fetched is None or now - fetched <= self.params.staleness_period or self._stale_warned_for == fetched:
            return
        self._stale_warned_for = fetched
        log.warning(
            "usage data is stale; still using it",
            extra={"age_seconds": now - fetched, "staleness_period": self.params.staleness_period},
        )


def decay_expression(now: float, half_life: float) -> str:
    """PromQL weight of a sample at time() relative to `now`: 0.5^((now - time()) / halfLife)."""
    return f"0.5^(({int(now)} - time()) / {half_life:f})"


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def _result(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise UsageFetchError(f"unexpected answer shape: {str(data)[:200]}")
    kind = data.get("resultType")
    if kind == "scalar":
        return [{"metric": {}, "value": data["result"]}]
    if kind not in ("vector", "matrix"):
        raise UsageFetchError(f"unexpected result type {kind!r}")
    return [s for s in data["result"] if isinstance(s, dict)]


def _series_sum(series: dict[str, Any]) -> float:
    """An instant sample's value, or the sum of a range series' points; NaN and bad values count as 0."""
    points = series.get("values") or ([series["value"]] if "value" in series else [])
    total = 0.0
    for point in points:
        try:
            value = float(point[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(value):
            total += value
    return total
