"""ObjectCache's typed view: in key order, and up to date after every kind of change."""

from __future__ import annotations

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.cache import ObjectCache
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b


def names(cache: ObjectCache) -> list[str]:
    return [n.name for n in cache.objects("nodes")]


def test_the_ordered_view_follows_adds_updates_and_deletes() -> None:
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node("n2"), b.node("n4")])
    cache = ObjectCache(store, ["nodes"])
    cache.sync()
    assert names(cache) == ["n2", "n4"]
    assert names(cache) == ["n2", "n4"]                # asked again with nothing new: the same
    cache.objects("nodes").clear()                     # a caller's list is its own
    assert names(cache) == ["n2", "n4"]
    store.add_many([b.node("n3"), b.node("n1")])
    cache.sync()
    assert names(cache) == ["n1", "n2", "n3", "n4"]
    store.delete("nodes", "n2")
    cache.sync()
    assert names(cache) == ["n1", "n3", "n4"]
    node = store.get("nodes", "n3")
    node["metadata"]["labels"] = {"changed": "yes"}
    store.update(node)
    cache.sync()
    assert [n.meta.labels.get("changed") for n in cache.objects("nodes")] == [None, "yes", None]
