"""Every series KAI's metrics reference (docs/metrics/METRICS.md, checked against the code that registers them)
is on the components' /metrics with KAI's name, `# TYPE` and label names, and the queries of KAI's Grafana
dashboards find them. KAI's list is typed again here as data; the labels are those the component exposes (the
scrape adds `endpoint`, `instance`, `job`, `namespace`, `pod` and `service`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.actions.reclaim import Reclaim
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.runtime.http import HealthServer
from kai_scheduler.scheduler.metrics import SchedulerMetrics
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store import exposition as store_exposition
from kai_scheduler.store.exposition import GoCounter
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.loopback import eventually
from tests.runtime import exposition
from tests.runtime.test_process import cluster, get, kubeconfig, process
from tests.store.mock_apiserver import MockApiServer

__all__ = ["cluster"]  # the fixture, shared with test_process

QUEUE = ("queue_name", "queue_metadata_name", "queue_display_name")

# KAI's queue controller (pkg/queuecontroller/metrics/metrics.go), name without the `kai_` namespace.
QUEUE_CONTROLLER = {
    "queue_info": ("gauge", QUEUE),
    "queue_deserved_gpus": ("gauge", QUEUE),
    "queue_quota_cpu_cores": ("gauge", QUEUE),
    "queue_quota_memory_bytes": ("gauge", QUEUE),
    "queue_allocated_gpus": ("gauge", QUEUE),
    "queue_allocated_cpu_cores": ("gauge", QUEUE),
    "queue_allocated_memory_bytes": ("gauge", QUEUE),
}

# KAI's scheduler (pkg/scheduler/metrics/metrics.go). Counters without `_total` are exposed so by Go's client.
SCHEDULER = {
    "e2e_scheduling_latency_milliseconds": ("gauge", ()),
    "open_session_latency_milliseconds": ("gauge", ()),
    "close_session_latency_milliseconds": ("gauge", ()),
    "plugin_scheduling_latency_milliseconds": ("gauge", ("plugin", "OnSession")),
    "action_scheduling_latency_milliseconds": ("gauge", ("action",)),
    "task_scheduling_latency_milliseconds": ("histogram", ()),
    "task_bind_latency_milliseconds": ("histogram", ()),
    "usage_query_latency_milliseconds": ("histogram", ()),
    "podgroups_scheduled_by_action": ("counter", ("action",)),
    "podgroups_acted_on_by_action": ("counter", ("action",)),
    "scenarios_simulation_by_action": ("counter", ("action",)),
    "scenarios_filtered_by_action": ("counter", ("action",)),
    "total_preemption_attempts": ("counter", ()),
    # METRICS.md omits `namespace` (a scrape label there); the code registers it, the podgroup's namespace
    "pod_group_evicted_pods_total": ("counter", ("podgroup", "namespace", "uid", "nodepool", "action")),
    "scenario_search_jobs_total": ("counter", ("action", "result", "reduced_budget")),
    "scenario_search_action_budget_configured_seconds": ("gauge", ("action",)),
    "scenario_search_job_budget_configured_seconds": ("gauge", ()),
    "scenario_search_generator_budget_configured_seconds": ("gauge", ("generator",)),
    "scenario_search_action_budget_exhausted_total": ("counter", ("action",)),
    "scenario_search_duration_seconds": ("histogram", ("action", "generator", "result")),
    "scenario_search_scenarios_total": ("counter", ("action", "generator", "state")),
    "queue_fair_share_cpu_cores": ("gauge", QUEUE),
    "queue_fair_share_memory_gb": ("gauge", QUEUE),
    "queue_fair_share_gpu": ("gauge", QUEUE),
    "queue_cpu_usage": ("gauge", QUEUE),
    "queue_memory_usage": ("gauge", QUEUE),
    "queue_gpu_usage": ("gauge", QUEUE),
}

# Counted only when the victim search filters a victim set or runs out of its action's budget
# (`test_the_search_s_rare_counts_have_kai_s_type_and_labels`); every other series has samples after `scheduled`.
RARE = {"scenarios_filtered_by_action", "scenario_search_action_budget_exhausted_total"}

# The series the queries of KAI's docs/metrics/grafana/kai-queues-allocation.json and kai-scheduler-internals.json
# read (histograms by their `_bucket`).
DASHBOARDS = {
    "kai-queues-allocation": [
        "kai_queue_info",
        "kai_queue_allocated_gpus",
        "kai_queue_allocated_cpu_cores",
        "kai_queue_allocated_memory_bytes",
        "kai_queue_deserved_gpus",
        "kai_queue_quota_cpu_cores",
        "kai_queue_quota_memory_bytes",
        "kai_queue_fair_share_gpu",
        "kai_queue_fair_share_cpu_cores",
        "kai_queue_fair_share_memory_gb",
        "kai_queue_gpu_usage",
        "kai_queue_cpu_usage",
        "kai_queue_memory_usage",
    ],
    "kai-scheduler-internals": [
        "kai_e2e_scheduling_latency_milliseconds",
        "kai_open_session_latency_milliseconds",
        "kai_close_session_latency_milliseconds",
        "kai_action_scheduling_latency_milliseconds",
        "kai_plugin_scheduling_latency_milliseconds",
        "kai_podgroups_acted_on_by_action",
        "kai_podgroups_scheduled_by_action",
        "kai_scenarios_simulation_by_action",
        "kai_scenarios_filtered_by_action",
        "kai_task_scheduling_latency_milliseconds_bucket",
        "kai_task_bind_latency_milliseconds_bucket",
        "kai_total_preemption_attempts",
        "kai_pod_group_evicted_pods_total",
        "kai_scenario_search_action_budget_configured_seconds",
        "kai_scenario_search_generator_budget_configured_seconds",
        "kai_scenario_search_job_budget_configured_seconds",
        "kai_scenario_search_jobs_total",
        "kai_scenario_search_duration_seconds_bucket",
        "kai_scenario_search_duration_seconds_count",
        "kai_scenario_search_scenarios_total",
        "kai_scenario_search_action_budget_exhausted_total",
    ],
}


def scraped(registry: CollectorRegistry) -> exposition.Scrape:
    """GET /metrics of a HealthServer over the registry, as Prometheus scrapes a component."""
    server = HealthServer("127.0.0.1:0", registry)
    server.start()
    try:
        status, text = get(server.port, "/metrics")
    finally:
        server.stop()
    assert status == 200
    return exposition.parse(text)


def series_names(name: str, kind: str) -> list[str]:
    return [name + s for s in ("_bucket", "_sum", "_count")] if kind == "histogram" else [name]


def assert_as_kai(scrape: exposition.Scrape, kai: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    for short, (kind, labels) in kai.items():
        name = "kai_" + short
        assert scrape.types.get(name) == kind, f"# TYPE {name}: want {kind}, got {scrape.types.get(name)}"
        for series in series_names(name, kind):
            samples = scrape.samples(series)
            assert samples, f"no {series} series"
            extra = {"le"} if series.endswith("_bucket") else set()
            for got, _ in samples:
                assert set(got) == set(labels) | extra, f"{series}: labels {sorted(got)}, KAI's {sorted(labels)}"


@pytest.fixture
def scheduled() -> Iterator[exposition.Scrape]:
    """The scheduler's /metrics after a cycle that allocates one job and reclaims for another (an eviction)."""
    clock = ManualClock(b.NOW + 30)
    store = MemoryStore(clock)
    team = b.queue("a")
    team["spec"]["displayName"] = "Team A"
    store.add_many(
        [
            team,
            b.queue("b", gpu_quota=9),
            b.node("n1", gpus=8),
            b.node("n2", gpus=1),
            b.podgroup("hog", queue="a"),
            b.pod("hog", gpus=8, node="n1"),
            b.podgroup("small", queue="b"),
            b.pod("small", gpus=1, created=b.NOW),
            b.podgroup("want", queue="b"),
            b.pod("want", gpus=8),
        ]
    )
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry, node_pool="pool-a")
    config = load_config(None)
    metrics.configure(config)
    result = Scheduler(store, config, clock).run_once()
    assert (result.binds, result.evictions) == (1, 1)
    metrics.record(result)
    yield scraped(registry)


