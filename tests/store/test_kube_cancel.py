"""`KubeStore.cancel` and `close` against an API server that does not answer (the mock's `stall`): what is in
flight fails at once, nothing new goes out until `resume`, the rate limiter's wait ends, and `close` returns
within its timeout with a watch still waiting for its answer."""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.runtime.fence import Fenced, NotLeading
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.kube import CLOSE_TIMEOUT, KubeStore
from kai_scheduler.store.kube_http.errors import Cancelled, Unavailable
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.timing import RealTiming
from tests.store.conftest import KUBE_TEST_OPTIONS, MakeStore
from tests.store.mock_apiserver import MockApiServer


def in_thread(call: Callable[[], object]) -> tuple[threading.Thread, list[BaseException | object]]:
    """Run `call` in a daemon thread; the list gets its result or its exception."""
    out: list[BaseException | object] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as err:
            out.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def wait_held(server: MockApiServer, count: int = 1) -> None:
    deadline = time.monotonic() + 10
    while server.held < count:
        assert time.monotonic() < deadline, "the request did not reach the server"
        time.sleep(0.01)


def test_cancel_fails_the_requests_in_flight_at_once_and_refuses_new_ones(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    store = make_store()
    store.list("pods")  # a connection in the pool already: the cut reaches pooled ones too
    kube_server.stall()
    get, got = in_thread(lambda: store.list("pods"))
    update, updated = in_thread(
        lambda: store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})
    )
    wait_held(kube_server, 2)
    started = time.monotonic()
    assert store.cancel() >= 2
    get.join(2)
    update.join(2)
    assert time.monotonic() - started < 1.0
    for out in (got, updated):
        assert len(out) == 1 and isinstance(out[0], Unavailable), out
        assert "cancelled: the client is shutting down" in str(out[0])
    with pytest.raises(Unavailable, match="get Pod a/p: cancelled"):
        store.get("pods", "p", "a")
    kube_server.resume()
    store.resume()
    assert store.list("pods")[0] == []
    assert not kube_server.memory.list("configmaps")[0]  # the cut create never reached the objects


def test_cancel_wakes_a_request_waiting_for_the_rate_limiter() -> None:
    interrupt = threading.Event()
    limiter = RateLimiter(0.1, 1, RealTiming(), interrupt)
    limiter.acquire()  # the burst
    timer = threading.Timer(0.2, interrupt.set)
    timer.start()
    started = time.monotonic()
    limiter.acquire()  # would wait 10 s
    assert time.monotonic() - started < 2.0
    timer.join()


def test_close_returns_within_its_timeout_with_a_watch_waiting_for_its_answer(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    store = make_store()
    version = store.list("pods")[1]
    kube_server.stall()
    watcher, out = in_thread(lambda: list(store.watch("pods", version, timeout=30)))
    wait_held(kube_server)
    with store._lock:  # this store's readers, waiting for the answer
        readers = [stream._thread for stream in store._streams.get("pods", [])]
    assert readers, out
    started = time.monotonic()
    store.close()
    assert time.monotonic() - started < CLOSE_TIMEOUT + 0.5
    for reader in readers:  # its request was cut: it ends (close does not wait past its timeout for it)
        reader.join(5)
    assert not any(t.is_alive() for t in readers)
    watcher.join(CLOSE_TIMEOUT + 1)
    assert not watcher.is_alive()
    assert len(out) == 1 and (out[0] == [] or isinstance(out[0], StoreError)), out
    store.close()  # again: nothing to do


def test_a_connection_refused_by_the_cancellation_is_cancelled_even_once_the_store_is_resumed(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stopping process resumes its store for the Lease releases while its watches may still be reconnecting: a
    connection the cancellation refused is Cancelled (said at debug level by its loop), not "cannot reach the
    API server" (a warning), whenever the request looks. Here it looks only after the store was resumed."""
    store = make_store()  # no connection yet: the request opens one
    sender = store.transport.connections.curl()
    assert sender is not None
    send = sender.send

    def cancelled_while_connecting(*args: Any, **kwargs: Any) -> Any:
        store.cancel()  # after the request's own checks: its connection is refused
        try:
            return send(*args, **kwargs)
        finally:
            store.resume()  # before the request looks at why it failed

    monkeypatch.setattr(sender, "send", cancelled_while_connecting)
    with pytest.raises(Cancelled, match="get Pod a/p: cancelled: the client is shutting down"):
        store.get("pods", "p", "a")


def test_a_watch_cut_by_the_cancellation_says_so_at_debug_level_even_once_the_store_is_resumed(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The reader decides how loud to be after the request failed: by then a stopping process may have resumed
    its store for the Lease releases. A Cancelled error is the shutdown's business (one line of its own)."""
    store = make_store()
    version = store.list("pods")[1]
    opened = store.transport.open_stream
    calls: list[str] = []

    def cut_once(path: str, *args: object, **kwargs: object) -> object:
        calls.append(path)
        if len(calls) == 1:
            raise Cancelled("watch Pod: cancelled: the client is shutting down")  # store not cancelled (resumed)
        return opened(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store.transport, "open_stream", cut_once)
    with caplog.at_level(logging.DEBUG, logger="kai_scheduler.store.kube_watch"):
        list(store.watch("pods", version, timeout=0.2))
        deadline = time.monotonic() + 10
        while len(calls) < 2 and time.monotonic() < deadline:  # the reader reconnected after its backoff
            time.sleep(0.01)
    # This watch's lines only: a watch of another test's store, ending in this worker, may log meanwhile.
    broke = [r for r in caplog.records if r.getMessage().startswith("watch Pod broke")]
    assert broke and all(r.levelno == logging.DEBUG for r in broke), [(r.levelname, r.getMessage()) for r in broke]
    store.close()


def test_a_request_cut_in_flight_is_cancelled_even_if_the_store_is_resumed_before_it_looks(
    kube_server: MockApiServer, make_store: MakeStore
) -> None:
    """A stopping process cuts, then resumes its store for the Lease releases; a request cut in between is
    Cancelled (the loops say it at debug level), not "cannot reach the API server" (a warning)."""
    store = make_store()
    store.list("pods")
    kube_server.stall()
    # A create: urllib3 would retry a cut GET on a new connection once resumed (the next cut or close ends it).
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}
    create, created = in_thread(lambda: store.create(config_map))
    wait_held(kube_server)
    store.cancel()
    store.resume()  # at once: the cut request has not looked yet (it waits for the interpreter's lock)
    create.join(5)
    kube_server.resume()
    assert len(created) == 1 and isinstance(created[0], Cancelled), created
    assert store.list("pods")[0] == []  # resumed: requests go out again


class _Queued:
    """The store's sender takes a request only once `go` is set: the request waits there, past the transport's and
    the fence's checks, as one waiting for its connection (opening it, its TLS handshake) does."""

    def __init__(self, store: KubeStore, monkeypatch: pytest.MonkeyPatch) -> None:
        sender = store.transport.connections.curl()
        assert sender is not None
        self.waiting = threading.Event()
        self.go = threading.Event()
        send = sender.send

        def held_send(*args: Any, **kwargs: Any) -> Any:
            self.waiting.set()
            assert self.go.wait(10)
            return send(*args, **kwargs)

        monkeypatch.setattr(sender, "send", held_send)


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}}


