"""A stateful mock kube-apiserver over real HTTP on loopback, for testing `KubeStore` (and benchmarks).

Why not kmock: its Kubernetes emulator (0.8) has no resource versions, paging, status subresource,
binding/eviction subresources, bookmarks or 410 Gone; we would have replaced most of it. Here the object
semantics are `MemoryStore`'s (which answers as the API server does wherever a component can tell), and this
module adds what is particular to HTTP, as kube-apiserver does it:

- REST paths of `RESOURCES` (`/api/v1/...`, `/apis/{group}/{version}/...`, `/namespaces/{ns}/...`), the
  `status`, `binding` and `eviction` subresources, merge-patch, DeleteOptions; errors as `Status` bodies
  (404 NotFound, 409 AlreadyExists/Conflict, 410 Expired, 422 Invalid, 429 TooManyRequests).
- LIST with `limit` and `continue` over a consistent snapshot; list items without apiVersion and kind.
- WATCH streams: chunked JSON lines, from `resourceVersion` (none or "0": the current objects as ADDED
  first), `timeoutSeconds`, BOOKMARK events when `allowWatchBookmarks=true`, 410 for a compacted version
  (as an ERROR event, or as the HTTP status with `gone_as_status`).
- Faults to inject: `throttle` (429 with Retry-After), `refuse` (any status, e.g. RBAC's 403, a 409, a 422
  with field causes, a 500, for the requests matching a method and path), `block_evictions` (a
  PodDisruptionBudget's 429),
  `drop_watches` (cut the connections), `expire_watches` (ERROR 410 on open watches), `fail_watches`
  (5xx on the next watch requests), `expire_continues`, `send_bookmarks`, `stall` (accept and never answer,
  as a server starved of CPU or stopped with SIGSTOP, until `resume`).

Run alone (`python -m tests.store.mock_apiserver --load objects.jsonl`) it prints its URL and serves until
stdin closes; the LIST benchmark uses it so that the server's memory and CPU are not the client's.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import re
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.api.selectors import parse_label_selector_string
from kai_scheduler.store.interface import (
    JSON,
    RESOURCES,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Resource,
    StoreError,
)
from kai_scheduler.store.memory import MemoryStore

_TICK = 0.02  # how often a watch loop looks at faults and bookmarks
DROP, EXPIRE, BOOKMARK = 0, 1, 2  # indexes of the watch marks: counters an open watch acts on when they move
Marks = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    at: float  # time.monotonic() on arrival

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass(frozen=True, slots=True)
class Route:
    res: Resource
    namespace: str | None
    name: str
    subresource: str


class HttpError(Exception):
    def __init__(
        self, code: int, reason: str, message: str, details: JSON | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details, self.headers = details, headers or {}

    def status(self) -> JSON:
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


_FROM_STORE: list[tuple[type[StoreError], int, str]] = [
    (NotFound, 404, "NotFound"),
    (AlreadyExists, 409, "AlreadyExists"),
    (Conflict, 409, "Conflict"),
    (Gone, 410, "Expired"),
    (Invalid, 422, "Invalid"),
]


def http_error(err: StoreError) -> HttpError:
    """The Status the API server answers for the store's error, with the field causes of an Invalid."""
    for cls, code, reason in _FROM_STORE:
        if isinstance(err, cls):
            causes = [{"reason": "FieldValueInvalid", "field": f, "message": m} for f, m in err.causes]
            return HttpError(code, reason, str(err), {"causes": causes} if causes else None)
    return HttpError(500, "InternalError", str(err))


@dataclass(slots=True)
class Refusal:
    """Answer the requests of `method` whose path matches `path` (a regular expression, searched) with this
    status, `count` times (-1: always)."""

    method: str
    path: str
    code: int
    reason: str
    message: str
    details: JSON | None = None
    headers: dict[str, str] = field(default_factory=dict)
    count: int = -1
    answered: int = 0

    def matches(self, method: str, path: str) -> bool:
        return self.count != 0 and method == self.method and re.search(self.path, path) is not None


