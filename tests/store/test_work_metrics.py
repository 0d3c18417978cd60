"""controller-runtime's reconcile and work queue series and client-go's request series (`store.metrics`): the
names, types, labels and buckets a scrape shows, and what moves them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient, Configuration
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import NotFound, StoreError
from kai_scheduler.store.kube import KubeOptions, KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.loopback import free_port
from tests.store.mock_apiserver import MockApiServer


class Ticks:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def families(registry: CollectorRegistry) -> dict[str, tuple[str, set[str]]]:
    """name → (type, label names of its samples other than `le`), as a scraper parses /metrics."""
    out: dict[str, tuple[str, set[str]]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        labels = {k for s in family.samples for k in s.labels if k != "le"}
        out[family.name] = (family.type, labels)
    return out


CONTROLLER_SERIES = {
    "controller_runtime_reconcile": ("counter", {"controller", "result"}),
    "controller_runtime_reconcile_errors": ("counter", {"controller"}),
    "controller_runtime_reconcile_time_seconds": ("histogram", {"controller"}),
    "controller_runtime_active_workers": ("gauge", {"controller"}),
    "controller_runtime_max_concurrent_reconciles": ("gauge", {"controller"}),
    "workqueue_depth": ("gauge", {"name", "controller"}),
    "workqueue_adds": ("counter", {"name", "controller"}),
    "workqueue_queue_duration_seconds": ("histogram", {"name", "controller"}),
    "workqueue_work_duration_seconds": ("histogram", {"name", "controller"}),
    "workqueue_retries": ("counter", {"name", "controller"}),
    "workqueue_unfinished_work_seconds": ("gauge", {"name", "controller"}),
    "workqueue_longest_running_processor_seconds": ("gauge", {"name", "controller"}),
}


def test_a_registered_controller_exports_every_series_with_its_type_and_labels() -> None:
    registry = CollectorRegistry()
    metrics.controller(registry, "bindrequest", 10)
    metrics.controller(registry, "pod", 20)
    assert families(registry) == CONTROLLER_SERIES
    text = generate_latest(registry).decode()
    for result in metrics.RESULTS:  # all four results from the start, at 0, as controller-runtime initialises them
        assert f'controller_runtime_reconcile_total{{controller="pod",result="{result}"}} 0.0' in text
    assert registry.get_sample_value("controller_runtime_max_concurrent_reconciles", {"controller": "pod"}) == 20
    assert registry.get_sample_value("workqueue_depth", {"name": "bindrequest", "controller": "bindrequest"}) == 0


def test_reconciles_move_the_counts_and_the_histograms() -> None:
    registry = CollectorRegistry()
    clock = Ticks()
    ctrl = metrics.controller(registry, "bindrequest", 10)
    ctrl.now = clock
    ctrl.add(["ns/a", "ns/b", "ns/a"])  # a key already waiting is not added twice
    q = {"name": "bindrequest", "controller": "bindrequest"}
    assert registry.get_sample_value("workqueue_adds_total", q) == 2
    assert registry.get_sample_value("workqueue_depth", q) == 2
    clock.t += 0.5
    a = ctrl.start("ns/a")
    assert registry.get_sample_value("workqueue_depth", q) == 1
    assert registry.get_sample_value("controller_runtime_active_workers", {"controller": "bindrequest"}) == 1
    clock.t += 3.0
    assert registry.get_sample_value("workqueue_unfinished_work_seconds", q) == pytest.approx(3.0)
    assert registry.get_sample_value("workqueue_longest_running_processor_seconds", q) == pytest.approx(3.0)
    ctrl.done(a)
    b = ctrl.start("ns/b")
    clock.t += 0.02
    ctrl.done(b, "error")
    ctrl.retry()
    c = {"controller": "bindrequest"}
    get = registry.get_sample_value
    assert get("controller_runtime_reconcile_total", {**c, "result": "success"}) == 1
    assert get("controller_runtime_reconcile_total", {**c, "result": "error"}) == 1
    assert get("controller_runtime_reconcile_errors_total", c) == 1
    assert get("workqueue_retries_total", q) == 1
    assert get("controller_runtime_active_workers", c) == 0
    assert get("workqueue_unfinished_work_seconds", q) == 0
    assert get("controller_runtime_reconcile_time_seconds_count", c) == 2
    assert get("controller_runtime_reconcile_time_seconds_sum", c) == pytest.approx(3.02)
    assert get("controller_runtime_reconcile_time_seconds_bucket", {**c, "le": "0.025"}) == 1
    assert get("controller_runtime_reconcile_time_seconds_bucket", {**c, "le": "2.5"}) == 1
    assert get("controller_runtime_reconcile_time_seconds_bucket", {**c, "le": "3.5"}) == 2
    # a waited 0.5 s and b 3.5 s in the queue
    assert get("workqueue_queue_duration_seconds_sum", q) == pytest.approx(4.0)
    assert get("workqueue_queue_duration_seconds_bucket", {**q, "le": "1.0"}) == 1
    assert get("workqueue_queue_duration_seconds_bucket", {**q, "le": "10.0"}) == 2


def test_work_already_spent_counts_in_the_reconcile_not_in_the_wait() -> None:
    clock = Ticks()
    ctrl = metrics.Controller("pod", 20, now=clock)
    ctrl.add(["ns/p"])
    clock.t += 1.0  # 0.25 s of it planning the pod
    item = ctrl.start("ns/p", spent=0.25)
    clock.t += 0.5
    ctrl.done(item)
    snap = ctrl.snapshot()
    assert snap.queue_duration[1] == pytest.approx(0.75)
    assert snap.reconcile_time[1] == pytest.approx(0.75)


def test_bucket_layouts_are_controller_runtimes_and_client_gos() -> None:
    assert metrics.RECONCILE_BUCKETS[:6] == (0.005, 0.01, 0.025, 0.05, 0.1, 0.15)
    assert len(metrics.RECONCILE_BUCKETS) == 40 and metrics.RECONCILE_BUCKETS[-1] == 60.0
    assert len(metrics.WORKQUEUE_BUCKETS) == 12
    assert metrics.WORKQUEUE_BUCKETS[0] == pytest.approx(1e-8) and metrics.WORKQUEUE_BUCKETS[-1] == pytest.approx(1e3)
    assert metrics.REQUEST_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


def test_a_controller_built_again_replaces_the_old_one_in_the_scrape() -> None:
    registry = CollectorRegistry()
    old = metrics.controller(registry, "queue")
    old.done(old.start("q"))
    metrics.controller(registry, "queue")
    assert (
        registry.get_sample_value("controller_runtime_reconcile_total", {"controller": "queue", "result": "success"})
        == 0
    )


def test_without_a_registry_the_counts_are_kept_and_exported_nowhere() -> None:
    ctrl = metrics.controller(None, "podgroup")
    ctrl.done(ctrl.start("ns/pg"))
    assert ctrl.results["success"] == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "start", "done", "retry"]), st.integers(0, 4), st.sampled_from(metrics.RESULTS)
        ),
        max_size=60,
    )
)
def test_the_counts_always_agree(ops: list[tuple[str, int, str]]) -> None:
    """Whatever the order of adds, starts and dones: every result is counted once and in one histogram sample,
    depth is the keys waiting, active the reconciles begun and not done, buckets are cumulative."""
    clock = Ticks()
    ctrl = metrics.Controller("c", 2, now=clock)
    waiting: set[str] = set()
    running: list[metrics.Item] = []
    done = adds = 0
    for op, n, result in ops:
        clock.t += 0.01 * n
        key = f"k{n}"
        if op == "add":
            adds += key not in waiting
            waiting.add(key)
            ctrl.add([key])
        elif op == "start":
            adds += key not in waiting
            waiting.discard(key)
            running.append(ctrl.start(key))
        elif op == "done" and running:
            ctrl.done(running.pop(n % len(running)), result)
            done += 1
        elif op == "retry":
            ctrl.retry()
    snap = ctrl.snapshot()
    assert sum(snap.results.values()) == done == int(snap.reconcile_time[0][-1][1])
    assert snap.errors == snap.results["error"]
    assert snap.depth == len(waiting) and snap.adds == adds
    assert snap.active == len(running)
    counts = [count for _, count in snap.queue_duration[0]]
    assert counts == sorted(counts) and counts[-1] == done + len(running)


# --- client-go's request series ---


@pytest.fixture
def server() -> Iterator[MockApiServer]:
    with MockApiServer(MemoryStore(SystemClock())) as apiserver:
        yield apiserver


def test_each_request_counts_its_code_method_and_host_and_is_timed_by_verb(server: MockApiServer) -> None:
    store = KubeStore(ApiClient(Configuration(host=server.url)), KubeOptions())
    registry = CollectorRegistry()
    registry.register(store.requests)
    try:
        store.list("nodes")
        with pytest.raises(NotFound):
            store.get("pods", "nobody", "ns")
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        host = server.url.removeprefix("http://")
        get = registry.get_sample_value
        assert get("rest_client_requests_total", {"code": "200", "method": "GET", "host": host}) == 1
        assert get("rest_client_requests_total", {"code": "404", "method": "GET", "host": host}) == 1
        assert get("rest_client_requests_total", {"code": "201", "method": "POST", "host": host}) == 1
        assert get("rest_client_request_duration_seconds_count", {"verb": "GET", "host": host}) == 2
        assert get("rest_client_request_duration_seconds_count", {"verb": "POST", "host": host}) == 1
        assert get("rest_client_request_duration_seconds_bucket", {"verb": "GET", "host": host, "le": "60.0"}) == 2
        assert families(registry) == {
            "rest_client_requests": ("counter", {"code", "method", "host"}),
            "rest_client_request_duration_seconds": ("histogram", {"verb", "host"}),
        }
    finally:
        store.close()


def test_a_request_that_gets_no_answer_counts_as_error_code(tmp_path: Path) -> None:
    del tmp_path
    url = f"http://127.0.0.1:{free_port()}"
    store = KubeStore(ApiClient(Configuration(host=url)), KubeOptions())
    try:
        with pytest.raises(StoreError):
            store.list("nodes")
        host = url.removeprefix("http://")
        assert store.requests.count("<error>", "GET") >= 1
        registry = CollectorRegistry()
        registry.register(store.requests)
        assert registry.get_sample_value(
            "rest_client_requests_total", {"code": "<error>", "method": "GET", "host": host}
        )
    finally:
        store.close()
