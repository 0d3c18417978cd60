"""`Process.shutdown` in a bounded time whatever the API server does, the Lease handed over on a graceful stop, and
nothing lost when in-flight work is abandoned (docs/components.md, "Stopping").

The processes run in this test process over the mock API server; its `stall` fault holds requests unanswered
as a server starved of CPU or stopped with SIGSTOP does. A shutdown runs in a thread joined with a timeout, so a
shutdown that does not end fails the test instead of hanging it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.runtime import components as builders
from kai_scheduler.runtime import process as runtime
from kai_scheduler.runtime.leader import LeaderConfig
from kai_scheduler.runtime.options import BinderOptions, GrouperOptions, ProcessOptions, SchedulerOptions
from kai_scheduler.runtime.process import Process, connect
from kai_scheduler.store.kube import KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.builders import node, queue
from tests.runtime.test_process import FAST, kubeconfig, pending_pod
from tests.store.mock_apiserver import MockApiServer

# Long enough that a lease that was not released cannot be taken within the test's waits, and that the leader
# still leads (renewed within the deadline) when its shutdown comes to the release.
LEADER = LeaderConfig(lease_duration=15, renew_deadline=10, retry_period=0.1)
NAMESPACE = "kai-system"
# The shutdown's own phases, and a margin for a loaded machine.
BOUND = runtime.STEP_GRACE + runtime.CANCEL_GRACE + runtime.RELEASE_TIMEOUT + 2.0


def make(config: str, names: tuple[str, ...] = builders.NAMES) -> Process:
    options = ProcessOptions(
        kubeconfig=config,
        listen_address="127.0.0.1:0",
        leader_elect=True,
        leader_elect_namespace=NAMESPACE,
        leader=LEADER,
    )
    store = connect(options)
    components = builders.build(
        names,
        store,
        SystemClock(),
        CollectorRegistry(),
        scheduler_options=SchedulerOptions(flags={"schedule_period": FAST}),
        binder_options=BinderOptions(reconcile_period=FAST),
        grouper_options=GrouperOptions(reconcile_period=FAST),
    )
    proc = Process(components, store, options, CollectorRegistry(), SystemClock())
    STORES[id(proc)] = store
    return proc


STORES: dict[int, KubeStore] = {}  # each process's store, closed after its shutdown


def shutdown(proc: Process, limit: float) -> float:
    """Shut down (and close the store); the seconds it took. Fails past `limit`."""
    started = time.monotonic()
    thread = threading.Thread(target=proc.shutdown, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"the shutdown did not end within {limit:g}s"
    seconds = time.monotonic() - started
    STORES.pop(id(proc)).close()
    return seconds


def holders(memory: MemoryStore) -> dict[str, str]:
    return {lease["metadata"]["name"]: lease["spec"]["holderIdentity"] for lease in memory.list("leases", NAMESPACE)[0]}


def leads(proc: Process, memory: MemoryStore) -> bool:
    ours = {e.name: e.identity for e in proc.electors.values()}
    return all(holders(memory).get(name) == identity for name, identity in ours.items())


def wait(condition: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


@pytest.fixture
def server() -> Iterator[MockApiServer]:
    memory = MemoryStore(SystemClock())
    memory.add_many([node("n1", gpus=0), queue("q"), pending_pod("p")])
    with MockApiServer(memory) as mock:
        try:
            yield mock
        finally:
            mock.resume()


def test_a_stopped_leader_hands_its_leases_to_a_standby_at_once(server: MockApiServer, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path, server.url)
    first, second = make(config), make(config)
    first.start()
    try:
        assert wait(lambda: leads(first, server.memory)), "the first process did not lead"
        second.start()
        assert wait(lambda: all(e.reachable for e in second.electors.values()))
        assert not leads(second, server.memory)
        shutdown(first, BOUND)
        stopped = time.monotonic()
        assert set(holders(server.memory).values()) <= {"", *(e.identity for e in second.electors.values())}
        assert wait(lambda: leads(second, server.memory), timeout=LEADER.lease_duration)
        handed_over = time.monotonic() - stopped
        # A released lease is taken at the standby's next attempt (retry period 0.1 s), not after its 15 s.
        assert handed_over < 3.0, handed_over
    finally:
        for proc in (first, second):
            proc.stop.set()
        shutdown(second, BOUND)


def test_the_shutdown_is_bounded_and_keeps_the_leases_when_the_api_server_stalls(
    server: MockApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proc = make(kubeconfig(tmp_path, server.url))
    proc.start()
    try:
        assert wait(lambda: leads(proc, server.memory))
        assert wait(lambda: server.memory.get("pods", "p", "team-a")["spec"].get("nodeName") == "n1")
        server.stall()
        assert wait(lambda: server.held >= len(proc.electors), timeout=10)  # every elector waits on a renewal
        with caplog.at_level(logging.INFO, logger="kai_scheduler.runtime"):
            seconds = shutdown(proc, BOUND + 5)
    finally:
        proc.stop.set()
    assert seconds <= BOUND, seconds
    gave_up = [r for r in caplog.records if r.getMessage().startswith("shutdown: gave up waiting for the API server")]
    assert len(gave_up) == 1
    line = gave_up[0]
    assert "Leases not released, they expire after 15s" in line.getMessage()
    assert sorted(line.leases_kept) == sorted(e.name for e in proc.electors.values())  # type: ignore[attr-defined]
    assert line.connections_cut >= 1  # type: ignore[attr-defined]
    cut = [
        r
        for r in caplog.records
        if r.name.startswith(("kai_scheduler.runtime", "kai_scheduler.store"))
        and r.levelno >= logging.WARNING
        and "cancelled" in r.getMessage()
    ]
    assert not cut, [r.getMessage() for r in cut]  # the loops, electors, watches cut do not each say so
    server.resume()
    assert set(holders(server.memory).values()) == {next(iter(proc.electors.values())).identity}


def test_a_bind_abandoned_at_shutdown_is_done_by_the_next_leader_once(server: MockApiServer, tmp_path: Path) -> None:
    """The binder's bind is in flight when the process stops and the server does not answer it: the process
    stops within the bound, the request is cut before the server applied it, and the next leader binds the pod,
    with the one BindRequest the scheduler wrote."""
    config = kubeconfig(tmp_path, server.url)
    server.stall("POST", r"/pods/p/binding$")
    first = make(config)
    first.start()
    try:
        assert wait(lambda: server.held == 1, timeout=30), "the binder did not try to bind"
        assert len(server.memory.list("bindrequests")[0]) == 1
        seconds = shutdown(first, BOUND + 5)
    finally:
        first.stop.set()
    assert seconds <= BOUND, seconds
    assert not server.memory.get("pods", "p", "team-a")["spec"].get("nodeName")  # abandoned, not applied
    server.resume()
    assert set(holders(server.memory).values()) == {""}  # released: the binder had stopped once its bind was cut
    second = make(config)
    second.start()
    try:
        assert wait(lambda: server.memory.get("pods", "p", "team-a")["spec"].get("nodeName") == "n1")
        requests = server.memory.list("bindrequests")[0]
        assert len(requests) == 1, requests
        assert wait(lambda: (server.memory.list("bindrequests")[0][0].get("status") or {}).get("phase") == "Succeeded")
    finally:
        second.stop.set()
        shutdown(second, BOUND)


def test_cancel_when_stuck_says_what_it_abandoned_before_the_work_it_freed_ends(
    server: MockApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kai fake-nodes`' guard: the cut lets the stuck loop end at once, and the process may exit as soon as the
    context does; the warning line must already be written by then."""
    store = connect(ProcessOptions(kubeconfig=kubeconfig(tmp_path, server.url)))
    cut = threading.Event()

    def cancel() -> int:
        cut.set()  # the loop waiting on the API server is freed here...
        time.sleep(0.3)  # ...while the guard has yet to say so
        return 1

    monkeypatch.setattr(store, "cancel", cancel)
    stop = threading.Event()
    try:
        with caplog.at_level(logging.WARNING, logger="kai_scheduler.runtime.process"):
            with runtime.cancel_when_stuck(stop, store, grace=0.1):
                stop.set()
                assert cut.wait(5.0), "the requests were not cut after the grace"
            assert "shutdown: gave up waiting for the API server" in caplog.text
    finally:
        store.close()
