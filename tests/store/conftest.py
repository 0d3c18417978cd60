"""Fixtures for the `ClusterStore` contract suite: each test taking `store` runs once per implementation.

Add an implementation to `STORES` (a builder from a clock) and the whole contract runs against it. The API
store ("kube") runs against a mock API server on loopback (one per test session, reset for every test) whose
objects live in a MemoryStore on the test's clock, so timestamps are as the contract expects.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.api.clock import Clock, ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.kube import KubeOptions, KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.store.mock_apiserver import MockApiServer

START = parse_time("2026-01-01T00:00:00Z")

STORES: dict[str, Callable[[Clock], ClusterStore]] = {
    "memory": MemoryStore,
}
# Short backoff so that reconnect tests do not wait.
KUBE_TEST_OPTIONS = KubeOptions(watch_backoff_initial=0.01, watch_backoff_max=0.1)
MakeStore = Callable[..., KubeStore]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(scope="session")
def apiserver() -> Iterator[MockApiServer]:
    with MockApiServer() as server:
        yield server


def api_client(url: str) -> ApiClient:
    return ApiClient(Configuration(host=url))


@pytest.fixture
def kube_server(apiserver: MockApiServer, clock: ManualClock) -> MockApiServer:
    """The session's mock API server with fresh state on this test's clock."""
    apiserver.reset(MemoryStore(clock))
    return apiserver


class FakeTiming:
    """Virtual time: `sleep` records the delay and moves the clock; nothing waits."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> None:
        with self._lock:
            self.sleeps.append(round(seconds, 6))
            self.t += seconds


@pytest.fixture
def make_store(kube_server: MockApiServer) -> Iterator[MakeStore]:
    """Build KubeStores on the mock server (options over the test defaults); all are closed afterwards."""
    made: list[KubeStore] = []

    def make(timing: FakeTiming | None = None, **options: Any) -> KubeStore:
        opts = dataclasses.replace(KUBE_TEST_OPTIONS, **options)
        made.append(KubeStore(api_client(kube_server.url), opts, timing=timing))
        return made[-1]

    yield make
    for store in made:
        store.close()


@pytest.fixture(params=[*sorted(STORES), "kube"])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[ClusterStore]:
    if request.param != "kube":
        yield STORES[request.param](clock)
        return
    server: MockApiServer = request.getfixturevalue("kube_server")
    kube = KubeStore(api_client(server.url), KUBE_TEST_OPTIONS)
    yield kube
    kube.close()
