"""A leader whose connection stalls: the lapse is noticed at the renew deadline while its renewal hangs, and
the component's writes are refused from then on (runtime/fence.py, runtime/leader.py `guard`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock, SystemClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.runtime import components
from kai_scheduler.runtime.fence import Fenced, NotLeading
from kai_scheduler.runtime.leader import LeaderConfig, LeaderElector
from kai_scheduler.runtime.options import ProcessOptions
from kai_scheduler.runtime.process import Process
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.memory import MemoryStore

NS, NAME = "kai-scheduler", "kai-scheduler"
FAST = LeaderConfig(lease_duration=0.8, renew_deadline=0.5, retry_period=0.1)


class Stalling:
    """A store whose requests hang, once `stalled` is set, until `healed` is."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.stalled = threading.Event()
        self.healed = threading.Event()

    def __getattr__(self, name: str) -> Any:
        if self.stalled.is_set():
            self.healed.wait(10)
        return getattr(self.store, name)


class Flag:
    def __init__(self, leading: bool) -> None:
        self.is_leader = leading


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def test_writes_are_refused_and_not_sent_once_the_component_does_not_lead() -> None:
    store = MemoryStore(ManualClock(parse_time("2026-01-01T00:00:00Z")))
    fenced = Fenced(store)
    fenced.create(config_map("before-election"))  # no leader election: every write goes
    fenced.leadership = Flag(True)
    fenced.create(config_map("leading"))
    fenced.leadership = Flag(False)
    with pytest.raises(NotLeading, match="create ConfigMap ns/late: not sent: this process no longer leads"):
        fenced.create(config_map("late"))
    with pytest.raises(NotLeading):
        fenced.evict("ns", "pod")
    with pytest.raises(NotLeading):
        fenced.bind("ns", "pod", "node")
    with pytest.raises(NotLeading):
        fenced.patch("configmaps", "leading", "ns", {"data": {"a": "b"}})
    with pytest.raises(NotLeading):
        fenced.delete("configmaps", "leading", "ns")
    assert sorted(c["metadata"]["name"] for c in fenced.list("configmaps", "ns")[0]) == ["before-election", "leading"]
    assert "data" not in fenced.get("configmaps", "leading", "ns")


def test_the_lapse_is_noticed_at_the_deadline_while_the_renewal_hangs() -> None:
    clock = SystemClock()
    stalling = Stalling(MemoryStore(clock))
    lapsed = threading.Event()
    elector = LeaderElector(stalling, NS, NAME, clock, identity="a", config=FAST, on_lapse=lapsed.set)
    stop = threading.Event()
    threads = [threading.Thread(target=f, args=(stop,), daemon=True) for f in (elector.run, elector.guard)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 5
        while not elector.is_leader and time.monotonic() < deadline:
            time.sleep(0.02)
        assert elector.is_leader
        stalling.stalled.set()
        started = time.monotonic()
        assert lapsed.wait(FAST.renew_deadline + 1.0), "the lapse was not noticed while the renewal hung"
        assert time.monotonic() - started <= FAST.renew_deadline + 0.3
        assert not stalling.healed.is_set()  # noticed by the guard, not by the hung attempt returning
    finally:
        stop.set()
        stalling.healed.set()
        for thread in threads:
            thread.join(5)


def test_each_component_writes_through_a_fence_its_elector_holds() -> None:
    store = MemoryStore(SystemClock())
    built = components.build(("binder", "podgrouper"), store, SystemClock(), CollectorRegistry())
    options = ProcessOptions(leader_elect=True, listen_address="127.0.0.1:0")
    process = Process(built, store, options, CollectorRegistry(), SystemClock())
    for component in built:
        assert component.fence is not None and component.fence.store is store
        assert component.fence.leadership is process.electors[component.name]


def test_the_components_of_a_process_share_informers_that_list_first_from_the_servers_cache_and_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[dict[str, Any]] = []
    real = components.Informers

    def recording(store: ClusterStore, **kwargs: Any) -> Any:
        made.append(kwargs)
        return real(store, **kwargs)

    monkeypatch.setattr(components, "Informers", recording)
    components.build(("binder", "podgrouper"), MemoryStore(SystemClock()), SystemClock(), CollectorRegistry())
    # one set for the process, long-running: client-go's first list, and the pods' list beside the others'
    assert made == [{"first_from_cache": True, "lists_ahead": True}]
