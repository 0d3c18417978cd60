"""The Prometheus usage client against a local fake Prometheus: query shapes, normalisation, and failures
(unreachable, slow, bad answers) that keep the last known usage with a logged warning, never an exception."""

from __future__ import annotations

import http.server
import json
import logging
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.usagedb.params import ExtraParams, UsageParams, WindowType
from kai_scheduler.usagedb.prometheus import PrometheusUsage, UsageFetchError

NOW = 1_767_225_600.0
Handler = Callable[[str, dict[str, str]], tuple[int, Any]]


def vector(*series: tuple[dict[str, str], float]) -> Any:
    return {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [NOW, str(v)]} for m, v in series]},
    }


def answers(path: str, query: dict[str, str]) -> tuple[int, Any]:
    """Capacity 10 GPUs / 100 cores / 1000 bytes summed over the window; team-a and team-b allocations."""
    text = query["query"]
    if "kube_node_status_capacity" in text:
        amount = 10.0 if "nvidia_com_gpu" in text else 100.0 if '"cpu"' in text else 1000.0
        return 200, vector(({}, amount))
    if "kai_queue_allocated_gpus" in text:
        return 200, vector(({"queue_name": "team-a"}, 2.4), ({"queue_name": "team-b"}, 1.0))
    if "kai_queue_allocated_cpu_cores" in text:
        return 200, vector(({"queue_name": "team-a"}, 50.0))
    return 200, vector()


class FakePrometheus:
    def __init__(self, handler: Handler, delay: float = 0.0) -> None:
        self.handler, self.delay = handler, delay
        self.queries: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Serve(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                outer.queries.append((url.path, query))
                time.sleep(outer.delay)
                status, body = outer.handler(url.path, query)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Serve)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    server = FakePrometheus(answers)
    yield server
    server.close()


def _client(url: str, **params: Any) -> PrometheusUsage:
    extra = params.pop("extra", ExtraParams(usage_query_timeout=2.0))
    return PrometheusUsage(url, UsageParams(extra=extra, **params), ManualClock(NOW))


def test_usage_is_allocation_over_capacity_per_queue(prometheus: FakePrometheus) -> None:
    usage = _client(prometheus.url).fetch(NOW)
    assert usage.fetched_at == NOW
    assert usage.by_queue["team-a"] == pytest.approx((0.5, 0.0, 0.24))
    assert usage.by_queue["team-b"] == pytest.approx((0.0, 0.0, 0.1))


def test_sliding_window_query_shape(prometheus: FakePrometheus) -> None:
    _client(prometheus.url, half_life=600.0).fetch(NOW)
    paths = {path for path, _ in prometheus.queries}
    texts = [q["query"] for _, q in prometheus.queries]
    assert paths == {"/api/v1/query"} and all(q["time"] == f"{NOW:.3f}" for _, q in prometheus.queries)
    decay = f"0.5^(({int(NOW)} - time()) / 600.000000)"
    # KAI's shapes: sum_over_time((%s)[%s:%s]) around ((%s) * (%s))
    assert (
        f'sum_over_time((((sum(kube_node_status_capacity{{resource="nvidia_com_gpu"}})) * ({decay})))[604800s:60s])'
    ) in texts
    assert f"sum_over_time((((kai_queue_allocated_gpus) * ({decay})))[604800s:60s])" in texts


def test_without_half_life_no_decay_term(prometheus: FakePrometheus) -> None:
    _client(prometheus.url, window_size=3600.0).fetch(NOW)
    assert "sum_over_time((kai_queue_allocated_gpus)[3600s:60s])" in [q["query"] for _, q in prometheus.queries]