@dataclass(slots=True)
class Faults:
    throttled: int = 0
    retry_after: str | None = "1"
    throttle_watches: bool = False
    evictions_blocked: str = ""
    watch_failures: int = 0
    watch_failure_code: int = 503
    continue_expiries: int = 0
    refusals: list[Refusal] = field(default_factory=list)
    stalls: list[Stall] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Stall:
    method: str  # "" = any
    path: str  # a regular expression searched in the path; "" = any

    def matches(self, method: str, path: str) -> bool:
        return (not self.method or method == self.method) and (not self.path or re.search(self.path, path) is not None)


@dataclass(slots=True)
class _Snapshot:
    items: list[JSON]
    version: str
    offset: int


@dataclass(slots=True)
class State:
    memory: MemoryStore
    faults: Faults = field(default_factory=Faults)
    continues: dict[str, _Snapshot] = field(default_factory=dict)
    last_list: tuple[tuple[Any, ...], list[JSON]] | None = None
    held: int = 0  # requests held unanswered by a stall of this state now


class MockApiServer:
    """Serve `RESOURCES` over HTTP from a MemoryStore; see the module docstring. Thread-safe."""

    def __init__(self, memory: MemoryStore | None = None, *, bookmark_interval: float | None = None) -> None:
        self.state = State(memory or MemoryStore(SystemClock()))
        self.bookmark_interval = bookmark_interval
        self.gone_as_status = False
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._marks: list[int] = [0, 0, 0]
        self._watches: dict[int, Marks] = {}  # open watch → the marks it has acted on
        self._watched = threading.Condition(self.lock)
        self._tokens = itertools.count(1)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.mock = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="mock-apiserver", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def memory(self) -> MemoryStore:
        return self.state.memory

    def start(self) -> MockApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> MockApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def held(self) -> int:
        """Requests held unanswered by a stall now (of this test's state: one an earlier test left held is not
        counted, and it ends at the reset, even if this test stalls again before its handler looks)."""
        return self.state.held

    def reset(self, memory: MemoryStore) -> None:
        """Fresh state for a new test: new objects, no faults, empty request log; open watches end."""
        self._mark(DROP)
        with self.lock:
            self.state = State(memory)
            self.requests = []
            self.gone_as_status = False
            self.bookmark_interval = None

    # --- fault injection ---

    def throttle(self, count: int, retry_after: str | None = "1", *, watches: bool = False) -> None:
        """Answer the next `count` requests (watches too if asked) with 429 and this Retry-After."""
        with self.lock:
            faults = self.state.faults
            faults.throttled, faults.retry_after, faults.throttle_watches = count, retry_after, watches

    def refuse(
        self,
        method: str,
        path: str,
        code: int,
        reason: str,
        message: str,
        *,
        details: JSON | None = None,
        headers: dict[str, str] | None = None,
        count: int = -1,
    ) -> Refusal:
        """Answer `method` requests whose URL path matches the regular expression `path` with a Status of this
        code, reason, message and details (and these headers), `count` times (-1: until `reset`). The
        returned Refusal counts the requests it `answered`."""
        refusal = Refusal(method, path, code, reason, message, details, dict(headers or {}), count)
        with self.lock:
            self.state.faults.refusals.append(refusal)
        return refusal

    def stall(self, method: str = "", path: str = "") -> None:
        """Hold the matching requests (all by default) unanswered until `resume`, and, when all are held, send
        nothing more on open watches: a server that accepts connections and does not answer. A held request
        whose client went away meanwhile is dropped without being processed (it never reached the server)."""
        with self.lock:
            self.state.faults.stalls.append(Stall(method, path))

    def resume(self) -> None:
        """Answer again: held requests go on (those whose client is still there)."""
        with self.lock:
            self.state.faults.stalls.clear()

    def stalled(self, method: str, path: str) -> bool:
        with self.lock:
            return any(stall.matches(method, path) for stall in self.state.faults.stalls)

    def block_evictions(self, message: str = "The disruption budget pdb needs 2 healthy pods and has 2") -> None:
        with self.lock:
            self.state.faults.evictions_blocked = message

    def fail_watches(self, count: int, code: int = 503) -> None:
        with self.lock:
            self.state.faults.watch_failures, self.state.faults.watch_failure_code = count, code

    def drop_watches(self) -> None:
        """Cut every open watch connection without ending the chunked body (a broken connection)."""
        self._mark(DROP)

    def expire_watches(self) -> None:
        """Send ERROR 410 "too old resource version" on every open watch, then end it."""
        self._mark(EXPIRE)

    def send_bookmarks(self) -> None:
        """Send one BOOKMARK on every open watch that allows them."""
        self._mark(BOOKMARK)

    def _mark(self, index: int) -> None:
        """Move one mark; return once every watch open now has acted on it (or ended), so tests are
        deterministic: what a test writes afterwards comes after the fault."""
        with self._watched:
            self._marks[index] += 1
            value, open_now = self._marks[index], list(self._watches)
            done = self._watched.wait_for(
                lambda: all(self._watches.get(w, (value,) * 3)[index] >= value for w in open_now), 5.0
            )
        if not done:
            raise TimeoutError("open watches did not act on the fault within 5 s")

    def watch_opened(self, key: int) -> Marks:
        with self._watched:
            marks = self._watches[key] = (self._marks[0], self._marks[1], self._marks[2])
            return marks

    def watch_marks(self) -> Marks:
        with self.lock:
            return self._marks[0], self._marks[1], self._marks[2]

    def watch_acted(self, key: int, marks: Marks | None) -> None:
        """A watch has acted on `marks` (None: it has ended)."""
        with self._watched:
            if marks is None:
                self._watches.pop(key, None)
            else:
                self._watches[key] = marks
            self._watched.notify_all()

    def expire_continues(self, count: int = 1) -> None:
        """Answer the next `count` requests for a further page with 410 Expired."""
        with self.lock:
            self.state.faults.continue_expiries = count

    def watch_requests(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.is_watch]

    def list_requests(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.method == "GET" and not r.is_watch and "limit" in r.query]

    # --- serving (called from handler threads) ---

    def record(self, method: str, path: str, query: dict[str, str], headers: dict[str, str]) -> Recorded:
        rec = Recorded(method, path, query, headers, time.monotonic())
        with self.lock:
            self.requests.append(rec)
            faults = self.state.faults
            if faults.throttled > 0 and (faults.throttle_watches or not rec.is_watch):
                faults.throttled -= 1
                retry = {"Retry-After": faults.retry_after} if faults.retry_after is not None else {}
                seconds = faults.retry_after if (faults.retry_after or "").isdigit() else "0"
                raise HttpError(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                    {"retryAfterSeconds": int(seconds or 0)},
                    retry,
                )
            for refusal in faults.refusals:
                if refusal.matches(method, path):
                    refusal.answered += 1
                    if refusal.count > 0:
                        refusal.count -= 1
                    raise HttpError(refusal.code, refusal.reason, refusal.message, refusal.details, refusal.headers)
        return rec

    def new_continue(self, snapshot: _Snapshot) -> str:
        token = f"c{next(self._tokens)}"
        with self.lock:
            self.state.continues[token] = snapshot
        return token

    def take_continue(self, token: str) -> _Snapshot:
        with self.lock:
            snapshot = self.state.continues.pop(token, None)
            if self.state.faults.continue_expiries > 0:
                self.state.faults.continue_expiries -= 1
                snapshot = None
        if snapshot is None:
            raise HttpError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a "
                "consistent list result. You can start a new list without the continue parameter.",
            )
        return snapshot


