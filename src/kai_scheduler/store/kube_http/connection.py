"""The connections of a store to its API server: libcurl handles for the requests, a urllib3 pool for the watches.

Both are built with the settings the `kubernetes` client gives the pools of its own urllib3 manager (its TLS
files, verification, socket options and size). The requests with a whole answer go through `curl.CurlSender`
(half urllib3's CPU per request); the watches, long-lived streams read as they arrive, through urllib3's pool,
whose connections differ from urllib3's in two ways, each through a public method:

- Right before a request is written, `send_check` asks whether it may still go out (a cancel since it started,
  the fence's leadership): it may have waited for its connection, or the TLS handshake, past both.
- Each socket is known to the store's `Cancellation` from when it exists (a TLS socket from the start of its
  handshake, through the TLS context's `sslsocket_class`) until it closes, so `cancel()` can cut it.

With a TLS setting libcurl is not given here (`curl.supports`), `Connections.curl` is None and every request
goes through the pool. Through a proxy (HTTP or SOCKS) the client library's proxy manager builds each request and
owns its connections: `Connections.curl` and `Connections.pool` are None and the transport sends through it.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from urllib3.poolmanager import SSL_KEYWORDS

from kai_scheduler.store.kube_http import send_check
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_http.curl import CurlSender, supports


class GuardedHTTPConnection(urllib3.connection.HTTPConnection):
    """A connection checked right before it writes a request, on a socket its store can cut."""

    def __init__(self, *args: Any, cancellation: Cancellation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancellation = cancellation

    def connect(self) -> None:
        if self.cancellation.cancelled.is_set():
            raise urllib3.exceptions.NewConnectionError(self, "cancelled: the client is shutting down")
        super().connect()
        self.cancellation.add(self.sock)

    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **options: Any) -> None:
        if self.sock is None:  # connected first (urllib3 connects a TLS one before), so the check comes after
            self.connect()
        send_check.check_before_writing()
        super().request(method, url, body, headers, **options)

    def close(self) -> None:
        if self.sock is not None:
            self.cancellation.drop(self.sock)
        super().close()


class GuardedHTTPSConnection(GuardedHTTPConnection, urllib3.connection.HTTPSConnection):
    pass


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


def split_host(host: str) -> tuple[str, str]:
    """The configured host as (scheme://host:port, path prefix): a host such as `https://rancher/k8s/clusters/c-1`
    serves the API under a path, which every request target carries."""
    parsed = urllib3.util.parse_url(host)
    origin = f"{parsed.scheme}://{parsed.netloc}" if parsed.scheme and parsed.netloc else host
    return origin, host[len(origin) :] if host.startswith(origin) else ""


class Connections:
    """One store's connections to its API server (shared by its transports): the libcurl sender and the urllib3
    pool, each made on first use and again after it was closed."""

    def __init__(self, api_client: ApiClient, cancellation: Cancellation) -> None:
        self.api_client = api_client
        self.cancellation = cancellation
        self.origin, self.prefix = split_host(str(api_client.configuration.host))
        self._lock = threading.Lock()
        self._pool: urllib3.HTTPConnectionPool | None = None
        self._curl: CurlSender | None = None
        self._manager: urllib3.PoolManager | None = None  # whose settings the sender was made with
        self._pool_manager: urllib3.PoolManager | None = None  # and the pool

    def curl(self) -> CurlSender | None:
        """The libcurl sender (None through a proxy, or with TLS settings it does not take)."""
        manager = self.api_client.rest_client.pool_manager
        sender = self._curl
        if sender is not None and self._manager is manager:
            return sender
        if type(manager) is not urllib3.PoolManager or not supports(manager.connection_pool_kw):
            return None
        with self._lock:
            if self._curl is None or self._manager is not manager:  # none yet, closed, or a new client
                if self._curl is not None:
                    self._curl.close()
                self._curl = CurlSender(self.origin, dict(manager.connection_pool_kw), self.cancellation)
                self._manager = manager
            return self._curl

    def pool(self) -> urllib3.HTTPConnectionPool | None:
        """The pool (None through a proxy: the client library's proxy manager then sends each request)."""
        manager = self.api_client.rest_client.pool_manager
        if type(manager) is not urllib3.PoolManager:
            return None
        pool = self._pool
        if pool is None or pool.pool is None or self._pool_manager is not manager:  # none yet, closed, a new client
            with self._lock:
                pool = self._pool
                if pool is None or pool.pool is None or self._pool_manager is not manager:
                    pool = self._pool = _open_pool(manager, self.origin, self.cancellation)
                    self._pool_manager = manager
        return pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            sender, self._curl = self._curl, None
        if pool is not None:
            pool.close()
        if sender is not None:
            sender.close()


def _open_pool(manager: urllib3.PoolManager, origin: str, cancellation: Cancellation) -> urllib3.HTTPConnectionPool:
    """A pool for `origin` with the settings the manager gives its own pools (the client library's TLS files,
    verification, socket options and size), whose connections are guarded and known to `cancellation`."""
    url = urllib3.util.parse_url(origin)
    if not url.host:
        raise urllib3.exceptions.LocationValueError(f"no host in {origin!r}")
    settings = dict(manager.connection_pool_kw)
    if url.scheme == "https":
        settings["ssl_context"] = _tls_context(settings, cancellation)
        return _HTTPSPool(url.host, url.port or 443, cancellation=cancellation, **settings)
    for key in SSL_KEYWORDS:  # as the manager leaves them out of a plain-HTTP pool
        settings.pop(key, None)
    return _HTTPPool(url.host, url.port or 80, cancellation=cancellation, **settings)


def _tls_context(settings: dict[str, Any], cancellation: Cancellation) -> ssl.SSLContext:
    """The TLS context urllib3 would make for each connection from these settings (it still loads the CA and
    client certificate files into it), made once, whose sockets `cancellation` knows from their handshake on."""
    context = urllib3.util.create_urllib3_context(
        ssl_version=urllib3.util.resolve_ssl_version(settings.get("ssl_version")),
        ssl_minimum_version=settings.get("ssl_minimum_version"),
        ssl_maximum_version=settings.get("ssl_maximum_version"),
        cert_reqs=urllib3.util.resolve_cert_reqs(settings.get("cert_reqs")),
    )
    if not any(settings.get(key) for key in ("ca_certs", "ca_cert_dir", "ca_cert_data")):
        context.load_default_certs()  # as urllib3 does for a context of its own
    context.sslsocket_class = _tracked_tls_sockets(cancellation)
    return context


def _tracked_tls_sockets(cancellation: Cancellation) -> type[ssl.SSLSocket]:
    class TrackedSSLSocket(ssl.SSLSocket):
        """A TLS socket `cancellation` can cut from the start of its handshake (a server that accepted the
        connection and answers nothing holds a handshake up to the connect timeout) until it closes."""

        def do_handshake(self, block: bool = False) -> None:
            cancellation.add(self)
            super().do_handshake(block)

        def close(self) -> None:
            cancellation.drop(self)
            super().close()

    return TrackedSSLSocket
