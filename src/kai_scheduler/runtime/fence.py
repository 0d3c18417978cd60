"""A component's writes fenced by its leadership: under leader election a write is sent only while the
component's elector says this process leads.

The runner checks leadership before each step, but a step that began as leader may still be writing when the
lease lapses (its requests stalled behind a partition, or many of them in a cycle). KAI's components exit when
they lose the lease (client-go's `OnStoppedLeading`), which ends their writes with the process; a process here
stays as a standby, so every write of a component goes through its `Fenced` store and is refused (`NotLeading`,
a `Cancelled`, nothing sent) once the lease lapsed. Reads go through: a standby keeps its caches warm.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from kai_scheduler.store.interface import JSON, Cancelled, ClusterStore, Selector, WatchEvent


class Leading(Protocol):
    @property
    def is_leader(self) -> bool: ...


class NotLeading(Cancelled):
    """A write refused before it was sent: the component no longer leads."""

    reason = "NotLeading"


class Fenced:
    """`store` with its writes refused while `leadership` (set once leader election is on) says not leading."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.leadership: Leading | None = None

    def _check(self, what: str) -> None:
        if self.leadership is not None and not self.leadership.is_leader:
            raise NotLeading(f"{what}: not sent: this process no longer leads (its lease lapsed)")

    # --- reads ---

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        return self.store.get(resource, name, namespace)

    def list(self, resource: str, namespace: str | None = None, selector: Selector = None) -> tuple[list[JSON], str]:
        return self.store.list(resource, namespace, selector)

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None
    ) -> Iterator[WatchEvent]:
        return self.store.watch(resource, resource_version, timeout, selector)

    # --- writes ---

    def create(self, obj: JSON) -> JSON:
        self._check(f"create {obj.get('kind') or 'object'} {_name(obj)}")
        return self.store.create(obj)

    def update(self, obj: JSON) -> JSON:
        self._check(f"update {obj.get('kind') or 'object'} {_name(obj)}")
        return self.store.update(obj)

    def update_status(self, obj: JSON) -> JSON:
        self._check(f"update {obj.get('kind') or 'object'} {_name(obj)} status")
        return self.store.update_status(obj)

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        self._check(f"patch {resource} {namespace}/{name}")
        return self.store.patch(resource, name, namespace, patch, subresource, strategic=strategic)

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        self._check(f"delete {resource} {namespace}/{name}")
        self.store.delete(resource, name, namespace, grace_period_seconds)

    def bind(self, namespace: str, pod_name: str, node_name: str) -> None:
        self._check(f"bind pod {namespace}/{pod_name}")
        self.store.bind(namespace, pod_name, node_name)

    def evict(self, namespace: str, pod_name: str) -> None:
        self._check(f"evict pod {namespace}/{pod_name}")
        self.store.evict(namespace, pod_name)


def _name(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)
