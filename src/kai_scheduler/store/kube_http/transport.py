"""`Transport`: requests to one API server, rate limited and retried as the server asks.

Each request's target and headers are the ones the client library's `param_serialize` would make (its default
headers and the bearer token after the refresh hook), built directly: the client's generic serialisation and
urllib3's URL parsing per request were a fifth of a request's CPU here. A request with a whole answer (`call`)
goes through the store's libcurl sender (`curl`), or its urllib3 connections through a proxy; a watch's stream
(`open_stream`) through urllib3's pool (`connection`). Every request, watches included, first takes a token from
its `RateLimiter`; a throttled answer is retried (`retry`); a request that reaches no answer is Unavailable,
Cancelled when its store was cancelled since it started.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import urllib3
from kubernetes.client import ApiClient

from kai_scheduler.store.interface import JSON
from kai_scheduler.store.kube_http import retry, send_check
from kai_scheduler.store.kube_http.body import JSON_TYPE, decode, encode
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_http.connection import Connections
from kai_scheduler.store.kube_http.curl import Answer
from kai_scheduler.store.kube_http.errors import NoAnswer, Unavailable, cause, error_from, unreachable
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.reachability import Reachability
from kai_scheduler.store.kube_http.timing import Timing
from kai_scheduler.store.metrics import Requests

log = logging.getLogger(__name__)

Query = Sequence[tuple[str, str]]
# urllib3 retries connection failures (never redirects); statuses are ours to retry, so it must not act on
# Retry-After itself (by default it sleeps out a 429's Retry-After, unbounded and outside the rate limit).
_URLLIB3_RETRIES: Final = urllib3.Retry(
    total=3, redirect=0, respect_retry_after_header=False, raise_on_status=False, raise_on_redirect=False
)


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-request limits of a `Transport` (see `KubeOptions` for the defaults and their reasons)."""

    max_retries: int
    max_retry_after: float
    connect_timeout: float
    read_timeout: float


