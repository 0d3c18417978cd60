"""The §9.1 scheduler metrics recorded from real cycles over an in-memory store."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.metrics import SchedulerMetrics, by_action
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.exposition import text
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.runtime import exposition


def cycle(*objects: dict[str, Any], namespace: str = "kai") -> tuple[CollectorRegistry, Any]:
    clock = ManualClock(b.NOW + 30)
    store = MemoryStore(clock)
    store.add_many(list(objects))
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry, namespace, node_pool="pool-a")
    result = Scheduler(store, load_config(None), clock).run_once()
    metrics.record(result)
    return registry, result


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    """The series as /metrics exposes it, with exactly these labels."""
    return exposition.parse(text(registry).decode()).value(name, **labels)


def queue(name: str, display: str = "") -> dict[str, str]:
    return {"queue_name": display or name, "queue_metadata_name": name, "queue_display_name": display}


def test_an_allocation_is_counted_under_allocate_with_latencies_and_fair_shares() -> None:
    registry, result = cycle(b.queue("q"), b.node("n1", gpus=4), b.podgroup("j"), b.pod("j", gpus=2, created=b.NOW))
    assert result.binds == 1
    assert value(registry, "kai_podgroups_scheduled_by_action", action="allocate") == 1
    assert value(registry, "kai_podgroups_acted_on_by_action", action="allocate") is None  # victim actions only
    assert value(registry, "kai_podgroups_scheduled_by_action", action="reclaim") is None
    e2e = value(registry, "kai_e2e_scheduling_latency_milliseconds")
    assert e2e is not None and e2e > 0
    assert value(registry, "kai_open_session_latency_milliseconds") is not None
    assert value(registry, "kai_close_session_latency_milliseconds") is not None
    assert value(registry, "kai_action_scheduling_latency_milliseconds", action="allocate") is not None
    assert value(registry, "kai_task_scheduling_latency_milliseconds_count") == 1
    assert value(registry, "kai_task_scheduling_latency_milliseconds_sum") == 30_000  # created 30s before
    assert value(registry, "kai_queue_fair_share_gpu", **queue("q")) == 2
    assert value(registry, "kai_queue_fair_share_cpu_cores", **queue("q")) == 1
    assert value(registry, "kai_queue_gpu_usage", **queue("q")) == 0


def test_reclaim_evictions_are_counted_per_podgroup_and_action() -> None:
    registry, result = cycle(
        b.queue("a"),
        b.queue("b", gpu_quota=8),
        b.node("n1", gpus=8),
        b.podgroup("hog", queue="a"),
        b.pod("hog", gpus=8, node="n1"),
        b.podgroup("want", queue="b"),
        b.pod("want", gpus=8),
    )
    assert result.evictions == 1
    split = by_action(result)
    assert sorted((op.op.value, op.task.name) for op in split["reclaim"]) == [("evict", "hog"), ("pipeline", "want")]
    assert split["allocate"] == []
    uid, ns = next((op.task.job_uid, op.task.namespace) for op in result.operations if op.task.name == "hog")
    assert (
        value(
            registry,
            "kai_pod_group_evicted_pods_total",
            podgroup="hog",
            namespace=ns,
            uid=uid,
            nodepool="pool-a",
            action="reclaim",
        )
        == 1
    )
    assert value(registry, "kai_podgroups_acted_on_by_action", action="reclaim") == 1  # the reclaimer it tried
    assert value(registry, "kai_scenarios_simulation_by_action", action="reclaim") == 1
    assert value(registry, "kai_scenario_search_jobs_total", action="reclaim", result="solved", reduced_budget="false")
    scenarios = {"action": "reclaim", "generator": "NodeLocalGreedy"}
    assert value(registry, "kai_scenario_search_scenarios_total", **scenarios, state="emitted") == 1
    assert value(registry, "kai_scenario_search_duration_seconds_count", **scenarios, result="solved") == 1


def test_the_namespace_prefixes_every_name_and_gone_queues_lose_their_series() -> None:
    registry, _ = cycle(b.queue("q"), b.node("n1"), namespace="team")
    assert value(registry, "team_e2e_scheduling_latency_milliseconds") is not None
    assert value(registry, "kai_e2e_scheduling_latency_milliseconds") is None
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q"), b.queue("r"), b.node("n1")])
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    scheduler = Scheduler(store, load_config(None), clock)
    metrics.record(scheduler.run_once())
    assert value(registry, "kai_queue_fair_share_gpu", **queue("r")) is not None
    store.delete("queues", "r")
    metrics.record(scheduler.run_once())
    assert value(registry, "kai_queue_fair_share_gpu", **queue("r")) is None
    assert value(registry, "kai_queue_fair_share_gpu", **queue("q")) is not None