def route(path: str) -> Route:
    """The resource, namespace, name and subresource a Kubernetes REST path names (404 if none)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        api_version, rest = "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        api_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        raise HttpError(404, "NotFound", f"the server could not find the requested resource ({path})")
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    res = (
        next((r for r in RESOURCES.values() if r.path_name == rest[0] and r.api_version == api_version), None)
        if rest
        else None
    )
    if res is None or res.api_version != api_version or (namespace is not None and not res.namespaced) or len(rest) > 3:
        raise HttpError(404, "NotFound", f"the server could not find the requested resource ({path})")
    return Route(res, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that cut its connection (a stopping component cuts what it waits on) is not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def mock(self) -> MockApiServer:
        return self.server.mock  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self._hold(method, split.path):
            self.close_connection = True
            return
        try:
            self.mock.record(method, split.path, query, {k.lower(): v for k, v in self.headers.items()})
            where = route(split.path)
            if method == "GET" and not where.name and query.get("watch") in ("true", "1"):
                self._watch(where, query)
                return
            code, answer = _answer(self.mock, method, where, query, body, self.headers.get("Content-Type", ""))
        except HttpError as err:
            self._send(err.code, orjson.dumps(err.status()), err.headers)
        except StoreError as err:
            http = http_error(err)
            self._send(http.code, orjson.dumps(http.status()))
        else:
            self._send(code, answer if isinstance(answer, bytes) else orjson.dumps(answer))

    def _hold(self, method: str, path: str) -> bool:
        """Wait while a stall holds this request; False when the client left (or the server stops) meanwhile."""
        mock = self.mock
        if not mock.stalled(method, path):
            return True
        with mock.lock:
            state = mock.state
            state.held += 1
        try:
            while mock.stalled(method, path):
                if mock.stopping.is_set() or self._client_left() or mock.state is not state:
                    return False
                time.sleep(_TICK)
            return not self._client_left()
        finally:
            with mock.lock:
                state.held -= 1

    def _send(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    # --- watch ---

    def _watch(self, where: Route, query: dict[str, str]) -> None:
        mock = self.mock
        with mock.lock:
            state, faults = mock.state, mock.state.faults
            fail = faults.watch_failures > 0
            if fail:
                faults.watch_failures -= 1
        if fail:
            raise HttpError(faults.watch_failure_code, "ServiceUnavailable", "the server is not ready")
        stream = _WatchFeed(state.memory, where, query)
        first = stream.start()  # raises Gone as HTTP 410 only when the server is set to
        if isinstance(first, Gone) and mock.gone_as_status:
            raise http_error(first)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        key = id(self)
        marks = mock.watch_opened(key)
        try:
            if isinstance(first, Gone):
                self._chunk(_error_event(first))
            else:
                self._stream_events(stream, first, marks, float(query.get("timeoutSeconds") or 1800))
            self._chunk(b"")
        except (OSError, _Dropped):
            self.close_connection = True
        finally:
            mock.watch_acted(key, None)

    def _stream_events(self, stream: _WatchFeed, first: list[JSON], marks: Marks, timeout: float) -> None:
        """Send events until the timeout, a fault or the client leaves; raises _Dropped to cut the line."""
        mock = self.mock
        for event in first:
            self._chunk(orjson.dumps(event))
        deadline = time.monotonic() + timeout
        last_bookmark = time.monotonic()
        while time.monotonic() < deadline and not mock.stopping.is_set() and not self._client_left():
            if mock.stalled("", ""):  # the whole server stalls: nothing more on the line
                time.sleep(_TICK)
                continue
            now = mock.watch_marks()
            if now[DROP] != marks[DROP]:
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                raise _Dropped
            if now[EXPIRE] != marks[EXPIRE]:  # what happened before the expiry is sent first
                for event in stream.poll(0):
                    self._chunk(orjson.dumps(event))
                self._chunk(_error_event(Gone("too old resource version (compacted)")))
                return
            interval = mock.bookmark_interval
            due = interval is not None and time.monotonic() - last_bookmark >= interval
            try:
                if stream.bookmarks and (now[BOOKMARK] != marks[BOOKMARK] or due):
                    events, last_bookmark = stream.bookmark(), time.monotonic()
                else:
                    events = stream.poll(0 if now != marks else _TICK)
            except Gone as err:
                self._chunk(_error_event(err))
                return
            for event in events:
                self._chunk(orjson.dumps(event))
            if now != marks:
                marks = now
                mock.watch_acted(id(self), marks)

    def _client_left(self) -> bool:
        """The client closed its end (a watch it no longer reads): stop serving it."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            gone: bool = self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            gone = True
        if gone:
            self.close_connection = True
        return gone

    def _chunk(self, data: bytes) -> None:
        """One chunk of the chunked body; an event is a JSON line. Empty data ends the body."""
        if data:
            data += b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class _Dropped(Exception):
    """The watch connection was cut on purpose."""