class Transport:
    """Requests to one API server through the store's connection pool, rate limited and retried on 429."""

    def __init__(
        self,
        api_client: ApiClient,
        limiter: RateLimiter,
        timing: Timing,
        limits: Limits,
        cancellation: Cancellation | None = None,
        reachability: Reachability | None = None,
        requests: Requests | None = None,
        connections: Connections | None = None,
    ) -> None:
        self.api_client = api_client
        self.cancellation = cancellation or Cancellation()
        self.connections = connections or Connections(api_client, self.cancellation)
        self.reachability = reachability or Reachability(timing)
        self.limiter = limiter
        self.timing = timing
        self.limits = limits
        self._timeout = urllib3.Timeout(connect=limits.connect_timeout, read=limits.read_timeout)
        self._timeouts = (limits.connect_timeout, limits.read_timeout)
        self._origin, self._prefix = self.connections.origin, self.connections.prefix
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
        refusal: retry.RefusalCheck | None = None,
        what: str = "",
    ) -> JSON:
        """One request with a JSON answer; an error status raises the matching StoreError.

        `what` names the request in errors and log lines ("patch PodGroup team-a/pg-1 status"); the default is
        the method and path."""
        what = what or f"{method} {path}"
        data = None if body is None else encode(body)
        since = self.cancellation.cuts
        limits = self.limits
        for attempt in range(limits.max_retries + 1):
            self._take_turn(what, since)
            answer = self._exchange(method, path, query, data, content_type, what, since)
            status = answer.status
            if status < 300:  # never retried (`retry.delay_before_retry` retries a 429 and some 5xx)
                return decode(answer.body, what)
            delay = retry.delay_before_retry(
                status,
                answer.retry_after,
                answer.read,
                attempt,
                limits.max_retries,
                limits.max_retry_after,
                refusal,
                what,
            )
            if delay is None:
                raise error_from(status, answer.body, what, retry_after=answer.retry_after)
            self._pause(what, status, delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def open_stream(self, path: str, query: Query, read_timeout: float, what: str = "") -> urllib3.BaseHTTPResponse:
        """A GET whose body the caller reads as it arrives (a watch); an error status raises here."""
        what = what or f"watch {path}"
        timeout = urllib3.Timeout(connect=self.limits.connect_timeout, read=read_timeout)
        since = self.cancellation.cuts
        limits = self.limits
        for attempt in range(limits.max_retries + 1):
            self._take_turn(what, since)
            resp = self._open(path, query, timeout, what, since)
            read = functools.partial(_drain, resp)
            retry_after = resp.headers.get("Retry-After")
            delay = retry.delay_before_retry(
                resp.status, retry_after, read, attempt, limits.max_retries, limits.max_retry_after, None, what
            )
            if delay is None:
                if resp.status >= 300:
                    raise error_from(resp.status, read(), what, retry_after=retry_after)
                return resp
            self._pause(what, resp.status, delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _take_turn(self, what: str, since: int) -> None:
        """Wait for the rate limiter; Cancelled when the store was cancelled before or meanwhile."""
        self.cancellation.check(what, since)
        self.limiter.acquire()
        self.cancellation.check(what, since)

    def _pause(self, what: str, status: int, delay: float) -> None:
        log.info("%s: HTTP %d, retrying in %.2fs as the server asks", what, status, delay)
        self.timing.sleep(delay, self.cancellation.cancelled)

    def _exchange(
        self, method: str, path: str, query: Query, data: bytes | None, content_type: str, what: str, since: int
    ) -> Answer:
        """One attempt of a request with a whole answer; a request that got none is Unavailable (Cancelled when a
        cancel came since the request started)."""
        target, headers = self.request(path, query, content_type if data is not None else None)
        try:
            sender = self.connections.curl()
            if sender is None:
                answer = self._exchange_urllib3(method, target, headers, data, what, since)
            else:  # its handle makes the last check itself
                answer = sender.send(method, target, headers, data, self._timeouts, what, since)
        except NoAnswer as err:
            self.requests.record(method, err.status, err.elapsed)
            self.cancellation.check(what, since)  # a cut or refused connection says so, not "connection reset"
            if err.status:  # the head came: the server answers
                self.reachability.answered()
                raise Unavailable(f"{what}: reading the answer failed: {err}") from err
            text = unreachable(self._origin, err)
            self.reachability.failed(text)
            raise Unavailable(f"{what}: {text}") from err
        self.requests.record(method, answer.status, answer.elapsed)
        self.reachability.answered()
        return answer

    def _exchange_urllib3(
        self, method: str, target: str, headers: dict[str, str], data: bytes | None, what: str, since: int
    ) -> Answer:
        """Through urllib3 (a proxy, or TLS settings libcurl is not given): the answer read whole."""
        started = time.perf_counter()
        sending = send_check.SENDING.set((self.cancellation, since, what))
        try:
            resp = self._urlopen(method, target, headers, data, self._timeout)
        except urllib3.exceptions.HTTPError as err:
            raise NoAnswer(cause(err), 0, time.perf_counter() - started) from err
        finally:
            send_check.SENDING.reset(sending)
        elapsed = time.perf_counter() - started
        try:
            body = resp.data
        except urllib3.exceptions.HTTPError as err:
            raise NoAnswer(str(err), resp.status, elapsed) from err
        finally:
            resp.release_conn()
        return Answer(resp.status, body, resp.headers.get("Retry-After"), elapsed)

    def _open(
        self, path: str, query: Query, timeout: urllib3.Timeout, what: str, since: int
    ) -> urllib3.BaseHTTPResponse:
        """Send a stream's GET through urllib3; its answer's body is left to read."""
        target, headers = self.request(path, query, None)
        started = time.perf_counter()
        sending = send_check.SENDING.set((self.cancellation, since, what))
        try:
            resp = self._urlopen("GET", target, headers, None, timeout)
        except urllib3.exceptions.HTTPError as err:
            self.requests.record("GET", 0, time.perf_counter() - started)
            self.cancellation.check(what, since)
            text = unreachable(self._origin, err)
            self.reachability.failed(text)
            raise Unavailable(f"{what}: {text}") from err
        finally:
            send_check.SENDING.reset(sending)
        self.requests.record("GET", resp.status, time.perf_counter() - started)
        self.reachability.answered()
        return resp

    def _urlopen(
        self, method: str, target: str, headers: dict[str, str], data: bytes | None, timeout: urllib3.Timeout
    ) -> urllib3.BaseHTTPResponse:
        pool = self.connections.pool()
        if pool is None:  # a proxy: its manager decides how the request line is written
            return self.api_client.rest_client.pool_manager.request(
                method,
                f"{self._origin}{target}",
                body=data,
                headers=headers,
                timeout=timeout,
                preload_content=False,
                retries=_URLLIB3_RETRIES,
            )
        # What PoolManager.urlopen does after parsing the URL and looking its pool up, done once per store.
        return pool.urlopen(
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

    def close(self) -> None:
        self.connections.close()
        self.api_client.close()


def _drain(resp: urllib3.BaseHTTPResponse) -> bytes:
    """A stream's whole body (an error answer's), its connection let go."""
    try:
        return resp.data
    finally:
        resp.release_conn()