def test_the_scheduler_exposes_every_kai_series_it_records_with_kai_s_type_and_labels(
    scheduled: exposition.Scrape,
) -> None:
    assert_as_kai(scheduled, {k: v for k, v in SCHEDULER.items() if k not in RARE})


def test_the_search_s_rare_counts_have_kai_s_type_and_labels() -> None:
    """Reclaim for a 2-GPU job over two 1-GPU victims: in a first cycle its budget's timer jumps past the action's
    300 s (exhausted); in the second, the first victim alone is filtered (too few GPUs) before both are taken."""
    clock = ManualClock(b.NOW + 30)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("a"),
            b.queue("b", gpu_quota=2),
            b.node("n1", gpus=2),
            *(
                obj
                for name in ("hog1", "hog2")
                for obj in (b.podgroup(name, queue="a"), b.pod(name, gpus=1, node="n1"))
            ),
            b.podgroup("want", queue="b"),
            b.pod("want", gpus=2),
        ]
    )
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    config = load_config({"actions": "reclaim"})
    timer = iter((0.0, 0.0))
    late = Scheduler(store, config, clock)
    late.actions = [Reclaim(timer=lambda: next(timer, 1000.0))]
    metrics.record(late.run_once())
    result = Scheduler(store, config, clock).run_once()
    assert result.evictions == 2
    metrics.record(result)
    scrape = scraped(registry)
    assert_as_kai(scrape, {k: v for k, v in SCHEDULER.items() if k in RARE})
    assert scrape.value("kai_scenarios_filtered_by_action", action="reclaim") == 1
    assert scrape.value("kai_scenario_search_action_budget_exhausted_total", action="reclaim") == 1
    jobs = "kai_scenario_search_jobs_total"
    assert scrape.value(jobs, action="reclaim", result="deadline_exhausted", reduced_budget="false") == 1
    assert scrape.value(jobs, action="reclaim", result="solved", reduced_budget="false") == 1


