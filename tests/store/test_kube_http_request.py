"""`Transport.request`: the request target and headers it builds itself are the client library's, byte for byte.

The transport no longer runs the `kubernetes` client's generic `param_serialize` (and urllib3's URL parsing and
pool lookup) on every request; what reaches the API server must not change for it: the same target, the same
headers in the same order, the bearer token after the refresh hook ran.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.store.kube import KubeStore
from kai_scheduler.store.kube_http.body import JSON_TYPE, MERGE_PATCH_TYPE
from kai_scheduler.store.kube_http.config import load_client
from kai_scheduler.store.kube_http.connection import GuardedHTTPConnection
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.timing import RealTiming
from kai_scheduler.store.kube_http.transport import Limits, Transport
from tests.store.conftest import KUBE_TEST_OPTIONS, MakeStore
from tests.store.mock_apiserver import MockApiServer

QUERIES: list[list[tuple[str, str]]] = [
    [],
    [("limit", "500")],
    [("limit", "500"), ("continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTJ9+/=")],
    [("labelSelector", "a=b,c in (x,y),!d"), ("limit", "1")],
    [("watch", "true"), ("resourceVersion", "123"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "300")],
    [("fieldSelector", "spec.nodeName=n-1"), ("labelSelector", "kai.scheduler/queue=team a")],
]


def transport(configuration: Configuration) -> Transport:
    client = ApiClient(configuration)
    client.user_agent = "kai-scheduler"
    return Transport(client, RateLimiter(0, 0, RealTiming()), RealTiming(), Limits(0, 0, 1, 1))


def library_request(t: Transport, path: str, query: list[tuple[str, str]], content_type: str | None) -> Any:
    headers = {"Accept": JSON_TYPE}
    if content_type is not None:
        headers["Content-Type"] = content_type
    _, url, headers, _, _ = t.api_client.param_serialize(
        "GET", path, query_params=list(query), header_params=headers, auth_settings=["BearerToken"]
    )
    return url, list(headers.items())


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("content_type", [None, MERGE_PATCH_TYPE])
@pytest.mark.parametrize("host", ["https://127.0.0.1:6443", "https://rancher.example/k8s/clusters/c-1"])
def test_the_target_and_headers_are_the_client_librarys(
    host: str, content_type: str | None, query: list[tuple[str, str]]
) -> None:
    configuration = Configuration(
        host=host, api_key={"authorization": "abc"}, api_key_prefix={"authorization": "Bearer"}
    )
    t = transport(configuration)
    t.api_client.cookie = "session=1"
    path = "/api/v1/namespaces/team-a/pods/p%201"
    target, headers = t.request(path, query, content_type)
    url, want_headers = library_request(t, path, query, content_type)
    assert f"{t._origin}{target}" == url
    assert list(headers.items()) == want_headers
    assert headers["authorization"] == "Bearer abc"


def test_the_refresh_hook_runs_before_every_request() -> None:
    """Exec plugins and rotating service-account tokens refresh the token in the hook: each request carries the
    token as the hook left it."""
    tokens = iter(["t1", "t2"])

    def refresh(configuration: Configuration) -> None:
        configuration.api_key["authorization"] = next(tokens)

    configuration = Configuration(host="https://127.0.0.1:6443", api_key={"authorization": "t0"})
    configuration.refresh_api_key_hook = refresh
    t = transport(configuration)
    assert t.request("/api/v1/pods", [], None)[1]["authorization"] == "t1"
    assert t.request("/api/v1/pods", [], None)[1]["authorization"] == "t2"


def test_no_token_no_authorization_header() -> None:
    t = transport(Configuration(host="https://127.0.0.1:6443"))
    assert "authorization" not in t.request("/api/v1/pods", [], None)[1]


def test_requests_reach_the_server_as_sent(kube_server: MockApiServer, make_store: MakeStore) -> None:
    """Through the transport's own pool: path, query and headers as the server sees them."""
    store = make_store()
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a"}})
    store.list("pods", "team-a", "a=b,c in (x,y)")
    store.patch("configmaps", "c", "team-a", {"metadata": {"labels": {"x": "y"}}})
    seen = [r for r in kube_server.requests if r.method in ("POST", "PATCH") or "labelSelector" in r.query]
    assert [(r.method, r.path) for r in seen] == [
        ("POST", "/api/v1/namespaces/team-a/configmaps"),
        ("GET", "/api/v1/namespaces/team-a/pods"),
        ("PATCH", "/api/v1/namespaces/team-a/configmaps/c"),
    ]
    assert seen[1].query["labelSelector"] == "a=b,c in (x,y)"
    lowered = {k.lower(): v for k, v in seen[2].headers.items()}
    assert lowered["content-type"] == MERGE_PATCH_TYPE
    assert lowered["user-agent"] == KUBE_TEST_OPTIONS.user_agent


def test_closed_connections_are_made_again(kube_server: MockApiServer) -> None:
    """The store's transport closed: the next request and watch make a new sender and pool for the host rather
    than failing on the closed ones."""
    store = KubeStore(ApiClient(Configuration(host=kube_server.url)), KUBE_TEST_OPTIONS)
    try:
        version = store.list("pods")[1]
        assert list(store.watch("pods", version, timeout=0.05)) == []
        connections = store.transport.connections
        sender, pool = connections.curl(), connections.pool()
        assert sender is not None and pool is not None
        store.transport.close()
        assert pool.pool is None  # closed
        assert store.list("pods")[0] == []
        assert list(store.watch("pods", version, timeout=0.05)) == []
        assert connections.curl() is not sender and connections.pool() is not pool
    finally:
        store.close()


def test_the_transports_share_the_stores_guarded_connections(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    store.list("pods")
    connections = store.transport.connections
    assert store.event_transport.connections is connections  # events share the sender and the pool
    sender = connections.curl()
    assert sender is not None and sender.cancellation is store.cancellation  # its sockets are the store's to cut
    pool = connections.pool()  # the watches'
    assert pool is not None and issubclass(pool.ConnectionCls, GuardedHTTPConnection)
    assert pool.conn_kw["cancellation"] is store.cancellation
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})
    assert store.get("configmaps", "c", "a")["metadata"]["name"] == "c"


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: x
current-context: x
users:
- name: u
  user: {token: t0}
"""


@pytest.mark.parametrize("proxy", ["", "http://proxy.example:3128"])
def test_the_environments_proxy_is_read_once_not_at_every_request(
    proxy: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refresh hook runs before every request and assigns the host again; the proxy the environment names for
    it is the one read when the configuration was loaded, and the environment is not scanned again per request."""
    from kubernetes.client import configuration as client_configuration

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    if proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    client = load_client(str(path))
    assert client.configuration.refresh_api_key_hook is not None  # the hook is kept
    assert client.configuration.proxy == (proxy or None)
    scans: list[int] = []
    real = client_configuration.getproxies
    monkeypatch.setattr(client_configuration, "getproxies", lambda: scans.append(1) or real())
    t = Transport(client, RateLimiter(0, 0, RealTiming()), RealTiming(), Limits(0, 0, 1, 1))
    for _ in range(3):
        assert t.request("/api/v1/pods", [], None)[1]["authorization"] == "Bearer t0"
    assert scans == []
    assert client.configuration.proxy == (proxy or None)
