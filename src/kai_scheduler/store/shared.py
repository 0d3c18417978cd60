"""`SharedReads`: a `ClusterStore` over a `MemoryStore` whose reads hand out the stored objects, not copies.

In the embedded cluster every component reads the one store; with copies each kept its own JSON of what it
watches (three to five copies of every pod and PodGroup of a large scenario). A component given this store must
never change an object it read, nor any part of one: it builds new dicts for what it writes (the memory store
copies what it is given). The test suite runs the memory store in its checking mode, which names any stored
object a reader changed (`MemoryStore.changed_by_readers`). Writes go to the store unchanged, and what they
return is the stored object too, under the same rule: the status controllers keep the PodGroups and queues
they wrote, and a private copy of each was a PodGroup's worth of memory per job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kai_scheduler.store.interface import JSON, ClusterStore, Selector, WatchEvent
from kai_scheduler.store.memory import MemoryStore


class SharedReads:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        return self.store.get(resource, name, namespace, shared=True)

    def list(
        self, resource: str, namespace: str | None = None, selector: Selector = None, *, cached: bool = False
    ) -> tuple[list[JSON], str]:
        return self.store.list(resource, namespace, selector, shared=True, cached=cached)

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None
    ) -> Iterator[WatchEvent]:
        return self.store.watch(resource, resource_version, timeout, selector, shared=True)

    def create(self, obj: JSON) -> JSON:
        return self.store.create(obj, shared=True)

    def update(self, obj: JSON) -> JSON:
        return self.store.update(obj, shared=True)

    def update_status(self, obj: JSON) -> JSON:
        return self.store.update_status(obj, shared=True)

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        return self.store.patch(resource, name, namespace, patch, subresource, strategic=strategic, shared=True)

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        self.store.delete(resource, name, namespace, grace_period_seconds)

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self.store.bind(namespace, pod_name, node_name, uid)

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        self.store.evict(namespace, pod_name, uid)


if TYPE_CHECKING:  # the checker rejects SharedReads the day it drifts from the interface
    _IS_A_CLUSTER_STORE: Callable[[MemoryStore], ClusterStore] = SharedReads
