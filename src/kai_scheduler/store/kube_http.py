"""HTTP to a kube-apiserver for `KubeStore`: `load_client` to configure, one `Transport` per store to send.

Configuration, authentication and TLS come from the official `kubernetes` client (its `Configuration`, the
kubeconfig and in-cluster loaders, its urllib3 pool and bearer-token refresh hook); this module only sends
requests through that pool, so bodies are encoded and decoded with orjson, not by the client's models. Each
request's target and headers are the ones the client's `param_serialize` would make (its default headers and
the bearer token after the refresh hook), built directly, and go to the host's connection pool looked up once:
the client's generic serialisation and urllib3's URL parsing per request were a fifth of a request's CPU here.
The pool's connections send a request's head and body in one write (`_OneWrite`), not two.

Every request, watches included, first takes a token from one shared `RateLimiter` (client-go's QPS and
burst). A 429 answer, and a 5xx that carries Retry-After, is retried after the delay the server asks for, a
bounded number of times (client-go's `checkWait`); a 429 that is a refusal rather than throttling (a pod
disruption budget blocking an eviction) is left to the caller. Kubernetes `Status` bodies become the store's
errors with the server's message, so a component sees NotFound or Conflict whichever store it runs on.

A process that stops cannot wait for an API server that does not answer (a read waits up to `read_timeout`, and
urllib3 retries an idempotent request's read three times). The store's `Cancellation` knows the sockets of its
connections: `cancel()` shuts them down, so every request in flight fails at once (Unavailable), and refuses new
requests (and wakes the rate limiter's and Retry-After's sleeps) until `resume()`. Through an HTTP proxy the
connections are the proxy manager's and cannot be cut; a request there ends by its own timeouts.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import http.client
import logging
import os
import re
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import quote

import orjson
import urllib3
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.store import interface
from kai_scheduler.store.interface import JSON, AlreadyExists, Conflict, Gone, Invalid, NotFound, StoreError
from kai_scheduler.store.metrics import Requests

log = logging.getLogger(__name__)

JSON_TYPE: Final = "application/json"
MERGE_PATCH_TYPE: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH_TYPE: Final = "application/strategic-merge-patch+json"
# Datetimes (PyYAML parses unquoted timestamps) become RFC 3339 strings, as in MemoryStore.
_DUMP_OPTIONS: Final = orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC

Query = Sequence[tuple[str, str]]
# urllib3 retries connection failures (never redirects); statuses are ours to retry, so it must not act on
# Retry-After itself (by default it sleeps out a 429's Retry-After, unbounded and outside the rate limit).
_URLLIB3_RETRIES: Final = urllib3.Retry(
    total=3, redirect=0, respect_retry_after_header=False, raise_on_status=False, raise_on_redirect=False
)


class Throttled(StoreError):
    """The API server kept answering 429 Too Many Requests after the allowed retries."""

    reason = "TooManyRequests"


class Unavailable(StoreError):
    """The API server could not be reached, or answered 502/503/504: transient, try again later."""

    reason = "ServiceUnavailable"


class Cancelled(Unavailable, interface.Cancelled):
    """The request was cut or refused because its store was cancelled (a process stopping); an Unavailable too,
    for the callers that retry those."""


class ConfigurationError(StoreError):
    """No usable kubeconfig or in-cluster service account: a startup error, not a transient one."""

    reason = "InvalidConfiguration"


def unreachable(origin: str, err: urllib3.exceptions.HTTPError) -> str:
    """One short line for a request that reached no answer: "cannot reach the API server https://h:6443:
    Connection refused", not urllib3's nest of pool, URL and connection reprs (the retries are its own)."""
    cause: BaseException = err
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        cause = err.reason
    if isinstance(cause, urllib3.exceptions.NewConnectionError):
        text = str(cause).rsplit("Failed to establish a new connection: ", 1)[-1]
        text = re.sub(r"^\[Errno -?\d+\] ", "", text)
    elif isinstance(cause, urllib3.exceptions.ConnectTimeoutError):
        text = "connection timed out"
    elif isinstance(cause, urllib3.exceptions.SSLError):
        text = f"TLS failed: {cause.args[0] if cause.args else cause}"
    else:
        text = str(cause)
    return f"cannot reach the API server {origin}: {text}"


