"""The API store's watches: long-running streams, reconnects, backoff, bookmarks, 410 Gone and the cache.

Faults come from the mock API server (dropped connections, ERROR 410, 5xx answers); the assertions look at
the events handed over and at the watch requests the server received.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.cache import ObjectCache
from kai_scheduler.store.interface import Gone, WatchEvent
from kai_scheduler.store.kube import KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.store.conftest import FakeTiming, MakeStore
from tests.store.mock_apiserver import MockApiServer
from tests.store.test_memory_store import pod, podgroup


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def collect(store: KubeStore, version: str, count: int, timeout: float = 5.0) -> list[WatchEvent]:
    """`count` pod events after `version`, over as many watch calls as it takes (each continues)."""
    events: list[WatchEvent] = []
    deadline = time.monotonic() + timeout
    while True:
        batch = list(store.watch("pods", version, timeout=0.2 if count else 0.0))
        if batch:
            events += batch
            version = batch[-1].object["metadata"]["resourceVersion"]
        if len(events) >= count:
            return events
        assert time.monotonic() < deadline, f"got {summary(events)}"


def synced_names(cache: ObjectCache) -> list[str]:
    cache.sync()
    return [p.meta.name for p in cache.objects("pods")]


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"].get("name", "")) for e in events]


def test_a_caller_that_continues_reuses_one_watch_request(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    _, version = store.list("pods")
    for i in range(3):
        store.create(pod(f"p{i}"))
        events = collect(store, version, 1)
        assert summary(events) == [("ADDED", f"p{i}")]
        version = events[-1].object["metadata"]["resourceVersion"]
    assert len(kube_server.watch_requests()) == 1
    request = kube_server.watch_requests()[0]
    assert request.query["allowWatchBookmarks"] == "true"
    assert request.query["timeoutSeconds"] == "300"


def test_the_cache_keeps_up_over_one_watch(kube_server: MockApiServer, make_store: MakeStore) -> None:
    cache = ObjectCache(make_store(), ["pods"])
    cache.sync()
    want: list[str] = []
    for i in range(1, 4):
        kube_server.memory.create(pod(f"p{i}"))
        want.append(f"p{i}")
        eventually(lambda: synced_names(cache) == want)
    kube_server.memory.delete("pods", "p2", "team-a")
    eventually(lambda: synced_names(cache) == ["p1", "p3"])
    assert len(kube_server.watch_requests()) == 1
    assert len(kube_server.list_requests()) == 1


def test_a_dropped_connection_reconnects_from_the_last_event(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    _, version = store.list("pods")
    assert collect(store, version, 0) == []
    store.create(pod("p1"))
    first = collect(store, version, 1)
    p1_version = first[0].object["metadata"]["resourceVersion"]
    kube_server.drop_watches()
    store.create(pod("p2"))
    store.create(pod("p3"))
    assert summary(collect(store, p1_version, 2)) == [("ADDED", "p2"), ("ADDED", "p3")]
    requests = kube_server.watch_requests()
    assert len(requests) == 2
    assert requests[1].query["resourceVersion"] == p1_version


def test_a_server_timeout_ends_the_request_and_the_stream_goes_on(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    store = make_store(watch_timeout_seconds=1)
    _, version = store.list("pods")
    assert collect(store, version, 0) == []
    eventually(lambda: len(kube_server.watch_requests()) >= 2, timeout=3.0)  # the server ended the first
    store.create(pod("late"))
    assert summary(collect(store, version, 1)) == [("ADDED", "late")]


def test_failed_watch_requests_back_off_exponentially_and_reset_after_success(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0, watch_backoff_initial=0.5, watch_backoff_max=4.0)
    _, version = store.list("pods")
    kube_server.fail_watches(4, code=503)
    store.create(pod("p1"))
    assert summary(collect(store, version, 1)) == [("ADDED", "p1")]
    assert timing.sleeps == [0.5, 1.0, 2.0, 4.0]
    assert len(kube_server.watch_requests()) == 5
    kube_server.drop_watches()  # a working connection that breaks starts the backoff over
    eventually(lambda: len(kube_server.watch_requests()) == 6)
    assert timing.sleeps == [0.5, 1.0, 2.0, 4.0, 0.5]


@pytest.mark.parametrize("as_status", [False, True], ids=["ERROR event", "HTTP 410"])
def test_a_version_older_than_the_servers_history_is_gone(
    kube_server: MockApiServer, make_store: MakeStore, clock: ManualClock, as_status: bool
) -> None:
    kube_server.reset(MemoryStore(clock, history_size=3))
    kube_server.gone_as_status = as_status
    store = make_store()
    first = store.create(pod("p0"))
    for i in range(1, 5):
        store.create(pod(f"p{i}"))
    with pytest.raises(Gone, match=r"too old resource version|predates the kept history"):
        store.watch("pods", first["metadata"]["resourceVersion"])  # at the call, not on iteration


def test_gone_on_an_open_watch_comes_after_the_events_before_it(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    store = make_store()
    _, version = store.list("pods")
    assert collect(store, version, 0) == []
    store.create(pod("p1"))
    kube_server.expire_watches()  # sends what came before, then ERROR 410
    assert summary(list(store.watch("pods", version, timeout=1.0))) == [("ADDED", "p1")]
    position = kube_server.memory.get("pods", "p1", "team-a")["metadata"]["resourceVersion"]
    with pytest.raises(Gone, match="too old resource version"):
        store.watch("pods", position, timeout=1.0)
    store.create(pod("p2"))
    assert summary(collect(store, position, 1)) == [("ADDED", "p2")]  # a fresh stream from the same place


def test_the_cache_relists_when_its_watch_is_gone(kube_server: MockApiServer, make_store: MakeStore) -> None:
    cache = ObjectCache(make_store(), ["pods"])
    kube_server.memory.create(pod("p1"))
    cache.sync()  # LIST
    cache.sync()  # opens the watch
    kube_server.expire_watches()
    kube_server.memory.create(pod("p2"))
    eventually(lambda: synced_names(cache) == ["p1", "p2"])
    assert len(kube_server.list_requests()) == 2  # the first LIST and the relist after Gone


def test_bookmarks_move_the_version_forward(kube_server: MockApiServer, make_store: MakeStore) -> None:
    store = make_store()
    _, version = store.list("pods")
    assert collect(store, version, 0) == []
    other = store.create(podgroup("pg"))  # moves the server's version, not the pods'
    eventually(lambda: len(kube_server.watch_requests()) == 1)
    kube_server.send_bookmarks()
    marks = collect(store, version, 1)
    assert [e.type for e in marks] == ["BOOKMARK"]
    mark = marks[0].object["metadata"]["resourceVersion"]
    assert int(mark) >= int(other["metadata"]["resourceVersion"]) > int(version)
    kube_server.drop_watches()  # the reconnect resumes from the bookmark, not from the last pod event
    store.create(pod("p"))
    assert summary(collect(store, mark, 1)) == [("ADDED", "p")]
    assert [r.query["resourceVersion"] for r in kube_server.watch_requests()] == [version, mark]


def test_the_cache_follows_a_bookmark_without_a_new_request(kube_server: MockApiServer, make_store: MakeStore) -> None:
    kube_server.bookmark_interval = 0.05
    cache = ObjectCache(make_store(), ["pods"])
    cache.sync()
    cache.sync()
    kube_server.memory.create(podgroup("pg"))
    time.sleep(0.3)  # a few bookmarks go by
    for _ in range(5):
        cache.sync()
    kube_server.memory.create(pod("p"))
    eventually(lambda: synced_names(cache) == ["p"])
    assert len(kube_server.watch_requests()) == 1
    assert len(kube_server.list_requests()) == 1


def test_watch_from_now_asks_the_server_for_its_version(kube_server: MockApiServer, make_store: MakeStore) -> None:
    kube_server.memory.create(pod("old"))
    store = make_store()
    assert list(store.watch("pods", "")) == []
    resolve = [r for r in kube_server.requests if not r.is_watch]
    assert [(r.path, r.query) for r in resolve] == [("/api/v1/pods", {"limit": "1"})]


def watch_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("watch /"))


def test_streams_are_capped_per_resource_and_closed_with_the_store(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    before = watch_threads()
    store = make_store(watch_streams_per_resource=2)
    versions = [store.create(pod(f"p{i}"))["metadata"]["resourceVersion"] for i in range(4)]
    for version in versions:
        list(store.watch("pods", version))
    eventually(lambda: watch_threads() == before + 2)
    store.close()
    eventually(lambda: watch_threads() == before)


def test_a_throttled_watch_request_is_retried_after_the_servers_delay(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    timing = FakeTiming()
    store = make_store(timing, qps=0)
    _, version = store.list("pods")
    store.create(pod("p"))
    kube_server.throttle(2, retry_after="2", watches=True)
    assert summary(collect(store, version, 1)) == [("ADDED", "p")]
    assert timing.sleeps == [2.0, 2.0]
    assert len(kube_server.watch_requests()) == 3


def test_a_watch_request_throttled_past_the_stores_retries_waits_the_servers_delay_before_the_next(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    """Once the store gives up on a 429 (its retries spent), the watch's own backoff (0.5 s) is not shorter than the
    Retry-After the server gave: the next request waits what the server asked."""
    timing = FakeTiming()
    store = make_store(timing, qps=0, max_retries=1, watch_backoff_initial=0.5)
    _, version = store.list("pods")
    store.create(pod("p"))
    kube_server.throttle(3, retry_after="2", watches=True)
    assert summary(collect(store, version, 1)) == [("ADDED", "p")]
    assert timing.sleeps == [2.0, 2.0, 2.0]  # the store's retry, the watch's wait after it gave up, the store's
    assert len(kube_server.watch_requests()) == 4


def test_two_callers_watching_from_one_version_at_once_each_get_every_event(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    """Components of one process share the store: after a restart they list at the same version and watch from
    it at once. Each must get the events after that version, not the ones another caller left it."""
    store = make_store()
    _, version = store.list("pods")
    results: list[list[WatchEvent]] = []
    lock = threading.Lock()

    def watch_once() -> None:
        events = list(store.watch("pods", version, timeout=3.0))
        with lock:
            results.append(events)

    threads = [threading.Thread(target=watch_once) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # both callers waiting for their first event
    store.create(pod("p0"))
    eventually(lambda: len(results) >= 1)
    store.create(pod("p1"))
    for thread in threads:
        thread.join(5.0)
    assert [summary(events)[0] for events in results] == [("ADDED", "p0"), ("ADDED", "p0")]