def test_kai_s_counters_without_total_are_exposed_without_it(scheduled: exposition.Scrape) -> None:
    assert scheduled.value("kai_podgroups_scheduled_by_action", action="allocate") == 1
    assert scheduled.value("kai_podgroups_scheduled_by_action", action="reclaim") == 1
    assert not scheduled.samples("kai_podgroups_scheduled_by_action_total")
    assert "kai_podgroups_scheduled_by_action_total" not in scheduled.types
    assert scheduled.value("kai_total_preemption_attempts") == 0


def test_the_scheduler_s_queue_labels_are_kai_s(scheduled: exposition.Scrape) -> None:
    team = {"queue_name": "Team A", "queue_metadata_name": "a", "queue_display_name": "Team A"}
    assert scheduled.value("kai_queue_fair_share_gpu", **team) is not None
    assert scheduled.value("kai_queue_fair_share_gpu", queue_name="b", queue_metadata_name="b", queue_display_name="")


def test_the_configured_budgets_are_kai_s_defaults(scheduled: exposition.Scrape) -> None:
    assert scheduled.value("kai_scenario_search_job_budget_configured_seconds") == 240
    assert scheduled.value("kai_scenario_search_action_budget_configured_seconds", action="reclaim") == 300
    assert scheduled.value("kai_scenario_search_generator_budget_configured_seconds", generator="NodeLocalGreedy") == 30


def test_the_queue_controller_exposes_every_kai_series_with_kai_s_type_and_labels() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.queue("q", gpu_quota=2)])
    registry = CollectorRegistry()
    QueueStatusController(store, registry).reconcile()
    scrape = scraped(registry)
    assert_as_kai(scrape, QUEUE_CONTROLLER)
    labels = {"queue_name": "q", "queue_metadata_name": "q", "queue_display_name": ""}
    assert scrape.value("kai_queue_deserved_gpus", **labels) == 2


def test_every_dashboard_query_finds_a_family_of_kai_run(cluster: MockApiServer, tmp_path: Path) -> None:
    proc = process(kubeconfig(tmp_path, cluster.url))
    proc.start()
    try:

        def families() -> exposition.Scrape:
            return exposition.parse(get(proc.server.port, "/metrics")[1])

        assert eventually(lambda: families().value("kai_podgroups_scheduled_by_action", action="allocate") == 1)
        scrape = families()
    finally:
        proc.shutdown()
    kinds = {**SCHEDULER, **QUEUE_CONTROLLER}
    exposed = {
        series
        for short, (kind, _) in kinds.items()
        if scrape.types.get("kai_" + short) == kind
        for series in series_names("kai_" + short, kind)
    }
    missing = {board: [q for q in queries if q not in exposed] for board, queries in DASHBOARDS.items()}
    assert missing == {"kai-queues-allocation": [], "kai-scheduler-internals": []}


def test_a_go_counter_is_written_under_its_own_name_with_escaped_labels() -> None:
    registry = CollectorRegistry()
    counter = GoCounter("kai_things", 'Things\\done\n"twice"', ("why",), registry)
    counter.inc('a "b"\\c\n', amount=2)
    text = store_exposition.text(registry).decode()
    assert "# TYPE kai_things counter\n" in text
    assert 'kai_things{why="a \\"b\\"\\\\c\\n"} 2.0\n' in text
    assert "kai_things_total" not in text
    with pytest.raises(ValueError, match="kai_things_total: a counter named with _total"):
        GoCounter("kai_things_total", "", (), registry)
