"""The pod grouper's reconciles as controller-runtime counts them (controller `pod`): one per pod taken up."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api import constants
from kai_scheduler.podgrouper.grouper import CONTROLLER, PodGrouper
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import StoreError
from tests.podgrouper.helpers import Cluster, bare_pod

C = {"controller": "pod"}
Q = {"name": "pod", "controller": "pod"}


class Forbidden(StoreError):
    reason = "Forbidden"


@pytest.mark.parametrize("writers", [1, 4])
def test_each_pod_grouped_is_one_successful_reconcile(writers: int) -> None:
    c = Cluster()
    registry = CollectorRegistry()
    c.grouper = PodGrouper(c.store, concurrency=writers, work=metrics.controller(registry, CONTROLLER, writers))
    c.add(*(bare_pod(f"p{i}", labels={constants.LABEL_QUEUE: "team-a"}) for i in range(3)))
    assert len(c.group().created) == 3
    get = registry.get_sample_value
    assert get("controller_runtime_reconcile_total", {**C, "result": "success"}) == 3
    assert get("workqueue_adds_total", Q) == 3
    assert get("workqueue_depth", Q) == 0
    assert get("controller_runtime_active_workers", C) == 0
    assert get("controller_runtime_reconcile_time_seconds_count", C) == 3
    c.group()  # the pods changed only by our own patches are not taken up again
    assert get("controller_runtime_reconcile_total", {**C, "result": "success"}) == 3


def test_pods_of_other_schedulers_are_not_reconciles() -> None:
    c = Cluster()
    registry = CollectorRegistry()
    c.grouper = PodGrouper(c.store, work=metrics.controller(registry, CONTROLLER))
    other = bare_pod("other", labels={constants.LABEL_QUEUE: "team-a"})
    other["spec"]["schedulerName"] = "default-scheduler"
    c.add(other, bare_pod("mine", labels={constants.LABEL_QUEUE: "team-a"}))
    c.group()
    assert registry.get_sample_value("controller_runtime_reconcile_total", {**C, "result": "success"}) == 1
    assert registry.get_sample_value("workqueue_adds_total", Q) == 1


def test_a_refused_write_is_an_error_and_a_retry() -> None:
    c = Cluster()
    registry = CollectorRegistry()
    c.grouper = PodGrouper(c.store, work=metrics.controller(registry, CONTROLLER))
    c.add(bare_pod("p", labels={constants.LABEL_QUEUE: "team-a"}))

    def refuse(*args: object, **kwargs: object) -> object:
        raise Forbidden("create PodGroup default/pg: forbidden")

    c.store.create = refuse  # type: ignore[method-assign]
    assert c.group().skipped
    get = registry.get_sample_value
    assert get("controller_runtime_reconcile_total", {**C, "result": "error"}) == 1
    assert get("controller_runtime_reconcile_errors_total", C) == 1
    assert get("workqueue_retries_total", Q) == 1