class _WatchFeed:
    """The events one watch request sends, read from the MemoryStore's history (filtered by scope)."""

    def __init__(self, memory: MemoryStore, where: Route, query: dict[str, str]) -> None:
        self.memory, self.where = memory, where
        self.version = query.get("resourceVersion", "")
        self.bookmarks = query.get("allowWatchBookmarks") == "true"
        text = query.get("labelSelector", "")
        self.selector = parse_label_selector_string(text) if text.strip() else None

    def start(self) -> list[JSON] | Gone:
        """Initial events: none from a version; the current objects as ADDED from none or "0"."""
        res = self.where.res
        if self.version in ("", "0"):
            items, self.version = self.memory.list(res.plural, self.where.namespace, self.selector)
            return [{"type": "ADDED", "object": item} for item in items]
        try:
            self.memory.watch(res.plural, self.version)
        except Gone as err:
            return err
        return []

    def poll(self, wait: float) -> list[JSON]:
        """The events after the last one sent, waiting up to `wait` for one."""
        events = []
        # The memory store's selector watch sends what the API server's does (a pod leaving it as DELETED).
        for event in self.memory.watch(self.where.res.plural, self.version, timeout=wait, selector=self.selector):
            self.version = event.object["metadata"]["resourceVersion"]
            if self._in_scope(event.object):
                events.append({"type": event.type, "object": event.object})
        return events

    def bookmark(self) -> list[JSON]:
        """The events not sent yet, then a BOOKMARK at the store's latest version (read first, so that
        every event up to it is among those sent)."""
        latest = current_version(self.memory)
        events = self.poll(0)
        self.version = max(self.version, latest, key=int)
        res = self.where.res
        mark = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"resourceVersion": self.version}}
        return [*events, {"type": "BOOKMARK", "object": mark}]

    def _in_scope(self, obj: JSON) -> bool:
        namespace = self.where.namespace
        return not namespace or obj["metadata"].get("namespace") == namespace