class Timing(Protocol):
    """Where the transport reads time and waits; tests pass a fake that records and advances."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> None:
        """Wait `seconds`, or less if `interrupt` is set meanwhile."""
        ...


class RealTiming:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> None:
        if interrupt is not None:
            interrupt.wait(seconds)
        elif seconds > 0:
            time.sleep(seconds)


# The request the current thread is sending through a tracked connection: its cancellation, the `cuts` it saw when
# it started, and its name. The connection checks it when the bytes go out (`_Tracked.send`).
_SENDING: contextvars.ContextVar[tuple[Cancellation, int, str] | None] = contextvars.ContextVar("sending", default=None)


class Cancellation:
    """The live connections of one store, and whether its requests are cancelled (see the module docstring).

    A connection registers the file descriptor of its socket as soon as the socket exists (before TLS) and
    drops it when it closes; `cancel` shuts every registered socket down (both directions), which ends a read or
    a TLS handshake waiting on it at once, and makes new requests and new connections fail until `resume`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: dict[int, int] = {}  # id(connection) → its socket's file descriptor
        self.cancelled = threading.Event()  # also what the transport's sleeps wait on
        self.cuts = 0  # how many times `cancel` was called: a request that saw another number was cut

    def add(self, connection: object, fd: int) -> None:
        with self._lock:
            self._sockets[id(connection)] = fd
            cut = self.cancelled.is_set()
        if cut:  # cancelled while it was connecting
            _shut(fd)

    def drop(self, connection: object) -> None:
        """Before the connection closes its socket: the descriptor is no longer ours to shut down."""
        with self._lock:
            self._sockets.pop(id(connection), None)

    def check(self, what: str, since: int) -> None:
        """Raise Cancelled (an Unavailable) when cancelled, or when a cancel came since the request started (its
        `since`, the `cuts` it saw then): a stopping process may resume its store (for the Lease releases) before
        a request it cut, or refused a connection, looks at why it failed."""
        if self.cancelled.is_set() or self.cuts != since:
            raise Cancelled(f"{what}: cancelled: the client is shutting down")

    def cancel(self) -> int:
        """Refuse new requests and cut the connections; return how many were cut."""
        with self._lock:
            self.cuts += 1
            self.cancelled.set()
            fds = list(self._sockets.values())
            # Shut down under the lock: a connection that closes meanwhile waits in `drop`, so its descriptor
            # cannot be reused by another socket before it is shut down.
            for fd in fds:
                _shut(fd)
        return len(fds)

    def resume(self) -> None:
        self.cancelled.clear()

    @property
    def live(self) -> int:
        with self._lock:
            return len(self._sockets)


class Reachability:
    """Whether the API server answers, as the requests of one store see it, said in two lines per outage instead
    of one per failed request or watch: a warning when a request first reaches no answer (`failed`), and a warning
    when one gets an answer again (`answered`), with how long it was unreachable and how many requests failed
    meanwhile. Both are warnings, so the default log level shows the end of what it shows the start of. While it
    is `down`, the watches retry quietly (debug): this line says it for all of them."""

    def __init__(self, timing: Timing) -> None:
        self._timing = timing
        self._lock = threading.Lock()
        self._since: float | None = None  # when the first request of the outage failed
        self._failed = 0  # requests failed since then

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, text: str) -> None:
        with self._lock:
            first = self._since is None
            if first:
                self._since = self._timing.now()
            self._failed += 1
        if first:
            log.warning(f"API server unreachable: {text}; every request and watch retries until it answers")

    def answered(self) -> None:
        if self._since is None:  # the usual case, without the lock
            return
        with self._lock:
            since, failed = self._since, self._failed
            self._since, self._failed = None, 0
        if since is not None:
            seconds = self._timing.now() - since
            log.warning(
                f"API server reachable again after {seconds:.1f}s unreachable; {failed} requests failed meanwhile "
                "(the watches resume or relist)",
                extra={"unreachable_seconds": round(seconds, 1), "failed_requests": failed},
            )


