"""HealthServer over real loopback HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from kai_scheduler.runtime.http import HealthServer, parse_address


def get(server: HealthServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[HealthServer]:
    s = HealthServer("127.0.0.1:0", registry)
    s.start()
    yield s
    s.stop()


def test_healthz_and_readyz_are_ok_without_checks(server: HealthServer) -> None:
    assert server.port > 0
    assert get(server, "/healthz") == (200, "ok")
    assert get(server, "/readyz") == (200, "ok")


def test_readyz_lists_the_failing_checks(server: HealthServer) -> None:
    state = {"binder": False}
    server.add_readiness("scheduler", lambda: True)
    server.add_readiness("binder", lambda: state["binder"])
    server.add_readiness("podgrouper", lambda: False)
    code, body = get(server, "/readyz")
    assert code == 503
    assert "binder" in body and "podgrouper" in body and "scheduler" not in body
    state["binder"] = True
    assert get(server, "/readyz")[0] == 503
    server.add_readiness("podgrouper", lambda: True)
    assert get(server, "/readyz") == (200, "ok")


def test_healthz_fails_with_500_naming_the_check_and_a_raising_check_fails(server: HealthServer) -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    server.add_liveness("loop", broken)
    code, body = get(server, "/healthz")
    assert code == 500 and "loop" in body
    assert get(server, "/readyz")[0] == 200  # liveness and readiness are separate


def test_metrics_serves_the_registry_in_text_format(server: HealthServer, registry: CollectorRegistry) -> None:
    Counter("kai_things", "things", registry=registry).inc(3)
    code, body = get(server, "/metrics")
    assert code == 200
    assert "kai_things_total 3.0" in body


def test_unknown_path_is_404(server: HealthServer) -> None:
    assert get(server, "/nope")[0] == 404


@pytest.mark.parametrize(
    ("address", "expected"), [(":8080", ("", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9090", ("::1", 9090))]
)
def test_addresses(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:", "host:http", ":99999"])
def test_bad_addresses(address: str) -> None:
    with pytest.raises(ValueError, match="listen address"):
        parse_address(address)