def current_version(memory: MemoryStore) -> str:
    """The store's latest resource version, from a list that matches nothing (cheap)."""
    return memory.list("leases", namespace="\x00mock-no-namespace")[1]


def _error_event(err: StoreError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": http_error(err).status()})


# --- non-watch requests ---


def _answer(
    mock: MockApiServer, method: str, where: Route, query: dict[str, str], body: bytes, content_type: str
) -> tuple[int, JSON | bytes]:
    memory, res = mock.state.memory, where.res
    doc = _body(body) if body else None
    if not where.name:
        if method == "GET":
            return 200, _list(mock, where, query)
        if method == "POST":
            return 201, memory.create(_for_write(where, doc))
        raise HttpError(405, "MethodNotAllowed", f"{method} is not allowed on a collection")
    namespace = where.namespace or ""
    sub = where.subresource
    if method == "GET" and not sub:
        return 200, memory.get(res.plural, where.name, namespace)
    if method == "PUT" and sub in ("", "status"):
        obj = _for_update(where, doc)
        return 200, memory.update_status(obj) if sub else memory.update(obj)
    if method == "PATCH" and sub in ("", "status"):
        kind = content_type.split(";")[0].strip()
        if kind not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            raise HttpError(415, "UnsupportedMediaType", f"the mock serves merge patches, not {content_type!r}")
        strategic = kind == "application/strategic-merge-patch+json"
        if strategic and not res.builtin:
            raise HttpError(415, "UnsupportedMediaType", f"strategic merge patch is not supported for {res.kind}")
        return 200, memory.patch(res.plural, where.name, namespace, _object(doc), sub, strategic=strategic)
    if method == "DELETE" and not sub:
        grace = (doc or {}).get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        memory.delete(res.plural, where.name, namespace, None if grace is None else int(grace))
        return 200, _success()
    if method == "POST" and res.plural == "pods" and sub in ("binding", "eviction"):
        return 201, _pod_subresource(mock, where, sub, _object(doc))
    raise HttpError(404, "NotFound", f"{method} {res.plural}/{sub or where.name} is not served")


def _list(mock: MockApiServer, where: Route, query: dict[str, str]) -> bytes:
    """One page of a list; later pages come from the snapshot the first page took (consistent)."""
    limit = int(query.get("limit") or 0)
    token = query.get("continue", "")
    if token and query.get("resourceVersion", "0") != "0":  # as the API server's storage answers it
        raise HttpError(400, "BadRequest", "specifying resource version is not allowed when using continue")
    snapshot = mock.take_continue(token) if token else _snapshot(mock, where, query)
    end = snapshot.offset + limit if limit > 0 else len(snapshot.items)
    page = snapshot.items[snapshot.offset : end]
    meta: JSON = {"resourceVersion": snapshot.version}
    if end < len(snapshot.items):
        meta["continue"] = mock.new_continue(_Snapshot(snapshot.items, snapshot.version, end))
        meta["remainingItemCount"] = len(snapshot.items) - end
    res = where.res
    items = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in page]
    return orjson.dumps({"apiVersion": res.api_version, "kind": f"{res.kind}List", "metadata": meta, "items": items})


