"""What only the API store does: paging, HTTP errors, throttling, the rate limit, evictions, kubeconfig.

The contract itself (tests/store/test_memory_store.py) runs against `KubeStore` through the `store` fixture;
these tests drive the mock API server's faults and look at the requests it received.
"""

from __future__ import annotations

import re
import socket
import threading
from pathlib import Path

import kubernetes.config
import orjson
import pytest
from kubernetes.client import Configuration

from kai_scheduler.api.selectors import LabelSelector, Requirement
from kai_scheduler.store.interface import (
    JSON,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Selector,
    StoreError,
)
from kai_scheduler.store.kube import ConfigurationError, EvictionBlocked, KubeStore, selector_string
from kai_scheduler.store.kube_http.errors import Throttled, Unavailable, error_from
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.retry import backoff_delays, parse_retry_after
from tests.store.conftest import FakeTiming, MakeStore
from tests.store.mock_apiserver import MockApiServer
from tests.store.test_memory_store import bound_pod, pod, podgroup


def names(items: list[JSON]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


# --- LIST paging ---


def test_list_pages_through_the_collection_at_one_version(kube_server: MockApiServer, make_store: MakeStore) -> None:
    kube_server.memory.add_many([pod(f"p{i:04d}") for i in range(1234)])
    items, version = make_store(page_size=100).list("pods")
    assert names(items) == [f"p{i:04d}" for i in range(1234)]
    assert all(o["kind"] == "Pod" and o["apiVersion"] == "v1" for o in items)  # list items lack them
    pages = kube_server.list_requests()
    assert len(pages) == 13
    assert all(p.query["limit"] == "100" for p in pages)
    assert "continue" not in pages[0].query and all("continue" in p.query for p in pages[1:])
    assert version == kube_server.memory.list("pods")[1]


def test_a_cached_list_asks_for_version_0_and_the_pages_after_it_only_for_their_token(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    kube_server.memory.add_many([pod(f"p{i}") for i in range(25)])
    items, version = make_store(page_size=10).list("pods", cached=True)
    assert len(items) == 25 and version == kube_server.memory.list("pods")[1]
    pages = kube_server.list_requests()
    assert [p.query.get("resourceVersion") for p in pages] == ["0", None, None]
    assert [("continue" in p.query) for p in pages] == [False, True, True]
    make_store(page_size=10).list("pods")
    assert "resourceVersion" not in kube_server.list_requests()[3].query  # a list that must be current


def test_list_sends_the_selector_and_namespace_with_every_page(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    kube_server.memory.add_many([pod(f"w{i}", labels={"role": "worker"}) for i in range(5)])
    kube_server.memory.add_many([pod("other", labels={"role": "worker"}, namespace="team-b"), pod("x")])
    items, _ = make_store(page_size=2).list("pods", "team-a", "role=worker")
    assert names(items) == [f"w{i}" for i in range(5)]
    pages = kube_server.list_requests()
    assert len(pages) == 3
    assert {p.path for p in pages} == {"/api/v1/namespaces/team-a/pods"}
    assert {p.query["labelSelector"] for p in pages} == {"role=worker"}


def test_an_expired_continue_token_restarts_the_list(kube_server: MockApiServer, make_store: MakeStore) -> None:
    kube_server.memory.add_many([pod(f"p{i}") for i in range(25)])
    kube_server.expire_continues(1)
    items, _ = make_store(page_size=10).list("pods")
    assert len(items) == 25
    # first page, second page refused (410), then the three pages of a fresh list
    assert [("continue" in p.query) for p in kube_server.list_requests()] == [False, True, False, True, True]


def test_a_list_whose_continue_token_keeps_expiring_is_gone(kube_server: MockApiServer, make_store: MakeStore) -> None:
    kube_server.memory.add_many([pod(f"p{i}") for i in range(25)])
    kube_server.expire_continues(100)
    with pytest.raises(Gone, match="continue parameter is too old"):
        make_store(page_size=10).list("pods")
    assert len(kube_server.list_requests()) == 8  # four attempts of two pages


@pytest.mark.parametrize(
    "selector, want",
    [
        pytest.param(None, "", id="none"),
        pytest.param("  a=b ", "a=b", id="a string is sent as given"),
        pytest.param(LabelSelector(match_labels=(("app", "x"), ("tier", "web"))), "app=x,tier=web", id="matchLabels"),
        pytest.param(
            LabelSelector(requirements=(Requirement("gpu", "Exists"), Requirement("spot", "DoesNotExist"))),
            "gpu,!spot",
            id="existence",
        ),
        pytest.param(
            LabelSelector(requirements=(Requirement("zone", "In", ("a", "b")), Requirement("rack", "NotIn", ("r1",)))),
            "zone in (a,b),rack notin (r1)",
            id="sets",
        ),
    ],
)
def test_label_selectors_in_query_form(selector: Selector, want: str) -> None:
    assert selector_string(selector) == want


def test_a_node_selector_operator_is_not_a_label_selector() -> None:
    with pytest.raises(Invalid, match="Gt"):
        selector_string(LabelSelector(requirements=(Requirement("cores", "Gt", ("4",)),)))


def test_managed_fields_are_dropped_from_answers(kube_server: MockApiServer, make_store: MakeStore) -> None:
    obj = pod("p")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:x": {}}}]
    store = make_store()
    _, since = store.list("pods")
    assert "managedFields" not in store.create(obj)["metadata"]
    assert "managedFields" not in store.get("pods", "p", "team-a")["metadata"]
    assert "managedFields" not in store.list("pods")[0][0]["metadata"]
    assert "managedFields" not in next(store.watch("pods", since)).object["metadata"]
    assert kube_server.memory.get("pods", "p", "team-a")["metadata"]["managedFields"]  # the server keeps them


# --- writes and errors ---


def test_requests_use_the_kubernetes_paths_and_verbs(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    bound_pod(store)
    store.create(podgroup("pg"))
    store.patch("podgroups", "pg", "team-a", {"status": {"phase": "Running"}}, subresource="status")
    store.update_status({**store.get("podgroups", "pg", "team-a"), "status": {"phase": "Done"}})
    store.create(pod("q"))
    store.bind("team-a", "q", "node-1")
    store.evict("team-a", "p")
    store.delete("podgroups", "pg", "team-a", grace_period_seconds=0)
    writes = [(r.method, r.path) for r in kube_server.requests if r.method != "GET"]
    assert writes == [
        ("POST", "/api/v1/nodes"),
        ("POST", "/api/v1/namespaces/team-a/pods"),
        ("POST", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups"),
        ("PATCH", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups/pg/status"),
        ("PUT", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups/pg/status"),
        ("POST", "/api/v1/namespaces/team-a/pods"),
        ("POST", "/api/v1/namespaces/team-a/pods/q/binding"),
        ("POST", "/api/v1/namespaces/team-a/pods/p/eviction"),
        ("DELETE", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups/pg"),
    ]
    patch = next(r for r in kube_server.requests if r.method == "PATCH")
    assert patch.headers["content-type"] == "application/merge-patch+json"


def test_a_stale_update_is_a_conflict_with_the_servers_message(make_store: MakeStore) -> None:
    store = make_store()
    stale = store.create(podgroup("pg"))
    store.patch("podgroups", "pg", "team-a", {"spec": {"minMember": 2}})
    with pytest.raises(Conflict, match=r"resourceVersion \d+ is stale") as caught:
        store.update(stale)
    assert caught.value.reason == "Conflict"
    assert str(caught.value).startswith("update PodGroup team-a/pg: ")  # the request and its object


def test_an_eviction_a_disruption_budget_refuses_is_blocked_and_not_retried(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0)
    bound_pod(store)
    kube_server.block_evictions("The disruption budget train-pdb needs 4 healthy pods and has 4 currently")
    with pytest.raises(EvictionBlocked, match="train-pdb needs 4 healthy pods") as caught:
        store.evict("team-a", "p")
    assert isinstance(caught.value, Conflict)
    assert caught.value.reason == "TooManyRequests"
    assert [r.path for r in kube_server.requests if r.path.endswith("/eviction")] == [
        "/api/v1/namespaces/team-a/pods/p/eviction"
    ]
    assert timing.sleeps == []
    assert "deletionTimestamp" not in store.get("pods", "p", "team-a")["metadata"]


@pytest.mark.parametrize(
    "code, body, want, reason",
    [
        pytest.param(404, {"reason": "NotFound", "message": 'pods "x" not found'}, NotFound, "NotFound", id="404"),
        pytest.param(
            409,
            {"reason": "AlreadyExists", "message": "exists"},
            AlreadyExists,
            "AlreadyExists",
            id="409 AlreadyExists",
        ),
        pytest.param(409, {"reason": "Conflict", "message": "modified"}, Conflict, "Conflict", id="409 Conflict"),
        pytest.param(410, {"reason": "Expired", "message": "too old"}, Gone, "Gone", id="410"),
        pytest.param(422, {"reason": "Invalid", "message": "bad"}, Invalid, "Invalid", id="422"),
        pytest.param(400, {"reason": "BadRequest", "message": "bad"}, Invalid, "Invalid", id="400"),
        pytest.param(429, {"reason": "TooManyRequests", "message": "slow"}, Throttled, "TooManyRequests", id="429"),
        pytest.param(
            503, {"reason": "ServiceUnavailable", "message": "down"}, Unavailable, "ServiceUnavailable", id="503"
        ),
        pytest.param(
            403,
            {"reason": "Forbidden", "message": "cannot list pods"},
            StoreError,
            "Forbidden",
            id="403 keeps the Status reason",
        ),
        pytest.param(500, {"message": "boom"}, StoreError, "InternalError", id="500"),
    ],
)
def test_http_errors_map_to_store_errors(code: int, body: JSON, want: type[StoreError], reason: str) -> None:
    err = error_from(code, orjson.dumps({"kind": "Status", "code": code, **body}), "GET /x")
    assert type(err) is want
    assert err.reason == reason
    assert str(err) == f"GET /x: {body['message']}"
    assert err.code == code


def test_an_error_body_that_is_not_a_status_keeps_its_text() -> None:
    err = error_from(502, b"<html>bad gateway</html>", "GET /x")
    assert isinstance(err, Unavailable)
    assert "bad gateway" in str(err)


# --- throttling and the rate limit ---


def test_throttled_requests_are_retried_after_the_servers_delay(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0)
    kube_server.memory.create(pod("p"))
    kube_server.throttle(2, retry_after="3")
    assert store.get("pods", "p", "team-a")["metadata"]["name"] == "p"
    assert timing.sleeps == [3.0, 3.0]
    assert len([r for r in kube_server.requests if r.method == "GET"]) == 3


@pytest.mark.parametrize(
    "retry_after, want",
    [
        pytest.param(None, 1.0, id="absent: one second"),
        pytest.param("120", 30.0, id="capped"),
        pytest.param("soon", 1.0, id="not seconds"),
    ],
)
def test_retry_after_is_read_with_a_default_and_a_cap(
    kube_server: MockApiServer, make_store: MakeStore, retry_after: str | None, want: float
) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0, max_retry_after=30.0)
    kube_server.throttle(1, retry_after=retry_after)
    store.list("pods")
    assert timing.sleeps == [want]


def test_throttling_that_does_not_stop_gives_up(kube_server: MockApiServer, make_store: MakeStore) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0, max_retries=2)
    kube_server.throttle(100)
    with pytest.raises(Throttled, match="gave up after 2 retries") as caught:
        store.create(pod("p"))
    assert caught.value.reason == "TooManyRequests"
    assert len(kube_server.requests) == 3
    assert timing.sleeps == [1.0, 1.0]


def test_the_rate_limit_spaces_requests_after_the_burst(kube_server: MockApiServer, make_store: MakeStore) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=10, burst=2)
    for i in range(5):
        store.create(pod(f"p{i}"))
    assert timing.sleeps == [0.1, 0.1, 0.1]  # two at once, then one every 1/qps
    assert len(kube_server.requests) == 5


def test_token_bucket_refills_up_to_the_burst() -> None:
    timing = FakeTiming()
    limiter = RateLimiter(qps=4, burst=3, timing=timing)
    waits = [limiter.acquire() for _ in range(5)]
    assert waits == [0.0, 0.0, 0.0, 0.25, 0.25]
    timing.t += 10.0  # idle: the bucket refills, but only to `burst`
    assert [limiter.acquire() for _ in range(4)] == [0.0, 0.0, 0.0, 0.25]


def test_concurrent_callers_are_spaced_in_arrival_order() -> None:
    timing = FakeTiming()
    limiter = RateLimiter(qps=100, burst=1, timing=timing)
    limiter.acquire()
    waits: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        wait = limiter.acquire()
        with lock:
            waits.append(round(wait, 6))

    # With a frozen clock each new reservation waits one more interval than the last.
    timing.sleep = lambda seconds, interrupt=None: None  # type: ignore[method-assign]
    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == [0.01, 0.02, 0.03, 0.04]


def test_a_zero_qps_means_no_limit() -> None:
    limiter = RateLimiter(qps=0, burst=0, timing=FakeTiming())
    assert [limiter.acquire() for _ in range(1000)] == [0.0] * 1000


def test_backoff_doubles_up_to_the_cap() -> None:
    delays = backoff_delays(0.5, 3.0)
    assert [next(delays) for _ in range(6)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_parse_retry_after() -> None:
    assert [parse_retry_after(v) for v in ("2", "0.5", "-3", None, "x")] == [2.0, 0.5, 0.0, 1.0, 1.0]


# --- configuration ---


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: mock
  cluster: {{server: "{url}"}}
- name: nowhere
  cluster: {{server: "http://127.0.0.1:{closed_port}"}}
users:
- name: tester
  user: {{token: secret-token}}
contexts:
- name: mock-ctx
  context: {{cluster: mock, user: tester, namespace: team-a}}
- name: nowhere-ctx
  context: {{cluster: nowhere, user: tester}}
current-context: {current}
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_kubeconfig(path: Path, url: str, current: str) -> str:
    path.write_text(KUBECONFIG.format(url=url, closed_port=closed_port(), current=current))
    return str(path)


def test_a_kubeconfig_file_and_context_configure_server_and_token(kube_server: MockApiServer, tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "config", kube_server.url, current="nowhere-ctx")
    with KubeStore.connect(config, context="mock-ctx") as store:
        store.create(pod("p"))
        assert names(store.list("pods")[0]) == ["p"]
    assert {r.headers.get("authorization") for r in kube_server.requests} == {"Bearer secret-token"}
    assert all(r.headers["user-agent"] == "kai-scheduler" for r in kube_server.requests)


def test_the_current_context_is_the_default_and_an_unreachable_server_is_unavailable(
    kube_server: MockApiServer, tmp_path: Path
) -> None:
    config = write_kubeconfig(tmp_path / "config", kube_server.url, current="nowhere-ctx")
    with KubeStore.connect(config) as store, pytest.raises(Unavailable, match=r"list Node: cannot reach") as err:
        store.list("nodes")
    # One short line, not urllib3's nest of pool, URL and connection reprs (it was over 400 characters).
    assert re.fullmatch(r"list Node: cannot reach the API server https?://[\w.:-]+: [^()]+", str(err.value)), str(
        err.value
    )


def test_kubeconfig_from_the_environment(
    kube_server: MockApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", write_kubeconfig(tmp_path / "config", kube_server.url, current="mock-ctx"))
    with KubeStore.connect() as store:
        assert store.list("pods") == ([], "0")


def test_a_missing_kubeconfig_is_a_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigurationError, match="nope"):
        KubeStore.connect(str(tmp_path / "nope"))


def test_a_missing_kubeconfig_says_no_such_file_with_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    missing = str(tmp_path / "nope")
    with pytest.raises(ConfigurationError, match=f"no such file: {re.escape(missing)}$"):
        KubeStore.connect(missing)
    monkeypatch.setenv("KUBECONFIG", f"{missing}:{tmp_path / 'nope2'}")  # none of $KUBECONFIG's files exists
    with pytest.raises(ConfigurationError, match=r"the default kubeconfig.*no such file: .*nope, .*nope2$"):
        KubeStore.connect()


def test_inside_a_pod_the_service_account_is_used(kube_server: MockApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[Configuration] = []

    def load_incluster_config(client_configuration: Configuration) -> None:  # the client's loader, faked
        client_configuration.host = kube_server.url
        client_configuration.api_key = {"authorization": "Bearer sa-token"}
        loaded.append(client_configuration)

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setattr(kubernetes.config, "load_incluster_config", load_incluster_config)
    with KubeStore.connect() as store:
        store.list("queues")
    assert len(loaded) == 1
    assert kube_server.requests[-1].headers["authorization"] == "Bearer sa-token"
