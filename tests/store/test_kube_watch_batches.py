"""A watch reader buffers the events that arrived together as one batch: one lock, one wake-up of the caller and
one note to the store's activity per batch, with the order, the resume position, error and overflow handling
of one event at a time."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kai_scheduler.store.interface import Gone, NotFound, StoreError
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_watch import WatchSettings, WatchStream, _batches


class _NoServer:
    """A transport whose watch request is refused for good: the reader thread ends at once, and the test feeds
    the stream's `_receive` itself."""

    class timing:  # stands in for the transport's Timing
        @staticmethod
        def now() -> float:
            return 0.0

    cancellation = Cancellation()

    def open_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotFound("watch Pod: the server does not serve it")


def stream(max_buffered: int = 100) -> tuple[WatchStream, list[int]]:
    notes: list[int] = []
    settings = WatchSettings(300, 30.0, 0.01, 0.1, max_buffered, strip_managed_fields=True)
    s = WatchStream(_NoServer(), "/api/v1/pods", "1", settings, what="watch Pod", on_event=lambda: notes.append(1))  # type: ignore[arg-type]
    s.join(2.0)
    return s, notes


def line(kind: str, name: str, rv: str) -> bytes:
    meta = {"name": name, "resourceVersion": rv, "managedFields": [{"manager": "x"}]}
    return orjson.dumps({"type": kind, "object": {"metadata": meta}})


def taken(s: WatchStream) -> list[tuple[str, str]]:
    with s._cond:
        return [(e.type, e.object["metadata"]["name"]) for e in s._events]


def test_a_batch_is_buffered_in_order_with_one_note() -> None:
    s, notes = stream()
    s._receive([line("ADDED", "a", "2"), line("MODIFIED", "a", "3"), line("ADDED", "b", "4")])
    assert taken(s) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b")]
    assert notes == [1]
    assert s._since == "4"
    assert all("managedFields" not in e.object["metadata"] for e in s._events)


def test_a_batch_of_bookmarks_moves_the_position_without_a_note() -> None:
    s, notes = stream()
    s._receive([line("BOOKMARK", "", "9")])
    assert notes == []
    assert s._since == "9"


def test_an_error_line_comes_after_the_events_before_it() -> None:
    s, notes = stream()
    gone = orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}})
    with pytest.raises(Gone):
        s._receive([line("ADDED", "a", "2"), gone, line("ADDED", "b", "3")])
    assert taken(s) == [("ADDED", "a")]
    assert s._since == "2"
    assert notes == [1]


def test_a_line_that_is_not_json_raises_after_the_events_before_it() -> None:
    s, _ = stream()
    with pytest.raises(StoreError, match="malformed event"):
        s._receive([line("ADDED", "a", "2"), b"{not json"])
    assert taken(s) == [("ADDED", "a")]


def test_a_malformed_event_is_skipped() -> None:
    s, _ = stream()
    s._receive([b'{"type": "ADDED", "object": {"metadata": {"name": "x"}}}', line("ADDED", "a", "2")])
    assert taken(s) == [("ADDED", "a")]


def test_a_batch_past_the_buffer_limit_fills_it_then_is_gone() -> None:
    s, _ = stream(max_buffered=2)
    with pytest.raises(Gone, match="over 2 events"):
        s._receive([line("ADDED", "a", "2"), line("ADDED", "b", "3"), line("ADDED", "c", "4")])
    assert taken(s) == [("ADDED", "a"), ("ADDED", "b")]


class _Body:
    chunked = False

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = [*chunks, b""]

    def read1(self, size: int) -> bytes:
        return self._chunks.pop(0)


def test_batches_are_the_complete_lines_of_each_chunk() -> None:
    body = _Body([b'{"a":1}\n{"b"', b':2}\n\n{"c":3}\n{"d":4}\n', b"  \n", b'{"e":5}'])
    assert list(_batches(body)) == [[b'{"a":1}'], [b'{"b":2}', b'{"c":3}', b'{"d":4}'], [b'{"e":5}']]  # type: ignore[arg-type]
