"""The shortcuts of a request's path: a name's path segment, the send-time check's context, the cancellation's
flag. Each gives what the longer way gave."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from kai_scheduler.store import interface
from kai_scheduler.store.kube import path_segment
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_http.errors import Cancelled
from kai_scheduler.store.metrics import REQUEST_BUCKETS, Histogram, Requests


@pytest.mark.parametrize(
    "text",
    [
        "",
        "pod-1",
        "team-a.example",
        "Under_score~tilde",
        "a/b",
        "a b",
        "100%",
        "a:b",
        "a?b#c",
        "é",
        "a\nb",
        "pod-1\n",
        "+",
        "a,b=c",
    ],
)
def test_a_path_segment_is_what_quote_makes(text: str) -> None:
    assert path_segment(text) == quote(text, safe="")


def test_the_send_check_is_the_innermost_blocks_and_gone_after_it() -> None:
    calls: list[str] = []
    interface.check_before_sending()  # none: nothing runs
    with interface.checked_when_sent(lambda: calls.append("outer")):
        with pytest.raises(RuntimeError), interface.checked_when_sent(lambda: calls.append("inner")):
            interface.check_before_sending()
            raise RuntimeError("the write failed")
        interface.check_before_sending()
    interface.check_before_sending()
    assert calls == ["inner", "outer"]


def test_a_cancellation_refuses_until_resumed_and_a_request_from_before_the_cut_for_good() -> None:
    cancellation = Cancellation()
    before = cancellation.cuts
    cancellation.check("get x", before)
    cancellation.cancel()
    for since in (before, cancellation.cuts):
        with pytest.raises(Cancelled, match=r"^get x: cancelled"):
            cancellation.check("get x", since)
    assert cancellation.cancelled.is_set()
    cancellation.resume()
    assert not cancellation.cancelled.is_set()
    cancellation.check("get x", cancellation.cuts)
    with pytest.raises(Cancelled):
        cancellation.check("get x", before)


def test_a_requests_time_lands_in_the_bucket_the_histogram_puts_it_in() -> None:
    """`Requests.record` counts a duration as `Histogram.observe` does (a bound belongs to its own bucket)."""
    requests = Requests("h")
    expected = Histogram(REQUEST_BUCKETS)
    for seconds in (0.0, 0.005, 0.0051, 0.1, 1.0, 59.9, 60.0, 60.1, 1e9):
        requests.record("GET", 200, seconds)
        expected.observe(seconds)
    latency = next(m for m in requests.collect() if m.name == "rest_client_request_duration_seconds")
    buckets = [(s.labels["le"], s.value) for s in latency.samples if s.name.endswith("_bucket")]
    assert buckets == expected.buckets()
    total = next(s.value for s in latency.samples if s.name.endswith("_sum"))
    assert total == expected.sum
