"""Long-running watches for `KubeStore`: one background reader per stream, events buffered for the caller.

`ClusterStore.watch` is a drain: it hands over the events after a version and returns. Over HTTP a fresh
watch per call would cost a request and a round trip on every cache sync, so a `WatchStream` keeps one
watch request open per (resource, position) and a thread reads it into a buffer; `take` hands over what is
buffered and moves the stream's position to the last version handed over. A caller that continues from
that position (as `ObjectCache` does) reuses the stream; any other version opens a new one.

The reader reconnects from the last version it received when the server ends the request (timeoutSeconds)
or the connection breaks, after exponential backoff for failures (never sooner than the Retry-After of a 429
the store gave up retrying). BOOKMARK events are passed on: they move
the version forward without an object change. `410 Gone`, as an HTTP status or an ERROR event, ends the
stream: the caller gets Gone after the events received before it, and relists.

Over HTTP the caller cannot know which events are still on the wire: a fresh stream therefore waits (up to
`settle` seconds) for the server's answer and the backlog that follows it at once, and an existing stream
hands over what has arrived (the rest comes with the next call).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import orjson
import urllib3

from kai_scheduler.store.interface import Cancelled, Gone, Invalid, NotFound, StoreError, WatchEvent
from kai_scheduler.store.kube_http.errors import error_from_status
from kai_scheduler.store.kube_http.retry import backoff_delays, parse_retry_after
from kai_scheduler.store.kube_http.transport import Transport

log = logging.getLogger(__name__)

_EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
# Errors a reconnect cannot fix: the caller has to hear of them (Gone means relist).
_FINAL_ERRORS: Final = (Gone, Invalid, NotFound)
_BURST_GAP: Final = 0.02  # a fresh stream's backlog is complete once nothing arrives for this long
_SHORT_WATCH: Final = 1.0  # a watch request that ends empty sooner than this is treated as a failure


@dataclass(frozen=True, slots=True)
class WatchSettings:
    timeout_seconds: int  # the server ends each watch request after this; the reader reconnects
    read_margin: float  # socket read timeout beyond timeout_seconds: a dead connection shows
    backoff_initial: float
    backoff_max: float
    max_buffered: int  # a caller this far behind is told Gone rather than growing the buffer
    strip_managed_fields: bool


class WatchStream:
    """One watch of one resource from `since`, read by a daemon thread; see the module docstring."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        since: str,
        settings: WatchSettings,
        *,
        what: str = "",
        on_event: Callable[[], None] | None = None,
        selector: str = "",
    ) -> None:
        self.path = path
        self.selector = selector  # a label selector in query form ("" = every object)
        self.what = what or f"watch {path}"  # names the stream in errors and log lines: "watch Pod"
        self._on_event = on_event  # told of the object events (not bookmarks) buffered, once per batch
        self.position = since  # the version of the last event handed to a caller
        self._transport = transport
        self._settings = settings
        self._cond = threading.Condition()
        self._events: deque[WatchEvent] = deque()
        self._error: StoreError | None = None
        self._fresh = True
        self._closed = threading.Event()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._since = since  # the version of the last event received: where a reconnect resumes
        self._opened = False  # the current request was answered (resets the backoff)
        self._answered = False  # some request was answered (a fresh stream's backlog follows)
        self.requests = 0  # watch requests sent so far (reconnects show as more than one)
        self._thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)
        self._thread.start()

    # --- the caller's side ---

    def take(self, timeout: float, settle: float) -> list[WatchEvent]:
        """The buffered events, oldest first; waits up to `timeout` for the first. Raises the stream's final
        error once the events before it are handed over.

        A fresh stream first waits up to `settle` for the server to answer, then briefly for the backlog
        that follows the answer, so that a caller sees the events that were there when it asked."""
        with self._cond:
            if self._fresh:
                deadline = time.monotonic() + timeout
                self._cond.wait_for(lambda: self._answered or self._ready(), settle)
                self._cond.wait_for(self._ready, max(deadline - time.monotonic(), _BURST_GAP))
                if self._events:
                    self._wait_for_burst_end(settle)
                self._fresh = False
            else:
                self._cond.wait_for(self._ready, timeout)
            if not self._events:
                if self._error is not None:
                    raise self._error
                return []
            events = list(self._events)
            self._events.clear()
        self.position = events[-1].object["metadata"]["resourceVersion"]
        return events

    def close(self) -> None:
        """Stop the reader: unblock its read by shutting the socket, then let the thread end."""
        self._closed.set()
        response = self._response
        if response is not None:
            # ValueError: urllib3's answer when the response already let its connection go (the reader is done)
            with contextlib.suppress(OSError, ValueError):
                response.shutdown()
        with self._cond:
            self._cond.notify_all()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _ready(self) -> bool:
        return bool(self._events) or self._error is not None or self._closed.is_set()

    def _wait_for_burst_end(self, settle: float) -> None:
        """Keep waiting while the backlog is still arriving (bounded by `settle`)."""
        budget = settle
        while budget > 0 and self._error is None:
            seen = len(self._events)
            self._cond.wait(_BURST_GAP)
            budget -= _BURST_GAP
            if len(self._events) == seen:
                return

    # --- the reader thread ---

    def _run(self) -> None:
        """Follow watch requests until closed or a final error; back off between failed attempts.

        The backoff restarts from `backoff_initial` once a request was answered (a connection that
        breaks after working is one failure, not the next step of a series). A request that the server
        ends at once with nothing in it counts as a failure too, so a misbehaving proxy cannot make the
        reader spin."""
        timing = self._transport.timing
        delays = self._delays()
        while not self._closed.is_set():
            self._opened = False
            started = timing.now()
            cut, cuts = False, self._transport.cancellation.cuts
            asked = 0.0  # the Retry-After of the answer that ended the attempt
            try:
                if self._follow() > 0 or timing.now() - started >= _SHORT_WATCH:
                    delays = self._delays()
                    continue
                problem = "the server ended the watch at once"
            except _FINAL_ERRORS as err:
                self._fail(err)
                return
            except (StoreError, urllib3.exceptions.HTTPError, OSError) as err:
                problem = str(err)
                cut = isinstance(err, Cancelled)
                if isinstance(err, StoreError) and err.retry_after is not None:
                    asked = min(parse_retry_after(err.retry_after), self._transport.limits.max_retry_after)
            if self._closed.is_set():
                return
            opened = self._opened
            if opened:
                delays = self._delays()
            delay = max(next(delays), asked)  # a 429 the store gave up on: not sooner than the server asked
            # Cut by a stopping process: not worth a warning. The error or the cancel count says so even once the
            # store was resumed (for the Lease releases) before this line.
            cancellation = self._transport.cancellation
            cut = cut or cancellation.cuts != cuts or cancellation.cancelled.is_set()
            # While the server is known unreachable the store said so in one line (kube_http.reachability): each
            # watch's attempts are not worth one more each. An open watch that broke is news, not yet a problem.
            if cut or self._transport.reachability.down:
                level = logging.DEBUG
            elif opened:
                level = logging.INFO
            else:
                level = logging.WARNING
            log.log(level, "%s broke (%s); reconnecting in %.2fs", self.what, problem, delay)
            timing.sleep(delay, self._closed)

    def _delays(self) -> Iterator[float]:
        return backoff_delays(self._settings.backoff_initial, self._settings.backoff_max)

    def _follow(self) -> int:
        """One watch request from `self._since` until the server ends it (returns the number of events)
        or it breaks (raises); `self._since` follows every event received, so the next request resumes
        after the last one."""
        settings = self._settings
        query = [
            ("watch", "true"),
            ("resourceVersion", self._since),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(settings.timeout_seconds)),
        ]
        if self.selector:
            query.append(("labelSelector", self.selector))
        self.requests += 1
        response = self._transport.open_stream(
            self.path, query, settings.timeout_seconds + settings.read_margin, self.what
        )
        self._opened = True
        self._response = response
        with self._cond:
            self._answered = True
            self._cond.notify_all()
        if self._closed.is_set():  # closed while the request was on its way: `close` did not see it
            with contextlib.suppress(OSError, ValueError):
                response.shutdown()
        received, complete = 0, False
        try:
            for lines in _batches(response):
                if self._closed.is_set():
                    break
                self._receive(lines)
                received += len(lines)
            else:
                complete = True
        finally:
            self._response = None
            if complete:
                response.release_conn()  # the body was read to its end: the connection can be reused
            else:
                response.close()
        return received

    def _receive(self, lines: list[bytes]) -> None:
        """Buffer the events of the lines that arrived together, under one lock and with one wake-up of the caller
        and of the store's activity; `self._since` moves to the last one buffered. A line that is an error (or
        not JSON) raises once the events before it are buffered."""
        events: list[WatchEvent] = []
        try:
            for line in lines:
                event = self._decode(line)
                if event is not None:
                    events.append(event)
        finally:
            if events:
                self._buffer(events)

    def _decode(self, line: bytes) -> WatchEvent | None:
        """One event line as an event (None: malformed, skipped with a warning); raises on an ERROR event."""
        try:
            doc = orjson.loads(line)
            kind, obj = doc["type"], doc["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as err:
            raise StoreError(f"{self.what}: malformed event {line[:200]!r}: {err}") from None
        if kind == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            raise error_from_status(int(status.get("code") or 500), status, self.what)
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if kind not in _EVENT_TYPES or not isinstance(metadata, dict) or "resourceVersion" not in metadata:
            log.warning("%s: skipping a malformed event %r", self.what, line[:200])
            return None
        if self._settings.strip_managed_fields:
            metadata.pop("managedFields", None)
        return WatchEvent(kind, obj)

    def _buffer(self, events: list[WatchEvent]) -> None:
        """Append the events (as many as fit under `max_buffered`; then Gone) and wake the caller once."""
        with self._cond:
            room = self._settings.max_buffered - len(self._events)
            taken = events[: max(room, 0)]
            self._events.extend(taken)
            if taken:
                self._cond.notify_all()
        if taken:
            self._since = str(taken[-1].object["metadata"]["resourceVersion"])
            if self._on_event is not None and any(e.type != "BOOKMARK" for e in taken):
                self._on_event()
        if len(taken) < len(events):
            raise Gone(f"{self.what}: over {self._settings.max_buffered} events not taken; relist")

    def _fail(self, err: StoreError) -> None:
        log.info("%s ended: %s", self.what, err)
        with self._cond:
            self._error = err
            self._cond.notify_all()


def _batches(response: urllib3.BaseHTTPResponse) -> Iterator[list[bytes]]:
    """The newline-separated JSON events of a watch body, as the chunks arrive: the complete lines of each chunk
    together (never an empty list)."""
    chunks: Iterator[bytes] = response.read_chunked() if response.chunked else iter(lambda: response.read1(65536), b"")
    pending = b""
    for chunk in chunks:
        pending += chunk
        if b"\n" not in pending:
            continue
        *complete, pending = pending.split(b"\n")
        lines = [line for line in complete if line.strip()]
        if lines:
            yield lines
    if pending.strip():
        yield [pending]
