"""ObjectCache's typed view: in key order, and up to date after every kind of change."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store import cache as cache_module
from kai_scheduler.store.cache import OPTIONAL_RETRY, SCHEDULER_RESOURCES, ObjectCache
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, NotFound, StoreError
from kai_scheduler.store.keys import object_key
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
    assert names(cache) == ["n2", "n4"]  # asked again with nothing new: the same
    cache.objects("nodes").clear()  # a caller's list is its own
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


def test_a_few_changes_to_a_large_view_are_put_in_place() -> None:
    """Past a few changes the view is sorted again; below, each change goes in its place: both in key order."""
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node(f"n{i:02d}") for i in range(0, 60, 2)])
    cache = ObjectCache(store, ["nodes"])
    cache.sync()
    names(cache)
    view = cache._informers["nodes"].ordered
    for step in range(12):
        if step % 3 == 0:
            store.create(b.node(f"n{2 * step + 1:02d}"))  # a new key between two others
        elif step % 3 == 1:
            store.delete("nodes", f"n{2 * step:02d}")
        else:
            node = store.get("nodes", f"n{2 * step + 2:02d}")
            node["metadata"]["labels"] = {"step": str(step)}
            store.update(node)
        cache.sync()
        objects = cache.objects("nodes")
        assert [n.name for n in objects] == sorted(store_names(store))
        assert all(n is cache._informers["nodes"].items[n.name][1] for n in objects)
        assert cache._informers["nodes"].ordered is view, "a few changes sorted the whole view again"


def test_a_relist_parses_each_object_once_under_the_informers_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relisted batch comes keyed: nothing is keyed again, logged or marked changed one key at a time (the view
    is sorted again whole); an object whose version the view holds keeps its parsed object."""
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([b.node(f"n{i}") for i in range(5)])
    cache = ObjectCache(store, ["nodes"])
    keyed: list[JSON] = []

    def counted(obj: JSON) -> str:
        keyed.append(obj)
        return object_key(obj)

    monkeypatch.setattr(cache_module, "object_key", counted)
    cache.sync()
    informer = cache._informers["nodes"]
    assert not keyed and not informer.changed and not informer.log
    assert names(cache) == [f"n{i}" for i in range(5)]
    kept = cache.objects("nodes")[0]
    node = store.get("nodes", "n3")
    node["metadata"]["labels"] = {"changed": "yes"}
    store.update(node)
    cache.relist("nodes")
    cache.sync()
    assert not keyed
    objects = cache.objects("nodes")
    assert objects[0] is kept
    assert [n.meta.labels.get("changed") for n in objects] == [None, None, None, "yes", None]


def store_names(store: MemoryStore) -> list[str]:
    return [n["metadata"]["name"] for n in store.list("nodes")[0]]


class _NoDra(MemoryStore):
    """A cluster that does not serve resource.k8s.io/v1beta1 (off by default in Kubernetes 1.32)."""

    served = False
    lists = 0

    def list(
        self, resource: str, namespace: str | None = None, selector: Any = None, **kw: Any
    ) -> tuple[list[JSON], str]:
        if resource.startswith("resourceclaim") or resource in ("deviceclasses", "resourceslices"):
            self.lists += 1
            if not self.served:
                raise NotFound(f"the server could not find the requested resource ({resource})")
        return super().list(resource, namespace, selector, **kw)


def test_dra_kinds_the_cluster_does_not_serve_read_as_empty_and_are_asked_again_later() -> None:
    store = _NoDra(ManualClock(b.NOW))
    store.add_many([b.node("n1"), b.device_class()])
    cache = ObjectCache(store)
    cache.sync()
    assert names(cache) == ["n1"] and cache.objects("deviceclasses") == []
    asked = store.lists
    for _ in range(OPTIONAL_RETRY - 1):
        cache.sync()
    assert store.lists == asked  # not asked on every sync
    store.served = True
    cache.sync()
    cache.sync()
    assert [c.name for c in cache.objects("deviceclasses")] == ["gpu.nvidia.com"]


class _SlowPods(MemoryStore):
    """A server that takes its time over the pods' list: it answers once the queues were asked for (or, if they
    never are while it waits, after `patience` seconds), and says which happened."""

    patience = 5.0

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.queues_asked = threading.Event()
        self.pods_waited_for_queues: bool | None = None
        self.pod_lists = 0
        self.fail_pods = 0  # pod lists to refuse first

    def list(
        self, resource: str, namespace: str | None = None, selector: Any = None, **kw: Any
    ) -> tuple[list[JSON], str]:
        if resource == "queues":
            self.queues_asked.set()
        if resource == "pods":
            self.pod_lists += 1
            if self.fail_pods:
                self.fail_pods -= 1
                raise StoreError("connection refused")
            self.pods_waited_for_queues = self.queues_asked.wait(self.patience)
        return super().list(resource, namespace, selector, **kw)


def slow_pods_cluster() -> _SlowPods:
    store = _SlowPods(ManualClock(b.NOW))
    store.add_many([b.node("n1"), b.queue("q"), b.pod("p1", node="n1"), b.pod("p2")])
    return store


def test_in_a_component_process_the_pods_are_listed_while_the_other_first_lists_are_made() -> None:
    store = slow_pods_cluster()
    cache = ObjectCache(store, SCHEDULER_RESOURCES, informers=Informers(store, lists_ahead=True))
    cache.sync()
    assert store.pods_waited_for_queues is True  # the queues were listed while the pods' list ran
    assert [p.name for p in cache.objects("pods")] == ["p1", "p2"]
    assert [q.name for q in cache.objects("queues")] == ["q"]
    assert store.pod_lists == 1
    store.delete("pods", "p2", b.NAMESPACE)
    cache.sync()  # the watch from here, as before
    assert [p.name for p in cache.objects("pods")] == ["p1"] and store.pod_lists == 1


def test_without_lists_ahead_the_first_lists_are_made_one_by_one_in_order() -> None:
    store = slow_pods_cluster()
    store.patience = 0.2
    ObjectCache(store, SCHEDULER_RESOURCES).sync()
    assert store.pods_waited_for_queues is False


def test_a_pods_list_ahead_that_fails_is_made_again_by_the_sync_which_meets_its_error() -> None:
    store = slow_pods_cluster()
    store.fail_pods = 2
    cache = ObjectCache(store, SCHEDULER_RESOURCES, informers=Informers(store, lists_ahead=True))
    with pytest.raises(StoreError):
        cache.sync()  # the thread's list failed, then the sync's own
    assert store.pod_lists == 2
    cache.sync()
    assert [p.name for p in cache.objects("pods")] == ["p1", "p2"] and store.pod_lists == 3
