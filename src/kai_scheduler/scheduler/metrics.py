"""The scheduler's Prometheus metrics with KAI's names, types and labels (`docs/metrics/METRICS.md`, KAI
`pkg/scheduler/metrics/metrics.go`), recorded from a `CycleResult`.

Names are prefixed with the metrics namespace (`--metrics-namespace`, default `kai`). Recorded here:

- gauges `e2e_scheduling_latency_milliseconds` (the whole cycle), `open_session_latency_milliseconds`,
  `close_session_latency_milliseconds`, `plugin_scheduling_latency_milliseconds{plugin,OnSession}`,
  `action_scheduling_latency_milliseconds{action}`;
- histograms (5 ms … 2560 ms, exponential) `task_scheduling_latency_milliseconds` (pod creation → the cycle
  that decided its bind), `task_bind_latency_milliseconds` (writing one BindRequest, as KAI times its cache's
  `Bind`), `usage_query_latency_milliseconds` (registered; observed by the usage database's queries);
- counters, exposed without `_total` as KAI's Go client does (`store.exposition.GoCounter`):
  `podgroups_scheduled_by_action{action}` (podgroups that got tasks allocated or pipelined by the action),
  `podgroups_acted_on_by_action{action}` (the preemptors a victim action searched victims for),
  `total_preemption_attempts` (podgroups the preempt action placed, where KAI counts them),
  `scenarios_simulation_by_action{action}`, `scenarios_filtered_by_action{action}` (the victim search's
  scenarios simulated, and accumulated victim sets its cheap filters rejected);
- counters `pod_group_evicted_pods_total{podgroup,namespace,uid,nodepool,action}`,
  `scenario_search_jobs_total{action,result,reduced_budget}`, `scenario_search_action_budget_exhausted_total{action}`,
  `scenario_search_scenarios_total{action,generator,state}`, and the histogram (1 ms … 32.8 s, exponential)
  `scenario_search_duration_seconds{action,generator,result}`: the victim search as the cycle's session counted
  it (`framework.search_stats`);
- gauges of the configured search budgets (seconds): `scenario_search_action_budget_configured_seconds{action}`
  (the victim actions configured), `scenario_search_job_budget_configured_seconds`,
  `scenario_search_generator_budget_configured_seconds{generator}`;
- gauges per queue (labels `queue_name` = the display name, else the name; `queue_metadata_name`;
  `queue_display_name`): `queue_fair_share_cpu_cores`, `queue_fair_share_memory_gb` (10^9 bytes),
  `queue_fair_share_gpu`, `queue_cpu_usage`, `queue_memory_usage`, `queue_gpu_usage` (the time-based usage of
  §5.5, 0 when it is off); a queue that goes away loses its series.
"""

from __future__ import annotations

from collections import defaultdict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kai_scheduler.actions.common import budget
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.search_stats import SearchStats
from kai_scheduler.framework.statement import Op, Operation
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.store.exposition import GoCounter
from kai_scheduler.store.metric_names import check_namespace

