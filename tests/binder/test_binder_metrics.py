"""The binder's reconciles as controller-runtime counts them (controller `bindrequest`): one per BindRequest
taken up, with its result."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder.binder import CONTROLLER, Binder
from kai_scheduler.store import metrics
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


def _binder(
    *objects: dict[str, object], concurrency: int = 1
) -> tuple[MemoryStore, ManualClock, Binder, CollectorRegistry]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(list(objects))
    registry = CollectorRegistry()
    work = metrics.controller(registry, CONTROLLER, concurrency)
    return store, clock, Binder(store, clock, concurrency=concurrency, work=work), registry


def _total(registry: CollectorRegistry, result: str) -> float | None:
    return registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "bindrequest", "result": result}
    )


QUEUE = {"name": "bindrequest", "controller": "bindrequest"}


def test_a_bind_is_one_successful_reconcile_of_the_bindrequest_controller() -> None:
    _, _, binder, registry = _binder(b.node("n1"), b.pod("p", gpus=1), b.bind_request("p", "n1"))
    assert _total(registry, "success") == 0
    assert binder.reconcile().bound == ["ns/p"]
    assert _total(registry, "success") == 1
    assert _total(registry, "error") == 0
    assert registry.get_sample_value("workqueue_adds_total", QUEUE) == 1
    assert registry.get_sample_value("workqueue_depth", QUEUE) == 0
    assert (
        registry.get_sample_value("controller_runtime_reconcile_time_seconds_count", {"controller": "bindrequest"}) == 1
    )
    binder.reconcile()  # a Succeeded request is not taken up again
    assert _total(registry, "success") == 1


def test_a_failing_bind_is_an_error_and_a_retry_while_the_backoff_limit_allows() -> None:
    _, clock, binder, registry = _binder(b.pod("p"), b.bind_request("p", "ghost", backoff_limit=2))
    assert binder.reconcile().failed
    assert _total(registry, "error") == 1
    assert registry.get_sample_value("controller_runtime_reconcile_errors_total", {"controller": "bindrequest"}) == 1
    assert registry.get_sample_value("workqueue_retries_total", QUEUE) == 1
    clock.advance(2.0)
    assert binder.reconcile().failed  # the second attempt reaches the limit: no retry after it
    assert _total(registry, "error") == 2
    assert registry.get_sample_value("workqueue_retries_total", QUEUE) == 1


def test_concurrent_binds_are_each_counted_and_none_left_active() -> None:
    pods = [b.pod(f"p{i}") for i in range(6)]
    requests = [b.bind_request(f"p{i}", "n1") for i in range(6)]
    _, _, binder, registry = _binder(b.node("n1", gpus=8), *pods, *requests, concurrency=3)
    assert len(binder.reconcile().bound) == 6
    assert _total(registry, "success") == 6
    assert registry.get_sample_value("controller_runtime_active_workers", {"controller": "bindrequest"}) == 0
    assert registry.get_sample_value("controller_runtime_max_concurrent_reconciles", {"controller": "bindrequest"}) == 3
