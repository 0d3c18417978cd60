"""The web app over a real loopback server: the document, its stream, read-only routes, the live source."""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.dashboard import app
from kai_scheduler.dashboard.feed import Feed
from kai_scheduler.dashboard.sources import LiveSource
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.store.interface import JSON, StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.dashboard import serving
from tests.dashboard.scenarios import CLUSTER


@pytest.fixture
def server() -> Iterator[tuple[Feed, int]]:
    feed = Feed()
    srv = app.Server(app.create(feed), "127.0.0.1", 0)
    srv.start()
    try:
        yield feed, srv.port
    finally:
        srv.stop()


def _status(port: int, path: str, method: str = "GET") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request(method, path)
    status = conn.getresponse().status
    conn.close()
    return status


def test_state_is_503_until_the_first_picture_then_the_published_bytes(server: tuple[Feed, int]) -> None:
    feed, port = server
    assert _status(port, "/api/state") == 503
    feed.publish({"queues": [], "now": 1.0})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5) as reply:
        assert orjson.loads(reply.read()) == {"queues": [], "now": 1.0, "version": 1}


def test_the_page_and_its_files_are_served_from_the_package_and_nothing_writes(server: tuple[Feed, int]) -> None:
    _, port = server
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
        page = reply.read().decode()
    assert 'src="static/dashboard.js"' in page and "http" not in page.split("<body>")[1]  # no CDN
    for name in ("dashboard.js", "dashboard.css", "favicon.svg"):
        assert _status(port, f"/static/{name}") == 200
    for path in ("/", "/api/state", "/api/stream"):
        assert _status(port, path, "POST") == 405
    assert _status(port, "/api/timeline") == 204  # no simulation here: no content, not an error


def test_the_stream_sends_each_new_version_within_a_second(server: tuple[Feed, int]) -> None:
    feed, port = server
    feed.publish({"n": 1})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/api/stream")
    reply = conn.getresponse()
    assert reply.getheader("Content-Type", "").startswith("text/event-stream")

    def next_state() -> dict[str, object]:
        lines = []
        while True:
            line = reply.fp.readline()
            if line == b"\n" and lines:
                break
            lines.append(line)
        data = next(line for line in lines if line.startswith(b"data: "))
        doc: dict[str, object] = orjson.loads(data[len(b"data: ") :])
        return doc

    assert next_state() == {"n": 1, "version": 1}
    started = time.monotonic()
    feed.publish({"n": 2})
    assert next_state() == {"n": 2, "version": 2}
    assert time.monotonic() - started < 1.0
    conn.close()


def test_live_source_rebuilds_only_after_the_watched_cluster_moved() -> None:
    from kai_scheduler import scenario as scenarios

    clock = ManualClock(1_767_225_600.0)
    store = MemoryStore(clock)
    store.add_many(scenarios.loads(CLUSTER, "cluster.yaml").objects)
    feed = Feed()
    source = LiveSource(store, load_config(None), feed, clock=clock)
    assert source.refresh(force=True)
    assert not source.refresh()  # nothing moved: no build, no new version
    assert feed.version == 1
    store.create({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "new"}, "spec": {}})
    assert source.refresh()
    assert "new" in [q["name"] for q in orjson.loads(feed.current()[1])["queues"]]


def test_an_embedded_dashboard_serves_the_scenario(tmp_path: Path) -> None:
    with serving.embedded(tmp_path, CLUSTER, cycles=1) as served:
        doc = served.state()
        assert {q["name"] for q in doc["queues"]} == {"org", "research", "vision", "nlp", "serving"}
        with pytest.raises(urllib.error.HTTPError):
            served.get("nothing-here")


class Forbidden(StoreError):
    reason = "Forbidden"


class _NoEvents(MemoryStore):
    """A cluster whose events this reader may not list (a kubeconfig without that right)."""

    def list(
        self, resource: str, namespace: str | None = None, selector: object = None, **kw: Any
    ) -> tuple[list[JSON], str]:
        if resource == "events":
            raise Forbidden('events is forbidden: User "viewer" cannot list resource "events"')
        return super().list(resource, namespace, selector, **kw)  # type: ignore[arg-type]