def _snapshot(mock: MockApiServer, where: Route, query: dict[str, str]) -> _Snapshot:
    """The whole matching list at the latest version; reused while nothing changes (a watch cache)."""
    memory = mock.state.memory
    text = query.get("labelSelector", "")
    version = current_version(memory)
    key = (where.res.plural, where.namespace, text, version)
    cached = mock.state.last_list
    if cached is not None and cached[0] == key:
        return _Snapshot(cached[1], version, 0)
    selector = parse_label_selector_string(text) if text.strip() else None
    items, version = memory.list(where.res.plural, where.namespace, selector)
    mock.state.last_list = ((where.res.plural, where.namespace, text, version), items)
    return _Snapshot(items, version, 0)


def _pod_subresource(mock: MockApiServer, where: Route, sub: str, doc: JSON) -> JSON:
    namespace = where.namespace or ""
    if sub == "binding":
        target = doc.get("target") or {}
        if doc.get("kind") != "Binding" or not target.get("name"):
            raise HttpError(400, "BadRequest", "a Binding with a target node name is expected")
        uid = (doc.get("metadata") or {}).get("uid") or ""
        mock.state.memory.bind(namespace, where.name, str(target["name"]), str(uid))
        return _success()
    if doc.get("kind") != "Eviction" or doc.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
        raise HttpError(400, "BadRequest", "a policy/v1 Eviction is expected")
    mock.state.memory.get("pods", where.name, namespace)  # NotFound first, as the server
    blocked = mock.state.faults.evictions_blocked
    if blocked:
        raise HttpError(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
            {"causes": [{"reason": "DisruptionBudget", "type": "DisruptionBudget", "message": blocked}]},
        )
    preconditions = (doc.get("deleteOptions") or {}).get("preconditions") or {}
    mock.state.memory.evict(namespace, where.name, str(preconditions.get("uid") or ""))
    return _success()


def _for_write(where: Route, doc: JSON | None) -> JSON:
    """The body of a create or update, checked against the URL as the API server does."""
    obj = _object(doc)
    if obj.get("kind") != where.res.kind:
        raise HttpError(400, "BadRequest", f"the body kind {obj.get('kind')!r} is not {where.res.kind}")
    meta = obj.get("metadata") or {}
    if where.res.namespaced:
        if not where.namespace:
            raise HttpError(404, "NotFound", f"{where.res.plural} are created inside a namespace")
        if meta.get("namespace") and meta["namespace"] != where.namespace:
            raise HttpError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        obj["metadata"] = {**meta, "namespace": where.namespace}
    return obj


def _for_update(where: Route, doc: JSON | None) -> JSON:
    obj = _for_write(where, doc)
    if (obj.get("metadata") or {}).get("name") != where.name:
        raise HttpError(400, "BadRequest", "the name of the object does not match the name on the URL")
    return obj


def _body(raw: bytes) -> JSON:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise HttpError(400, "BadRequest", f"malformed JSON body: {err}") from None
    return _object(doc)


def _object(doc: Any) -> JSON:
    if not isinstance(doc, dict):
        raise HttpError(400, "BadRequest", "the body must be a JSON object")
    return doc


def _success() -> JSON:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", help="a file of JSON objects, one a line, created before serving")
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=5.0,
        help="seconds between BOOKMARK events on open watches, as a real server sends them so that "
        "watchers of quiet kinds keep a fresh resourceVersion (0: none)",
    )
    args = parser.parse_args(argv)
    memory = MemoryStore(SystemClock())
    if args.load:
        with open(args.load, "rb") as lines:
            memory.add_many(orjson.loads(line) for line in lines if line.strip())
    with MockApiServer(memory, bookmark_interval=args.bookmark_interval or None) as server:
        print(server.url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin


if __name__ == "__main__":
    main()
