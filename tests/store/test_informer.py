"""Shared informers: one LIST and watch per resource, every subscription its own share, relists after Gone."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store import collector
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informer, Informers
from kai_scheduler.store.interface import JSON, NotFound, Selector, WatchEvent
from kai_scheduler.store.keys import meta_key, object_key, split_key
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


class Counting(MemoryStore):
    """A memory store that counts the LISTs and watch drains asked of it."""

    def __init__(self, *, history_size: int = 1000, refuse_lists: int = 0) -> None:
        super().__init__(ManualClock(b.NOW), history_size=history_size)
        self.lists = 0
        self.cached: list[bool] = []  # each LIST's `cached`
        self.watches = 0
        self.refuse_lists = refuse_lists

    def list(
        self, resource: str, namespace: str | None = None, selector: Any = None, **kw: Any
    ) -> tuple[list[JSON], str]:
        self.lists += 1
        self.cached.append(kw.get("cached", False))
        if self.refuse_lists:
            self.refuse_lists -= 1
            raise NotFound(f"the server could not find the requested resource ({resource})")
        return super().list(resource, namespace, selector)

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None, **kw: Any
    ) -> Any:
        self.watches += 1
        return super().watch(resource, resource_version, timeout, selector, **kw)


def relabel(store: MemoryStore, name: str, value: str) -> None:
    node = store.get("nodes", name)
    node["metadata"]["labels"] = {"v": value}
    store.update(node)


def label(obj: JSON | None) -> str | None:
    return None if obj is None else obj["metadata"].get("labels", {}).get("v")


def test_the_key_helper() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "p"}}) == "ns/p"
    assert object_key({"metadata": {"name": "n1"}}) == "n1"
    assert meta_key({"namespace": "", "name": "n1"}) == "n1"
    assert split_key("ns/p") == ("ns", "p")
    assert split_key("n1") == ("", "n1")


def test_one_list_and_one_watch_serve_every_subscription() -> None:
    store = Counting()
    store.add_many([b.node("n1"), b.node("n2")])
    informers = Informers(store)
    assert informers.informer("nodes") is informers.informer("nodes")
    first, second = informers.subscribe("nodes"), informers.subscribe("nodes")
    assert sorted(key for key, _ in first.take().changes) == ["n1", "n2"]
    relabel(store, "n1", "a")
    batch = first.take()
    assert not batch.relisted and [(k, label(o)) for k, o in batch.changes] == [("n1", "a")]
    whole = second.take()  # its first take: everything, as it is now, with no LIST of its own
    assert whole.relisted and sorted((k, label(o)) for k, o in whole.changes) == [("n1", "a"), ("n2", None)]
    relabel(store, "n2", "b")
    assert [k for k, _ in first.take().changes] == ["n2"]
    assert [k for k, _ in second.take().changes] == ["n2"]  # taken by the first's sync, kept for the second
    assert store.lists == 1
    assert first.take().version == second.take().version == informers.informer("nodes").version


def test_a_key_changed_many_times_is_handed_over_once_and_a_deletion_is_kept() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node("n1"), b.node("n2")])
    subscription = Informer(store, "nodes").subscribe()
    subscription.take()
    for value in ("a", "b", "c"):
        relabel(store, "n1", value)
    store.delete("nodes", "n2")
    store.create(b.node("n2"))
    relabel(store, "n2", "new")
    store.delete("nodes", "n1")
    assert [(k, label(o)) for k, o in subscription.take().changes] == [("n1", None), ("n2", None), ("n2", "new")]


def test_a_subscription_that_does_not_take_holds_one_entry_per_object() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node("n1")])
    informer = Informer(store, "nodes")
    reader, idle = informer.subscribe(), informer.subscribe()
    reader.take()
    idle.take()
    for step in range(50):
        relabel(store, "n1", str(step))
        reader.take()
    assert len(idle._pending) == 1
    assert [(k, label(o)) for k, o in idle.take().changes] == [("n1", "49")]


def test_a_watch_gone_relists_and_every_subscription_gets_the_whole_resource() -> None:
    store = Counting(history_size=2)
    store.add_many([b.node("n1"), b.node("n2"), b.node("n3")])
    informer = Informer(store, "nodes", first_from_cache=True)
    changes, raw = Changes(informer), informer.subscribe()
    changes.poll()
    raw.take()
    store.delete("nodes", "n2")
    for value in ("a", "b", "c"):  # more events than the history keeps: the watch is Gone
        relabel(store, "n1", value)
    polled = changes.poll()
    assert store.cached == [True, False]  # the first list may come from a cache; the relist may not be behind
    assert polled[0] == ("n2", None)  # the deletion the relist found
    assert sorted((k, label(o)) for k, o in polled[1:]) == [("n1", "c"), ("n3", None)]
    again = raw.take()
    assert again.relisted and sorted(k for k, _ in again.changes) == ["n1", "n3"]
    relabel(store, "n3", "d")
    assert [k for k, _ in changes.poll()] == ["n3"]  # watching again from the relist's version


def test_a_refused_list_leaves_the_informer_unlisted_and_the_next_take_lists() -> None:
    store = Counting(refuse_lists=1)
    store.add_many([b.node("n1")])
    subscription = Informer(store, "nodes", first_from_cache=True).subscribe()
    with pytest.raises(NotFound):
        subscription.take()
    batch = subscription.take()
    assert batch.relisted and [k for k, _ in batch.changes] == ["n1"]
    assert store.cached == [True, True]  # still the first list


def test_a_relist_asked_for_is_not_taken_from_a_cache() -> None:
    store = Counting()
    store.add_many([b.node("n1")])
    informer = Informer(store, "nodes", first_from_cache=True)
    informer.sync()
    informer.relist_next()
    informer.sync()
    assert store.cached == [True, False]


def test_an_index_follows_adds_updates_deletes_and_relists() -> None:
    store = MemoryStore(ManualClock(b.NOW), history_size=2)
    store.add_many([b.node("n1", labels={"v": "a"}), b.node("n2", labels={"v": "a"})])
    informer = Informer(store, "nodes")
    subscription = informer.subscribe()
    subscription.take()
    informer.add_index("v", lambda obj: [v] if (v := label(obj)) else [])
    informer.add_index("v", informer._index_funcs["v"])  # the same index again: nothing changes
    with pytest.raises(ValueError, match="another index"):
        informer.add_index("v", lambda obj: [])
    assert informer.index("v", "a") == {"n1", "n2"}
    relabel(store, "n1", "b")
    subscription.take()
    assert (informer.index("v", "a"), informer.index("v", "b")) == ({"n2"}, {"n1"})
    store.delete("nodes", "n2")
    subscription.take()
    assert informer.index("v", "a") == set()
    for value in ("c", "d", "e"):  # Gone: relisted
        relabel(store, "n1", value)
    subscription.take()
    assert informer.relists == 2
    assert (informer.index("v", "b"), informer.index("v", "e")) == (set(), {"n1"})
    assert informer.get("n1") is not None and informer.keys() == ["n1"]


def test_a_label_selected_informer_is_its_own_watch() -> None:
    store = Counting()
    store.add_many([b.node("n1", labels={"pool": "x"}), b.node("n2")])
    informers = Informers(store)
    selected = informers.subscribe("nodes", "pool=x")
    every = informers.subscribe("nodes")
    assert [k for k, _ in selected.take().changes] == ["n1"]
    assert sorted(k for k, _ in every.take().changes) == ["n1", "n2"]
    assert len(informers.started()) == 2


def test_bookmarks_move_the_version_only() -> None:
    class Bookmarking(MemoryStore):
        def watch(self, *args: Any, **kw: Any) -> Any:
            events = list(super().watch(*args, **kw))
            return iter([*events, WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "999"}})])

    store = Bookmarking(ManualClock(b.NOW))
    store.add_many([b.node("n1")])
    informer = Informer(store, "nodes")
    subscription = informer.subscribe()
    subscription.take()
    batch = subscription.take()
    assert batch.changes == [] and batch.version == "999" == informer.version


def test_each_change_comes_with_the_object_as_the_consumer_last_saw_it() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node("n1"), b.node("n2")])
    relabel(store, "n1", "seen")
    changes = Changes(Informer(store, "nodes"))
    assert [(k, before) for k, before, _ in changes.poll_updates()] == [("n1", None), ("n2", None)]
    for value in ("a", "b"):
        relabel(store, "n1", value)
    store.delete("nodes", "n2")
    store.create(b.node("n2"))
    store.create(b.node("n3"))
    updates = [
        (k, label(before) if before else "-", label(now) if now else "-") for k, before, now in changes.poll_updates()
    ]
    assert updates == [("n1", "seen", "b"), ("n2", None, "-"), ("n2", None, None), ("n3", "-", None)]


def test_after_a_relist_each_object_comes_with_what_the_consumer_had_seen_not_what_it_missed() -> None:
    store = Counting(history_size=2)
    store.add_many([b.node("n1"), b.node("n2")])
    relabel(store, "n1", "seen")
    informer = Informer(store, "nodes")
    slow, fast = Changes(informer), Changes(informer)
    slow.poll_updates()
    fast.poll_updates()
    relabel(store, "n1", "missed")
    fast.poll_updates()  # the informer takes the change in: pending for the slow reader
    store.delete("nodes", "n2")
    for value in ("x", "y", "z"):  # more events than the history keeps: the watch is Gone
        relabel(store, "n1", value)
    fast.poll_updates()
    assert store.lists == 2
    updates = sorted(
        (k, label(before) if before else "-", label(now) if now else "-") for k, before, now in slow.poll_updates()
    )
    assert updates == [("n1", "seen", "z"), ("n2", None, "-")]


def test_a_one_shot_readers_informers_list_consistently_and_a_components_first_list_may_come_from_a_cache() -> None:
    store = Counting()
    store.add_many([b.node("n1")])
    Informers(store).informer("nodes").sync()
    Informers(store, first_from_cache=True).informer("nodes").sync()
    assert store.cached == [False, True]


def test_a_component_processs_first_list_is_frozen_out_of_the_collector_before_it_is_back_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = Counting(history_size=2)
    store.add_many([b.node("n1")])
    freezes: list[bool] = []  # per freeze: whether the collector was on
    monkeypatch.setattr(collector, "_service", True)
    monkeypatch.setattr(collector.gc, "freeze", lambda: freezes.append(gc.isenabled()))
    informer = Informer(store, "nodes", first_from_cache=True)
    informer.sync()
    assert freezes == [False] and gc.isenabled()
    informer.relist_next()
    informer.sync()  # a relist replaces what was listed: not start-up data, collected as usual
    assert freezes == [False]