def test_tumbling_window_uses_a_range_query_from_its_start() -> None:
    def ranged(path: str, query: dict[str, str]) -> tuple[int, Any]:
        values = [[NOW - 60, "1"], [NOW, "3"]]
        metric = {"queue_name": "team-a"} if "allocated" in query["query"] else {}
        return 200, {
            "status": "success",
            "data": {"resultType": "matrix", "result": [{"metric": metric, "values": values}]},
        }

    server = FakePrometheus(ranged)
    try:
        usage = _client(
            server.url, window_type=WindowType.TUMBLING, window_size=3600.0, tumbling_window_start=NOW - 5400
        ).fetch(NOW)
    finally:
        server.close()
    path, query = server.queries[0]
    assert path == "/api/v1/query_range"
    assert (query["start"], query["end"], query["step"]) == (f"{NOW - 1800:.3f}", f"{NOW:.3f}", "60s")
    assert usage.by_queue["team-a"] == pytest.approx((1.0, 1.0, 1.0))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_prometheus_keeps_the_last_usage_with_a_warning(
    prometheus: FakePrometheus, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client(prometheus.url, fetch_interval=60.0)
    first = client.usage(NOW)
    assert first.by_queue["team-a"][2] == pytest.approx(0.24)
    client.url = f"http://127.0.0.1:{_closed_port()}"
    with caplog.at_level(logging.WARNING):
        again = client.usage(NOW + 120)
    assert again is first
    assert any("usage DB unavailable" in r.message for r in caplog.records)


def test_never_reached_means_no_usage(caplog: pytest.LogCaptureFixture) -> None:
    client = _client(f"http://127.0.0.1:{_closed_port()}")
    with caplog.at_level(logging.WARNING):
        assert client.usage(NOW).by_queue == {}
    assert client.wait_first()


def test_a_slow_prometheus_times_out() -> None:
    server = FakePrometheus(answers, delay=1.0)
    try:
        client = _client(server.url, extra=ExtraParams(usage_query_timeout=0.2))
        started = time.perf_counter()
        with pytest.raises(UsageFetchError, match=r"Timeout|timed out"):
            client.fetch(NOW)
        assert time.perf_counter() - started < 0.9
    finally:
        server.close()


@pytest.mark.parametrize(
    "status, body, words",
    [
        pytest.param(500, {"status": "error"}, "HTTP 500", id="server error"),
        pytest.param(200, b"not json", "not JSON", id="not JSON"),
        pytest.param(200, {"status": "error", "error": "parse error"}, "query failed: parse error", id="query error"),
        pytest.param(
            200,
            {"status": "success", "data": {"resultType": "string", "result": []}},
            "unexpected result type",
            id="unexpected type",
        ),
    ],
)
def test_bad_answers_are_fetch_errors(status: int, body: Any, words: str) -> None:
    server = FakePrometheus(lambda path, query: (status, body))
    try:
        with pytest.raises(UsageFetchError, match=words):
            _client(server.url).fetch(NOW)
    finally:
        server.close()


def test_a_capacity_metric_without_data_fails_the_fetch_and_a_zero_capacity_leaves_the_resource_out() -> None:
    """KAI fails the whole fetch when a capacity query returns no sample (kube-state-metrics missing, say): the
    last usage is kept and the warning names the query. A capacity of 0 is data: that resource is left out."""

    def no_cpu_exporter(path: str, query: dict[str, str]) -> tuple[int, Any]:
        if 'resource="cpu"' in query["query"]:
            return 200, vector()
        return answers(path, query)

    def zero_cpu(path: str, query: dict[str, str]) -> tuple[int, Any]:
        if 'resource="cpu"' in query["query"]:
            return 200, vector(({}, 0.0))
        return answers(path, query)

    server = FakePrometheus(no_cpu_exporter)
    try:
        with pytest.raises(UsageFetchError, match=r'no data for the capacity metric .*resource="cpu"'):
            _client(server.url).fetch(NOW)
    finally:
        server.close()
    server = FakePrometheus(zero_cpu)
    try:
        usage = _client(server.url).fetch(NOW)
    finally:
        server.close()
    assert usage.by_queue["team-a"] == pytest.approx((0.0, 0.0, 0.24))


def test_stale_usage_is_used_and_logged(prometheus: FakePrometheus, caplog: pytest.LogCaptureFixture) -> None:
    client = _client(prometheus.url, fetch_interval=60.0, staleness_period=300.0)
    first = client.usage(NOW)
    client.url = f"http://127.0.0.1:{_closed_port()}"
    with caplog.at_level(logging.WARNING):
        stale = client.usage(NOW + 600)
    assert stale is first
    assert any("stale" in r.message for r in caplog.records)


def test_background_fetching(prometheus: FakePrometheus) -> None:
    client = _client(prometheus.url, fetch_interval=60.0)
    client.start()
    try:
        assert client.wait_first()
        assert client.usage(NOW).by_queue["team-a"][2] == pytest.approx(0.24)
    finally:
        client.stop()