LATENCY_BUCKETS = tuple(5.0 * 2**i for i in range(10))  # 5 ms … 2560 ms
SEARCH_BUCKETS = tuple(0.001 * 2**i for i in range(16))  # 1 ms … 32.768 s
GIGABYTE = 1e9
MILLICORES = 1000.0
_PLACED = (Op.ALLOCATE, Op.PIPELINE)
QUEUE_LABELS = ("queue_name", "queue_metadata_name", "queue_display_name")
SEARCHING_ACTIONS = ("reclaim", "preempt", "consolidation")  # the actions whose victim search has budgets
PREEMPT = "preempt"


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry, namespace: str = "kai", node_pool: str = "") -> None:
        check_namespace(namespace)
        prefix = f"{namespace}_" if namespace else ""

        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, labels, namespace=namespace, registry=registry)

        def histogram(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, namespace=namespace, registry=registry, buckets=LATENCY_BUCKETS)

        def go_counter(name: str, doc: str, labels: tuple[str, ...]) -> GoCounter:
            return GoCounter(prefix + name, doc, labels, registry)

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            return Counter(name, doc, labels, namespace=namespace, registry=registry)

        self.node_pool = node_pool
        self.e2e = gauge("e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds")
        self.open_session = gauge("open_session_latency_milliseconds", "Open session latency in milliseconds")
        self.close_session = gauge("close_session_latency_milliseconds", "Close session latency in milliseconds")
        self.plugin_latency = gauge(
            "plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            ("plugin", "OnSession"),
        )
        self.action_latency = gauge(
            "action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds", ("action",)
        )
        self.task_latency = histogram(
            "task_scheduling_latency_milliseconds", "Task scheduling latency (pod creation to bind) in milliseconds"
        )
        self.bind_latency = histogram("task_bind_latency_milliseconds", "Task bind latency in milliseconds")
        self.usage_query_latency = histogram(
            "usage_query_latency_milliseconds", "Usage database query latency in milliseconds"
        )
        self.scheduled = go_counter("podgroups_scheduled_by_action", "Podgroups scheduled per action", ("action",))
        self.acted_on = go_counter("podgroups_acted_on_by_action", "Podgroups tried per action", ("action",))
        self.simulated = go_counter("scenarios_simulation_by_action", "Scenarios simulated per action", ("action",))
        self.filtered = go_counter("scenarios_filtered_by_action", "Scenarios filtered per action", ("action",))
        self.preemption_attempts = go_counter("total_preemption_attempts", "Successful preemption attempts", ())
        self.preemption_attempts.inc(amount=0)  # a plain Go counter is exposed from the start, at 0
        self.evicted = counter(
            "pod_group_evicted_pods_total",
            "Pods evicted per podgroup",
            ("podgroup", "namespace", "uid", "nodepool", "action"),
        )
        self.search_jobs = counter(
            "scenario_search_jobs_total",
            "Jobs considered by the scenario search",
            ("action", "result", "reduced_budget"),
        )
        self.search_exhausted = counter(
            "scenario_search_action_budget_exhausted_total", "Action search budget exhaustions", ("action",)
        )
        self.search_scenarios = counter(
            "scenario_search_scenarios_total",
            "Scenarios of the scenario search by state",
            ("action", "generator", "state"),
        )
        self.search_seconds = Histogram(
            "scenario_search_duration_seconds",
            "Seconds of one generator attempt of the scenario search",
            ("action", "generator", "result"),
            namespace=namespace,
            registry=registry,
            buckets=SEARCH_BUCKETS,
        )
        self.action_budget = gauge(
            "scenario_search_action_budget_configured_seconds",
            "Configured action search budget in seconds",
            ("action",),
        )
        self.job_budget = gauge(
            "scenario_search_job_budget_configured_seconds", "Configured per-job search budget in seconds"
        )
        self.generator_budget = gauge(
            "scenario_search_generator_budget_configured_seconds",
            "Configured generator search budget in seconds",
            ("generator",),
        )
        self.fair_share = (
            gauge("queue_fair_share_cpu_cores", "Queue fair share of CPU in cores", QUEUE_LABELS),
            gauge("queue_fair_share_memory_gb", "Queue fair share of memory in GB", QUEUE_LABELS),
            gauge("queue_fair_share_gpu", "Queue fair share of GPUs", QUEUE_LABELS),
        )
        self.usage = (
            gauge("queue_cpu_usage", "Queue CPU usage (time-based fair share)", QUEUE_LABELS),
            gauge("queue_memory_usage", "Queue memory usage (time-based fair share)", QUEUE_LABELS),
            gauge("queue_gpu_usage", "Queue GPU usage (time-based fair share)", QUEUE_LABELS),
        )
        self._queues: dict[str, tuple[str, str, str]] = {}  # queue → the label values its series carry

    def configure(self, config: SchedulerConfig) -> None:
        """Set the configured search budgets (at start and after each reload of the configuration)."""
        limits = budget.SearchBudgets.parse(config.scenario_search_budgets)
        for action in SEARCHING_ACTIONS:
            if action in config.actions:
                self.action_budget.labels(action).set(limits.for_action(action))
        self.job_budget.set(limits.max_job)
        for generator, seconds in sorted(limits.generator.items()):
            self.generator_budget.labels(generator).set(seconds)

    def record(self, result: CycleResult) -> None:
        self.e2e.set(result.seconds * 1000)
        self.open_session.set(result.open_session_seconds * 1000)
        self.close_session.set(result.close_session_seconds * 1000)
        for phase, plugins in result.plugin_seconds.items():
            for plugin, seconds in plugins.items():
                self.plugin_latency.labels(plugin, phase).set(seconds * 1000)
        for action, seconds in result.action_seconds.items():
            self.action_latency.labels(action).set(seconds * 1000)
        for action, ops in by_action(result).items():
            self._operations(result, action, ops)
        for op in result.operations:
            if op.op is Op.ALLOCATE and op.task.creation:
                self.task_latency.observe(max(0.0, result.now - op.task.creation) * 1000)
        for seconds in result.bind_seconds:
            self.bind_latency.observe(seconds * 1000)
        for seconds in result.usage_query_seconds:
            self.usage_query_latency.observe(seconds * 1000)
        self._search(result.search)
        self._queue_gauges(result)

    def _search(self, search: SearchStats) -> None:
        for action, count in search.tried.items():
            self.acted_on.inc(action, amount=count)
        for action, count in search.simulated.items():
            self.simulated.inc(action, amount=count)
        for action, count in search.filtered.items():
            self.filtered.inc(action, amount=count)
        for (action, outcome, reduced), count in search.jobs.items():
            self.search_jobs.labels(action, outcome, "true" if reduced else "false").inc(count)
        for action, count in search.budget_exhausted.items():
            self.search_exhausted.labels(action).inc(count)
        for (action, generator, state), count in search.scenarios.items():
            self.search_scenarios.labels(action, generator, state).inc(count)
        for action, generator, outcome, seconds in search.attempts:
            self.search_seconds.labels(action, generator, outcome).observe(seconds)

    def _operations(self, result: CycleResult, action: str, ops: list[Operation]) -> None:
        placed = {op.task.job_uid for op in ops if op.op in _PLACED}
        if placed:
            self.scheduled.inc(action, amount=len(placed))
            if action == PREEMPT:
                self.preemption_attempts.inc(amount=len(placed))
        evicted: dict[tuple[str, str], int] = defaultdict(int)
        for op in ops:
            if op.op is Op.EVICT:
                cause = op.eviction.action if op.eviction is not None else action
                evicted[(op.task.job_uid, cause)] += 1
        for (uid, cause), count in evicted.items():
            job = result.snapshot.jobs.get(uid)
            name, namespace = (job.name, job.namespace) if job is not None else ("", "")
            self.evicted.labels(name, namespace, uid, self.node_pool, cause).inc(count)

    def _queue_gauges(self, result: CycleResult) -> None:
        scale = (MILLICORES, GIGABYTE, 1.0)
        queues = result.snapshot.queues
        now: dict[str, tuple[str, str, str]] = {}
        for name, share in result.queue_shares.items():
            info = queues.get(name)
            display = info.queue.display_name if info is not None else ""
            labels = now[name] = (display or name, name, display)
            if self._queues.get(name, labels) != labels:
                self._remove(self._queues[name])
            for gauge, value, unit in zip(self.fair_share, share.fair_share, scale, strict=True):
                gauge.labels(*labels).set(float(value) / unit)
            for gauge, value in zip(self.usage, share.usage, strict=True):
                gauge.labels(*labels).set(float(value))
        for gone in self._queues.keys() - now.keys():
            self._remove(self._queues[gone])
        self._queues = now

    def _remove(self, labels: tuple[str, str, str]) -> None:
        for gauge in (*self.fair_share, *self.usage):
            gauge.remove(*labels)


def by_action(result: CycleResult) -> dict[str, list[Operation]]:
    """The cycle's operations split by the action that committed them (in the order the actions ran)."""
    split: dict[str, list[Operation]] = {}
    start = 0
    for action, end in result.action_ends.items():
        split[action] = result.operations[start:end]
        start = end
    return split