def test_events_that_cannot_be_read_are_a_note_and_the_rest_is_shown() -> None:
    from kai_scheduler import scenario as scenarios

    clock = ManualClock(1_767_225_600.0)
    store = _NoEvents(clock)
    store.add_many(scenarios.loads(CLUSTER, "cluster.yaml").objects)
    feed = Feed()
    assert LiveSource(store, load_config(None), feed, clock=clock).refresh(force=True)
    doc = orjson.loads(feed.current()[1])
    assert doc["notes"] == [
        'recent decisions: cannot read events: events is forbidden: User "viewer" cannot list resource "events"'
    ]
    assert len(doc["queues"]) == 5 and doc["decisions"] == []


def test_the_server_stops_promptly_while_a_stream_is_open() -> None:
    feed = Feed()
    feed.publish({"n": 1})
    srv = app.Server(app.create(feed), "127.0.0.1", 0)
    srv.start()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("GET", "/api/stream")
    reply = conn.getresponse()
    assert reply.readline() == b"event: state\n"  # the stream is open and sending
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < app.GRACE + 3
    conn.close()


def test_an_embedded_dashboard_of_a_sharded_scenario_shows_every_pool(tmp_path: Path) -> None:
    """Each shard schedules its pool; the picture is the whole cluster: both pools' queues and nodes."""
    text = (Path(__file__).parents[1] / "scenarios" / "shards" / "two-pools.yaml").read_text(encoding="utf-8")
    with serving.embedded(tmp_path, text, cycles=2) as served:
        doc = served.state()
        assert {q["name"] for q in doc["queues"]} == {"qa", "qu"}
        assert set(doc["nodes"]["name"]) == {"a1", "u1"}


def _pooled_cluster() -> MemoryStore:
    """The dashboard scenario's cluster (no node-pool labels) and a queue of node pool a100."""
    from kai_scheduler import scenario as scenarios

    store = MemoryStore(ManualClock(1_767_225_600.0))
    store.add_many(scenarios.loads(CLUSTER, "cluster.yaml").objects)
    pool = {"kai.scheduler/node-pool": "a100"}
    spec = {"resources": {"gpu": {"quota": 8, "limit": -1, "overQuotaWeight": 1}}}
    store.create(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "a100-team", "labels": pool},
            "spec": spec,
        }
    )
    return store


def test_a_live_view_of_one_pool_names_the_other_pools_it_leaves_out() -> None:
    """On a cluster whose nodes are all in pools the default view (objects without the label) is nearly empty:
    the page says which pools exist and how to show one."""
    store = _pooled_cluster()
    feed = Feed()
    assert LiveSource(store, load_config(None), feed).refresh(force=True)
    doc = orjson.loads(feed.current()[1])
    assert "a100-team" not in {q["name"] for q in doc["queues"]}
    assert doc["notes"] == [
        "showing the node pool of objects without kai.scheduler/node-pool; other node pools have queues too: "
        "'a100' (kai dashboard --partition-label-value POOL shows one)"
    ]
    pooled = load_config({"flags": {"partition-label-value": "a100"}})
    assert LiveSource(store, pooled, feed).refresh(force=True)
    doc = orjson.loads(feed.current()[1])
    assert [q["name"] for q in doc["queues"]] == ["a100-team"]
    assert doc["notes"] == [
        "showing node pool 'a100'; other node pools have queues too: (no kai.scheduler/node-pool) "
        "(kai dashboard --partition-label-value POOL shows one)"
    ]


def test_a_live_view_of_a_cluster_without_pools_has_no_pool_note() -> None:
    from kai_scheduler import scenario as scenarios

    store = MemoryStore(ManualClock(1_767_225_600.0))
    store.add_many(scenarios.loads(CLUSTER, "cluster.yaml").objects)
    feed = Feed()
    assert LiveSource(store, load_config(None), feed).refresh(force=True)
    assert orjson.loads(feed.current()[1])["notes"] == []