def _shut(fd: int) -> None:
    """Shut a socket down by descriptor (a duplicate shares the connection; an SSL socket's own `shutdown` would
    drop its TLS state under a thread reading it)."""
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    with dup, contextlib.suppress(OSError):
        dup.shutdown(socket.SHUT_RDWR)


class RateLimiter:
    """A token bucket shared by every request of one store (client-go's `flowcontrol.NewTokenBucketRateLimiter`).

    Up to `burst` requests go at once, then `qps` per second. A request that finds the bucket empty
    reserves the next token (the count goes negative) and sleeps until it is due, so concurrent callers are
    spaced 1/qps apart in arrival order instead of waking together. qps <= 0 disables the limit.
    """

    def __init__(self, qps: float, burst: int, timing: Timing, interrupt: threading.Event | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be at least 1 when qps > 0, got {burst}")
        self._interrupt = interrupt  # a wait for a token ends early when it is set (the store is cancelled)
        self.qps = qps
        self.burst = burst
        self._timing = timing
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = timing.now()
        self.requests = 0  # tokens taken, for the shutdown log line
        self.waits = 0  # of which had to wait
        self.waited = 0.0  # seconds waited in all

    def acquire(self) -> float:
        """Take one token, sleeping until it is available; return the seconds waited."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._timing.now()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
            self.requests += 1
            if wait > 0:
                self.waits += 1
                self.waited += wait
        if wait > 0:
            self._timing.sleep(wait, self._interrupt)
        return wait


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-request limits of a `Transport` (see `KubeOptions` for the defaults and their reasons)."""

    max_retries: int
    max_retry_after: float
    connect_timeout: float
    read_timeout: float


def load_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    """An API client configured as client-go's `BuildConfigFromFlags` would be.

    An explicit kubeconfig (or context) wins; otherwise the in-cluster service account when running in a
    pod; otherwise $KUBECONFIG (read now, a colon-separated list as kubectl takes) or ~/.kube/config.
    All loading, TLS and token refresh is the official client's; its errors become ConfigurationError."""
    configuration = Configuration()
    in_cluster = kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST")
    try:
        if in_cluster:
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            path = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            _check_exists(path)
            kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    except (kube_config.ConfigException, OSError, yaml.YAMLError) as err:  # a kubeconfig that is not YAML too
        default = "the default kubeconfig"
        where = "the in-cluster service account" if in_cluster else repr(kubeconfig) if kubeconfig else default
        why = " ".join(str(err).split())  # a YAML error spans several lines
        raise ConfigurationError(f"cannot load the Kubernetes configuration from {where}: {why}") from err
    # The environment's proxy for the host, resolved once now, as client-go's `http.ProxyFromEnvironment` reads
    # the environment once per process: the token refresh hook assigns the host again before every request, and
    # with the proxy still "from the environment" each assignment scanned os.environ again (`getproxies`), all but
    # 3.5 of the 42 µs a request's target and headers took (bench/README.md, "A second pass"). Same proxy, same hook.
    configuration.proxy = configuration.proxy
    # Each open watch holds a pooled connection; keep room for them beside the ordinary calls.
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
    if not configuration.verify_ssl:
        unverified_tls(configuration.host)
    return ApiClient(configuration)


def _check_exists(path: str) -> None:
    """A kubeconfig path (or $KUBECONFIG's list) of which no file exists: say so, with the path tried, rather
    than the client's "Invalid kube-config file. No configuration found."."""
    files = [os.path.expanduser(p) for p in path.split(os.pathsep) if p]
    if files and not any(os.path.exists(f) for f in files):
        raise FileNotFoundError(f"no such file: {', '.join(files)}")


_unverified_warned = threading.Event()


def unverified_tls(host: str) -> None:
    """The kubeconfig says `insecure-skip-tls-verify`: one warning line per process, instead of urllib3's
    InsecureRequestWarning on every request (which this silences, for this process only)."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if not _unverified_warned.is_set():
        _unverified_warned.set()
        log.warning(
            "TLS verification is off (insecure-skip-tls-verify in the kubeconfig): the certificate of %s "
            "is not checked",
            host,
        )


# Decides about a 429 before it is retried: an error to raise at once, or None to treat it as throttling. It gets
# the Status and the request's name (`what`).
RefusalCheck = Callable[[JSON, str], StoreError | None]


class Transport:
    """Requests to one API server through the client library's pool, rate limited and retried on 429."""

    def __init__(
        self,
        api_client: ApiClient,
        limiter: RateLimiter,
        timing: Timing,
        limits: Limits,
        cancellation: Cancellation | None = None,
        reachability: Reachability | None = None,
        requests: Requests | None = None,
    ) -> None:
        self.api_client = api_client
        self.cancellation = cancellation or Cancellation()
        self.reachability = reachability or Reachability(timing)
        self.limiter = limiter
        self.timing = timing
        self.limits = limits
        self._timeout = urllib3.Timeout(connect=limits.connect_timeout, read=limits.read_timeout)
        self._pool: urllib3.HTTPConnectionPool | None = None
        self._pool_manager: urllib3.PoolManager | None = None
        # client-go's rest_client_* series: every attempt counted with its status and timed to its headers.
        self.requests = requests or Requests(urllib3.util.parse_url(self._origin).netloc or self._origin)

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON_TYPE,
        refusal: RefusalCheck | None = None,
        what: str = "",
    ) -> JSON:
        """One request with a JSON answer; an error status raises the matching StoreError.

        `what` names the request in errors and log lines ("patch PodGroup team-a/pg-1 status"); the default is
        the method and path."""
        what = what or f"{method} {path}"
        data = None if body is None else encode(body)
        since = self.cancellation.cuts
        resp = self.send(method, path, query, data, content_type, self._timeout, refusal, what, since=since)
        try:
            raw = resp.data
        except urllib3.exceptions.HTTPError as err:
            self.cancellation.check(what, since)  # cut while the answer was read
            raise Unavailable(f"{what}: reading the answer failed: {err}") from err
        finally:
            resp.release_conn()
        if resp.status >= 300:
            raise error_from(resp.status, raw, what, retry_after=resp.headers.get("Retry-After"))
        return decode(raw, what)

    def open_stream(self, path: str, query: Query, read_timeout: float, what: str = "") -> urllib3.BaseHTTPResponse:
        """A GET whose body the caller reads as it arrives (a watch); an error status raises here."""
        what = what or f"watch {path}"
        timeout = urllib3.Timeout(connect=self.limits.connect_timeout, read=read_timeout)
        resp = self.send("GET", path, query, None, JSON_TYPE, timeout, None, what)
        if resp.status >= 300:
            try:
                raw = resp.data
            finally:
                resp.release_conn()
            raise error_from(resp.status, raw, what, retry_after=resp.headers.get("Retry-After"))
        return resp

    def send(
        self,
        method: str,
        path: str,
        query: Query,
        data: bytes | None,
        content_type: str,
        timeout: urllib3.Timeout,
        refusal: RefusalCheck | None,
        what: str = "",
        *,
        since: int | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send, waiting for the rate limiter before each attempt; retry throttled answers. `since`: the
        cancellation's `cuts` when the request started (default: now); a cancel after it makes it Cancelled."""
        what = what or f"{method} {path}"
        cancellation = self.cancellation
        if since is None:
            since = cancellation.cuts
        for attempt in range(self.limits.max_retries + 1):
            cancellation.check(what, since)
            self.limiter.acquire()
            cancellation.check(what, since)
            resp = self._send_once(method, path, query, data, content_type, timeout, what, since)
            delay = self._retry_delay(resp, attempt, refusal, what)
            if delay is None:
                return resp
            log.info("%s: HTTP %d, retrying in %.2fs as the server asks", what, resp.status, delay)
            self.timing.sleep(delay, cancellation.cancelled)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _retry_delay(
        self, resp: urllib3.BaseHTTPResponse, attempt: int, refusal: RefusalCheck | None, what: str
    ) -> float | None:
        """None to hand `resp` to the caller; else the delay before the next attempt (the answer is read)."""
        retry_after = resp.headers.get("Retry-After")
        if resp.status != 429 and not (resp.status >= 500 and retry_after is not None):
            return None
        try:
            raw = resp.data
        finally:
            resp.release_conn()
        if refusal is not None and resp.status == 429:
            refused = refusal(status_of(raw), what)
            if refused is not None:
                raise refused
        if attempt >= self.limits.max_retries:
            err = error_from(resp.status, raw, what, retry_after=retry_after)
            if resp.status == 429:
                throttled = Throttled(f"{err} (gave up after {attempt} retries)")
                throttled.code, throttled.retry_after = err.code, err.retry_after
                raise throttled
            raise err
        return min(parse_retry_after(retry_after), self.limits.max_retry_after)

    def _send_once(
        self,
        method: str,
        path: str,
        query: Query,
        data: bytes | None,
        content_type: str,
        timeout: urllib3.Timeout,
        what: str,
        since: int,
    ) -> urllib3.BaseHTTPResponse:
        target, headers = self.request(path, query, content_type if data is not None else None)
        started = time.perf_counter()
        sending = _SENDING.set((self.cancellation, since, what))
        try:
            pool = self._connection_pool()
            if pool is None:  # a proxy: its manager decides how the request line is written
                resp = self.api_client.rest_client.pool_manager.request(
                    method,
                    f"{self._origin}{target}",
                    body=data,
                    headers=headers,
                    timeout=timeout,
                    preload_content=False,
                    retries=_URLLIB3_RETRIES,
                )
            else:
                # What PoolManager.urlopen does after parsing the URL and looking its pool up, done once per
                # transport.
                resp = pool.urlopen(
                    method,
                    target,
                    body=data,
                    headers=headers,
                    timeout=timeout,
                    preload_content=False,
                    retries=_URLLIB3_RETRIES,
                    redirect=False,
                    assert_same_host=False,
                )
        except urllib3.exceptions.HTTPError as err:
            self.requests.record(method, 0, time.perf_counter() - started)
            self.cancellation.check(what, since)  # a cut or refused connection says so, not "connection reset"
            text = unreachable(self._origin, err)
            self.reachability.failed(text)
            raise Unavailable(f"{what}: {text}") from err
        finally:
            _SENDING.reset(sending)
        self.requests.record(method, resp.status, time.perf_counter() - started)
        self.reachability.answered()
        return resp

    def request(self, path: str, query: Query, content_type: str | None) -> tuple[str, dict[str, str]]:
        """The request target (the host's own path prefix, the path, the encoded query) and the headers: the same
        as the client library's `param_serialize` makes (its default headers, cookie and bearer token, the refresh
        hook that exec plugins and rotating service-account tokens rely on run first), without its generic
        serialisation of every argument on each request."""
        headers = {"Accept": JSON_TYPE}
        if content_type is not None:
            headers["Content-Type"] = content_type
        client = self.api_client
        headers.update(client.default_headers)
        if client.cookie:
            headers["Cookie"] = client.cookie
        bearer = client.configuration.auth_settings().get("BearerToken")
        if bearer is not None:
            headers[bearer["key"]] = bearer["value"]
        if query:
            path += "?" + "&".join(f"{key}={quote(str(value))}" for key, value in query)
        return self._prefix + path, headers

    @functools.cached_property
    def _split_host(self) -> tuple[str, str]:
        """The configured host as (scheme://host:port, path prefix): a host such as `https://rancher/k8s/clusters/c-1`
        serves the API under a path, which every request target carries."""
        host = str(self.api_client.configuration.host)
        parsed = urllib3.util.parse_url(host)
        origin = f"{parsed.scheme}://{parsed.netloc}" if parsed.scheme and parsed.netloc else host
        return origin, host[len(origin) :] if host.startswith(origin) else ""

    @property
    def _origin(self) -> str:
        return self._split_host[0]

    @property
    def _prefix(self) -> str:
        return self._split_host[1]

    def _connection_pool(self) -> urllib3.HTTPConnectionPool | None:
        """The pool of the API server's connections (None through a proxy, whose manager builds the request)."""
        manager = self.api_client.rest_client.pool_manager
        if isinstance(manager, urllib3.ProxyManager):
            return None
        pool = self._pool
        if pool is None or pool.pool is None or self._pool_manager is not manager:  # none yet, or closed
            pool = self._pool = manager.connection_from_url(self._origin)
            self._pool_manager = manager
            one_write = _ONE_WRITE.get(pool.ConnectionCls)
            if one_write is not None:  # the connections it makes from now on: one write, cut by `cancel`
                pool.ConnectionCls = type(one_write.__name__, (one_write,), {"cancellation": self.cancellation})
        return pool

    def close(self) -> None:
        self.api_client.close()


class _OneWrite(http.client.HTTPConnection):
    """Sends a request's head and its body in one write: urllib3 sends the head when the headers end and the body
    after it, two TLS records and two system calls for every write request. The head is held until the body (or,
    with none, the wait for the answer) and goes with it; what goes on the wire is the same bytes."""

    _held: bytes = b""

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        if message_body is not None:
            super()._send_output(message_body, encode_chunked=encode_chunked)  # type: ignore[misc]  # http.client's own
            return
        self._buffer.extend((b"", b""))  # type: ignore[attr-defined]  # http.client's own, as its _send_output
        head = b"\r\n".join(self._buffer)  # type: ignore[attr-defined]
        del self._buffer[:]  # type: ignore[attr-defined]
        self._held = head

    def send(self, data: Any) -> None:
        held, self._held = self._held, b""
        if held and isinstance(data, bytes | bytearray):
            super().send(held + bytes(data))
            return
        if held:
            super().send(held)
        super().send(data)

    def flush_held(self) -> None:
        held, self._held = self._held, b""
        if held:
            super().send(held)

    def close(self) -> None:
        self._held = b""
        super().close()


class _Tracked(urllib3.connection.HTTPConnection):
    """A connection whose socket its store's `Cancellation` can shut down (set per pool, see `_connection_pool`)."""

    cancellation: Cancellation | None = None

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        if self.cancellation is not None:
            self.cancellation.add(self, sock.fileno())
        return sock

    def connect(self) -> None:
        cancellation = self.cancellation
        if cancellation is not None and cancellation.cancelled.is_set():
            raise urllib3.exceptions.NewConnectionError(self, "cancelled: the client is shutting down")
        try:
            super().connect()
        except BaseException:
            if cancellation is not None:
                cancellation.drop(self)
            raise
        if cancellation is not None and self.sock is not None:
            cancellation.add(self, self.sock.fileno())  # the TLS socket, when it wraps the first one

    def send(self, data: Any) -> None:
        """Every write to the socket (http.client's public `send`) first asks whether the request may still go
        out: not if its store was cancelled since it started (a lapse's cut while it waited for a connection), nor
        if the caller's own check (`interface.checked_when_sent`: the fence's leadership) refuses it now."""
        sending = _SENDING.get()
        if sending is not None:
            cancellation, since, what = sending
            cancellation.check(what, since)
        interface.check_before_sending()
        super().send(data)

    def close(self) -> None:
        if self.cancellation is not None:
            self.cancellation.drop(self)
        super().close()


class _OneWriteHTTPConnection(_OneWrite, _Tracked):
    def getresponse(self) -> urllib3.response.HTTPResponse:  # type: ignore[override]
        self.flush_held()
        return super().getresponse()


class _OneWriteHTTPSConnection(_OneWrite, _Tracked, urllib3.connection.HTTPSConnection):
    def getresponse(self) -> urllib3.response.HTTPResponse:  # type: ignore[override]
        self.flush_held()
        return super().getresponse()


_ONE_WRITE: Final[dict[type[Any], type[Any]]] = {
    urllib3.connection.HTTPConnection: _OneWriteHTTPConnection,
    urllib3.connection.HTTPSConnection: _OneWriteHTTPSConnection,
}


def encode(body: Any) -> bytes:
    try:
        return orjson.dumps(body, option=_DUMP_OPTIONS)
    except TypeError as err:  # orjson.JSONEncodeError is a TypeError
        raise Invalid(f"object is not JSON: {err}") from None


def decode(raw: bytes, what: str) -> JSON:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise StoreError(f"{what}: the API server answered with malformed JSON: {err}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"{what}: the API server answered with {type(doc).__name__}, not an object")
    return doc


def status_of(raw: bytes) -> JSON:
    """The Kubernetes Status in an error body, or an empty one if the body is not a Status."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return {"message": text[:500]} if text else {}
    return doc if isinstance(doc, dict) else {}


_BY_STATUS: Final[dict[int, type[StoreError]]] = {
    400: Invalid,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: Throttled,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def error_from(code: int, raw: bytes, what: str, *, retry_after: str | None = None) -> StoreError:
    """The store error for an HTTP error status, carrying the API server's message.

    409 is AlreadyExists or Conflict by the Status reason; 400 and 422 are Invalid; statuses without an
    interface class (401, 403, 500…) are a plain StoreError whose `reason` is the Status reason."""
    return error_from_status(code, status_of(raw), what, retry_after=retry_after)


def error_from_status(code: int, status: JSON, what: str, *, retry_after: str | None = None) -> StoreError:
    """`what: message`, where `what` names the request and its object ("create Queue team-a") and the message
    is the server's, with the field causes of a 422 that it does not already spell out. The error keeps the
    HTTP code, the causes as (field, message) pairs and the Retry-After header."""
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or f"HTTP {code}")
    causes = field_causes(status)
    missing = [
        f"{field}: {text}" if field else text
        for field, text in causes
        if (field and field not in message) or (not field and text not in message)
    ]
    if missing:
        message = f"{message} [{'; '.join(missing)}]"
    cls = AlreadyExists if code == 409 and reason == "AlreadyExists" else _BY_STATUS.get(code, StoreError)
    err = cls(f"{what}: {message}")
    if cls is StoreError:
        err.reason = reason or ("InternalError" if code >= 500 else f"HTTP{code}")
    err.code, err.causes, err.retry_after = code, causes, retry_after
    return err


def field_causes(status: JSON) -> list[tuple[str, str]]:
    """The (field, message) pairs of a Status's `details.causes` (a 422's invalid fields)."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    out = []
    for cause in causes if isinstance(causes, list) else ():
        if isinstance(cause, dict) and (cause.get("field") or cause.get("message")):
            out.append((str(cause.get("field") or ""), str(cause.get("message") or cause.get("reason") or "")))
    return out


def parse_retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header; 1 when absent or not a number of seconds (the HTTP-date form
    is not used by the API server)."""
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0


def backoff_delays(initial: float, maximum: float, factor: float = 2.0) -> Iterator[float]:
    """Delays between reconnection attempts: initial, initial*factor, … capped at maximum."""
    delay = initial
    while True:
        yield delay
        delay = min(delay * factor, maximum)
