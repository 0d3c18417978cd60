"""The status controllers' reconciles as controller-runtime counts them: `podgroup` (one per PodGroup whose
status is computed) and `queue` (one per Queue)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers import podgroup_status
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NOW, node, pod, podgroup, queue


class Forbidden(StoreError):
    reason = "Forbidden"


def _cluster() -> MemoryStore:
    store = MemoryStore(ManualClock(NOW))
    store.add_many(
        [
            node("n1"),
            queue("org"),
            queue("team", parent="org"),
            podgroup("g", queue="team"),
            podgroup("h", queue="team"),
            pod("p0", group="g", gpus=2, node="n1"),
            pod("p1", group="h", gpus=1),
        ]
    )
    return store


def test_each_podgroup_and_queue_reconciled_is_counted_under_its_controller() -> None:
    store = _cluster()
    registry = CollectorRegistry()
    podgroups = PodGroupStatusController(store, work=metrics.controller(registry, podgroup_status.CONTROLLER))
    queues = QueueStatusController(store, registry)
    podgroups.reconcile()
    queues.reconcile()
    get = registry.get_sample_value
    assert get("controller_runtime_reconcile_total", {"controller": "podgroup", "result": "success"}) == 2
    assert get("controller_runtime_reconcile_total", {"controller": "queue", "result": "success"}) == 2
    assert get("workqueue_adds_total", {"name": "queue", "controller": "queue"}) == 2
    podgroups.reconcile()  # its own status writes come back through the watch, once (nothing to write)
    seen = get("controller_runtime_reconcile_total", {"controller": "podgroup", "result": "success"})
    podgroups.reconcile()  # nothing changed: nothing taken up
    assert get("controller_runtime_reconcile_total", {"controller": "podgroup", "result": "success"}) == seen


def test_a_refused_status_write_is_an_error_and_a_retry() -> None:
    store = _cluster()
    registry = CollectorRegistry()
    podgroups = PodGroupStatusController(store, work=metrics.controller(registry, podgroup_status.CONTROLLER))

    def refuse(*args: object, **kwargs: object) -> object:
        raise Forbidden("patch PodGroup status: forbidden")

    store.patch = refuse  # type: ignore[method-assign]
    podgroups.reconcile()
    get = registry.get_sample_value
    assert get("controller_runtime_reconcile_total", {"controller": "podgroup", "result": "error"}) == 2
    assert get("controller_runtime_reconcile_errors_total", {"controller": "podgroup"}) == 2
    assert get("workqueue_retries_total", {"name": "podgroup", "controller": "podgroup"}) == 2
