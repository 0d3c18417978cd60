"""What an SRE's controller-runtime dashboards read from each component's /metrics: the reconcile and work queue
series per controller and client-go's request series, moving as the components work."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.operator.component import operator
from kai_scheduler.runtime.options import OperatorOptions
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NOW
from tests.loopback import eventually
from tests.runtime.test_process import cluster, get, kubeconfig, process
from tests.store.mock_apiserver import MockApiServer
from tests.store.test_work_metrics import CONTROLLER_SERIES

__all__ = ["cluster"]  # the fixture, shared with test_process

CONTROLLERS = {"bindrequest", "pod", "podgroup", "queue"}  # `kai run`: binder, pod grouper, status controllers


def scrape(port: int) -> dict[str, tuple[str, list[tuple[dict[str, str], float]]]]:
    status, text = get(port, "/metrics")
    assert status == 200
    return {
        f.name: (f.type, [(dict(s.labels), s.value) for s in f.samples]) for f in text_string_to_metric_families(text)
    }


def value(scraped: dict[str, tuple[str, list[tuple[dict[str, str], float]]]], sample: str, **labels: str) -> float:
    family = next(name for name in scraped if sample.startswith(name))
    return sum(v for got, v in scraped[family][1] if all(got.get(k) == w for k, w in labels.items()))


def test_every_component_exports_the_controller_and_client_series_and_they_move(
    cluster: MockApiServer, tmp_path: Path
) -> None:
    proc = process(kubeconfig(tmp_path, cluster.url))
    proc.start()
    try:
        assert eventually(lambda: bool(cluster.memory.get("pods", "p", "team-a")["spec"].get("nodeName")))
        scraped: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}

        def bound_counted() -> bool:
            scraped.clear()
            scraped.update(scrape(proc.server.port))
            return value(scraped, "controller_runtime_reconcile", controller="bindrequest", result="success") >= 1

        assert eventually(bound_counted)
        for name, (kind, labels) in CONTROLLER_SERIES.items():
            assert scraped[name][0] == kind, name
            samples = [got for got, _ in scraped[name][1]]
            assert {got["controller"] for got in samples} == CONTROLLERS, name
            assert all(labels <= got.keys() for got in samples), name
        assert value(scraped, "controller_runtime_reconcile", controller="pod", result="success") >= 1
        assert value(scraped, "controller_runtime_reconcile", controller="podgroup", result="success") >= 1
        assert value(scraped, "controller_runtime_reconcile", controller="bindrequest", result="error") == 0
        for controller in ("bindrequest", "podgroup", "queue"):  # KAI's default --max-concurrent-reconciles
            assert value(scraped, "controller_runtime_max_concurrent_reconciles", controller=controller) == 10
        assert value(scraped, "workqueue_adds", name="bindrequest") >= 1
        host = cluster.url.removeprefix("http://")
        assert scraped["rest_client_requests"][0] == "counter"
        assert value(scraped, "rest_client_requests", code="200", method="GET", host=host) > 0
        assert value(scraped, "rest_client_requests", method="POST", host=host) > 0  # the BindRequest, events…
        assert scraped["rest_client_request_duration_seconds"][0] == "histogram"
        assert value(scraped, "rest_client_request_duration_seconds_count", verb="GET", host=host) > 0
    finally:
        proc.shutdown()


class Refusing(MemoryStore):
    def list(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        raise StoreError("list schedulingshards: forbidden")


@pytest.mark.parametrize("fails", [False, True])
def test_an_operator_pass_is_one_reconcile_of_the_config_controller(fails: bool) -> None:
    clock = ManualClock(NOW)
    store = Refusing(clock) if fails else MemoryStore(clock)
    registry = CollectorRegistry()
    component = operator(store, OperatorOptions(create_defaults=False), clock, registry)
    if fails:
        with pytest.raises(StoreError):
            component.step()
    else:
        component.step()
    get = registry.get_sample_value
    result = "error" if fails else "success"
    assert get("controller_runtime_reconcile_total", {"controller": "config", "result": result}) == 1
    assert get("controller_runtime_reconcile_errors_total", {"controller": "config"}) == (1 if fails else 0)