def test_a_write_queued_before_a_cut_and_sent_after_it_is_refused_at_the_wire(
    kube_server: MockApiServer, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease lapse cuts the requests in flight and resumes the store at once; a write that waited for a
    connection meanwhile is refused when its bytes would go out, not sent late on a fresh connection."""
    store = make_store()
    queued = _Queued(store, monkeypatch)
    create, created = in_thread(lambda: store.create(config_map("late")))
    assert queued.waiting.wait(5)
    store.cancel()
    store.resume()
    queued.go.set()
    create.join(5)
    assert len(created) == 1 and isinstance(created[0], Cancelled), created
    assert not kube_server.memory.list("configmaps")[0]  # never sent
    assert store.create(config_map("next"))["metadata"]["name"] == "next"  # a new request goes out


def test_a_fenced_write_queued_while_leading_and_sent_after_the_lapse_is_refused_at_the_wire(
    kube_server: MockApiServer, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fence's leadership is checked again when the bytes go out, even before the lapse's cut."""
    store = make_store()
    queued = _Queued(store, monkeypatch)
    fenced = Fenced(store)
    leadership = _Flag()
    fenced.leadership = leadership
    create, created = in_thread(lambda: fenced.create(config_map("late")))
    assert queued.waiting.wait(5)
    leadership.is_leader = False
    queued.go.set()
    create.join(5)
    assert len(created) == 1 and isinstance(created[0], NotLeading), created
    assert "create ConfigMap a/late: not sent: this process no longer leads" in str(created[0])
    assert not kube_server.memory.list("configmaps")[0]
    assert store.create(config_map("unfenced"))["metadata"]["name"] == "unfenced"  # the store's own writes go


class _Flag:
    is_leader = True


def test_a_fenced_write_whose_connection_opens_across_the_lapse_is_refused_at_the_wire(
    kube_server: MockApiServer, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check comes after the connection is open: a write whose connection took past the lapse to open is
    refused, not sent on it."""
    store = make_store()  # no connection yet: the write opens one
    fenced = Fenced(store)
    leadership = _Flag()
    fenced.leadership = leadership
    connecting, go = threading.Event(), threading.Event()
    add_descriptor = store.cancellation.add_descriptor

    def slow_connect(fd: int) -> bool:  # the socket exists, its connection is not made yet
        connecting.set()
        assert go.wait(10)
        return add_descriptor(fd)

    monkeypatch.setattr(store.cancellation, "add_descriptor", slow_connect)
    create, created = in_thread(lambda: fenced.create(config_map("late")))
    assert connecting.wait(5)
    leadership.is_leader = False
    go.set()
    create.join(5)
    assert len(created) == 1 and isinstance(created[0], NotLeading), created
    assert not kube_server.memory.list("configmaps")[0]


def test_cancel_cuts_a_tls_handshake_the_server_does_not_answer() -> None:
    """A server that accepts the connection and never answers the TLS handshake holds it up to the connect
    timeout; the socket is the store's to cut from the start of the handshake."""
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepted by the kernel, never answered
        store = KubeStore(
            ApiClient(Configuration(host=f"https://127.0.0.1:{listener.getsockname()[1]}")),
            dataclasses.replace(KUBE_TEST_OPTIONS, connect_timeout=30.0),
        )
        try:
            get, got = in_thread(lambda: store.get("pods", "p", "a"))
            deadline = time.monotonic() + 10
            while store.cancellation.live < 1:  # the socket, registered before it connects
                assert time.monotonic() < deadline, "no connection made"
                time.sleep(0.01)
            listener.settimeout(10)
            accepted, _ = listener.accept()  # connected: its handshake waits for an answer
            started = time.monotonic()
            assert store.cancel() == 1
            get.join(5)
            assert time.monotonic() - started < 2.0
            assert len(got) == 1 and isinstance(got[0], Cancelled), got
            accepted.close()
        finally:
            store.close()
