"""The e2e suite's fault proxy (tests/e2e/faultproxy.py) in front of the mock API server: it forwards requests
and watches, answers the faults it is told to for the verbs it is told, and records every request."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.kube import KubeOptions, KubeStore, Throttled
from tests.e2e.faultproxy import Fault, FaultProxy, verb
from tests.loopback import write_kubeconfig
from tests.store.conftest import FakeTiming
from tests.store.mock_apiserver import MockApiServer
from tests.store.test_memory_store import pod


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[FaultProxy]:
    with MockApiServer() as server:
        proxy = FaultProxy(write_kubeconfig(tmp_path / "kubeconfig", server.url))
        try:
            yield proxy
        finally:
            proxy.close()


def store(proxy: FaultProxy, tmp_path: Path, timing: FakeTiming | None = None) -> KubeStore:
    """A store through the proxy, as the client `tester`, retrying a 429 once."""
    made = KubeStore.connect(proxy.kubeconfig("tester", tmp_path), None, KubeOptions(qps=0, max_retries=1))
    if timing is not None:
        made.transport.timing = timing
    return made


@pytest.mark.parametrize(
    ("method", "path", "query", "want"),
    [
        ("GET", "/api/v1/pods", "limit=500", "list"),
        ("GET", "/api/v1/namespaces/team-a/pods", "", "list"),
        ("GET", "/api/v1/namespaces/team-a/pods", "watch=true&resourceVersion=7", "watch"),
        ("GET", "/api/v1/namespaces/team-a/pods/p", "", "get"),
        ("GET", "/api/v1/namespaces/team-a", "", "get"),
        ("GET", "/apis/scheduling.run.ai/v2/queues", "", "list"),
        ("GET", "/apis/scheduling.run.ai/v2/queues/q/status", "", "get"),
        ("POST", "/api/v1/namespaces/team-a/pods/p/binding", "", "create"),
        ("PATCH", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups/pg/status", "", "patch"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/n/leases/l", "", "update"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/p", "", "delete"),
    ],
)
def test_a_request_is_named_by_its_kubernetes_verb(method: str, path: str, query: str, want: str) -> None:
    assert verb(method, path, query) == want


def test_requests_are_forwarded_and_recorded_with_their_client(proxy: FaultProxy, tmp_path: Path) -> None:
    with store(proxy, tmp_path) as client:
        client.create(pod("p"))
        assert [p["metadata"]["name"] for p in client.list("pods", "team-a")[0]] == ["p"]
    seen = proxy.requests()
    assert [(s.client, s.verb, s.status, s.injected) for s in seen] == [
        ("tester", "create", 201, False),
        ("tester", "list", 200, False),
    ]
    assert seen[0].target == "/api/v1/namespaces/team-a/pods"


def test_a_429_with_retry_after_is_answered_for_its_verbs_only_until_forwarding_again(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    timing = FakeTiming()
    with store(proxy, tmp_path, timing) as client:
        proxy.inject(Fault(429, frozenset({"list"}), retry_after=3))
        with pytest.raises(Throttled) as refused:
            client.list("pods")
        assert refused.value.retry_after == "3" and "Too many requests" in str(refused.value)
        assert timing.sleeps == [3.0]  # the store waited what the proxy asked, once, then gave up
        client.create(pod("p"))  # not a list: forwarded
        proxy.forward()
        assert len(client.list("pods")[0]) == 1
    statuses = [(s.verb, s.status, s.retry_after) for s in proxy.requests()]
    assert statuses == [("list", 429, 3), ("list", 429, 3), ("create", 201, None), ("list", 200, None)]


def test_every_second_attempt_of_the_same_request_is_forwarded(proxy: FaultProxy, tmp_path: Path) -> None:
    with store(proxy, tmp_path) as client:
        proxy.inject(Fault(500, frozenset({"create"}), every=2))
        with pytest.raises(StoreError) as refused:
            client.create(pod("p"))
        assert refused.value.code == 500 and "leader changed" in str(refused.value)
        client.create(pod("p"))  # the same request again: through
        with pytest.raises(StoreError):
            client.create(pod("q"))  # another one: refused first
    assert [s.status for s in proxy.requests()] == [500, 201, 500]


def test_a_watch_streams_through_and_is_cut_by_end_watches(proxy: FaultProxy, tmp_path: Path) -> None:
    with store(proxy, tmp_path) as client:
        _, version = client.list("pods")
        assert list(client.watch("pods", version, timeout=0.2)) == []
        client.create(pod("p"))
        deadline = time.monotonic() + 5
        events = []
        while not events and time.monotonic() < deadline:
            events = list(client.watch("pods", version, timeout=0.2))
        assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "p")]
        assert proxy.end_watches() == 1
        deadline = time.monotonic() + 5
        while sum(s.verb == "watch" for s in proxy.requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert sum(s.verb == "watch" for s in proxy.requests()) == 2  # the store watched again
