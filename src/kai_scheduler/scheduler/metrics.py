"""The scheduler's Prometheus metrics with KAI's names (BEHAVIOR.md §9.1), recorded from a `CycleResult`.

Names are prefixed with the metrics namespace (`--metrics-namespace`, default `kai`). Recorded here:

- gauges `e2e_scheduling_latency_milliseconds` (the whole cycle), `open_session_latency_milliseconds`,
  `close_session_latency_milliseconds`, `action_scheduling_latency_milliseconds{action}`;
- histogram `task_scheduling_latency_milliseconds` (pod creation → the cycle that decided its bind; buckets
  5 ms … 2560 ms, exponential);
- counters `podgroups_scheduled_by_action{action}` (podgroups that got tasks allocated or pipelined by the
  action), `podgroups_acted_on_by_action{action}` (podgroups any operation of the action touched: placed or
  evicted; KAI counts the podgroups the action tried, which a cycle's result does not show),
  `pod_group_evicted_pods_total{podgroup,uid,nodepool,action}`;
- gauges per queue (label `queue_name`): `queue_fair_share_cpu_cores`, `queue_fair_share_memory_gb`
  (10^9 bytes), `queue_fair_share_gpu`, `queue_cpu_usage`, `queue_memory_usage`, `queue_gpu_usage` (the
  time-based usage of §5.5, 0 when it is off); a queue that goes away loses its series.

The Python client exposes a counter with a `_total` suffix (`kai_podgroups_scheduled_by_action_total`);
KAI's Go client does not add one. Not recorded (a cycle's result does not carry them): plugin latencies,
`total_preemption_attempts`, `task_bind_latency_milliseconds` (the binder's), usage query latency and the
scenario-search series.
"""

from __future__ import annotations

from collections import defaultdict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kai_scheduler.framework.statement import Op, Operation
from kai_scheduler.scheduler.result import CycleResult

LATENCY_BUCKETS = tuple(5.0 * 2**i for i in range(10))  # 5 ms … 2560 ms
GIGABYTE = 1e9
MILLICORES = 1000.0
_PLACED = (Op.ALLOCATE, Op.PIPELINE)


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry, namespace: str = "kai", node_pool: str = "") -> None:
        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, labels, namespace=namespace, registry=registry)

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            return Counter(name, doc, labels, namespace=namespace, registry=registry)

        self.node_pool = node_pool
        self.e2e = gauge("e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds")
        self.open_session = gauge("open_session_latency_milliseconds", "Open session latency in milliseconds")
        self.close_session = gauge("close_session_latency_milliseconds", "Close session latency in milliseconds")
        self.action_latency = gauge(
            "action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds", ("action",)
        )
        self.task_latency = Histogram(
            "task_scheduling_latency_milliseconds",
            "Task scheduling latency (pod creation to bind) in milliseconds",
            namespace=namespace,
            registry=registry,
            buckets=LATENCY_BUCKETS,
        )
        self.scheduled = counter("podgroups_scheduled_by_action", "Podgroups scheduled per action", ("action",))
        self.acted_on = counter("podgroups_acted_on_by_action", "Podgroups acted on per action", ("action",))
        self.evicted = counter(
            "pod_group_evicted_pods_total", "Pods evicted per podgroup", ("podgroup", "uid", "nodepool", "action")
        )
        queue = ("queue_name",)
        self.fair_share = (
            gauge("queue_fair_share_cpu_cores", "Queue fair share of CPU in cores", queue),
            gauge("queue_fair_share_memory_gb", "Queue fair share of memory in GB", queue),
            gauge("queue_fair_share_gpu", "Queue fair share of GPUs", queue),
        )
        self.usage = (
            gauge("queue_cpu_usage", "Queue CPU usage (time-based fair share)", queue),
            gauge("queue_memory_usage", "Queue memory usage (time-based fair share)", queue),
            gauge("queue_gpu_usage", "Queue GPU usage (time-based fair share)", queue),
        )
        self._queues: set[str] = set()

    def record(self, result: CycleResult) -> None:
        self.e2e.set(result.seconds * 1000)
        self.open_session.set(result.open_session_seconds * 1000)
        self.close_session.set(result.close_session_seconds * 1000)
        for action, seconds in result.action_seconds.items():
            self.action_latency.labels(action).set(seconds * 1000)
        for action, ops in by_action(result).items():
            self._operations(result, action, ops)
        for op in result.operations:
            if op.op is Op.ALLOCATE and op.task.creation:
                self.task_latency.observe(max(0.0, result.now - op.task.creation) * 1000)
        self._queue_gauges(result)

    def _operations(self, result: CycleResult, action: str, ops: list[Operation]) -> None:
        placed = {op.task.job_uid for op in ops if op.op in _PLACED}
        touched = {op.task.job_uid for op in ops}
        if placed:
            self.scheduled.labels(action).inc(len(placed))
        if touched:
            self.acted_on.labels(action).inc(len(touched))
        evicted: dict[tuple[str, str], int] = defaultdict(int)
        for op in ops:
            if op.op is Op.EVICT:
                cause = op.eviction.action if op.eviction is not None else action
                evicted[(op.task.job_uid, cause)] += 1
        for (uid, cause), count in evicted.items():
            job = result.snapshot.jobs.get(uid)
            name = job.name if job is not None else ""
            self.evicted.labels(name, uid, self.node_pool, cause).inc(count)

    def _queue_gauges(self, result: CycleResult) -> None:
        scale = (MILLICORES, GIGABYTE, 1.0)
        for name, share in result.queue_shares.items():
            for gauge, value, unit in zip(self.fair_share, share.fair_share, scale, strict=True):
                gauge.labels(name).set(float(value) / unit)
            for gauge, value in zip(self.usage, share.usage, strict=True):
                gauge.labels(name).set(float(value))
        for gone in self._queues - set(result.queue_shares):
            for gauge in (*self.fair_share, *self.usage):
                gauge.remove(gone)
        self._queues = set(result.queue_shares)


def by_action(result: CycleResult) -> dict[str, list[Operation]]:
    """The cycle's operations split by the action that committed them (in the order the actions ran)."""
    split: dict[str, list[Operation]] = {}
    start = 0
    for action, end in result.action_ends.items():
        split[action] = result.operations[start:end]
        start = end
    return split
