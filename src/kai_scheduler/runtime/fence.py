"""A component's writes fenced by its leadership: under leader election a write is sent only while the
component's elector says this process leads.

The runner checks leadership before each step, but a step that began as leader may still be writing when the
lease lapses (its requests stalled behind a partition, or many of them in a cycle). KAI's components exit when
they lose the lease (client-go's `OnStoppedLeading`), which ends their writes with the process; a process here
stays as a standby, so every write of a component goes through its `Fenced` store and is refused (`NotLeading`,
a `Cancelled`, nothing sent) once the lease lapsed. Reads go through: a standby keeps its caches warm.

A write is checked twice: when the component makes it, and again when its bytes go out (`checked_when_sent`): a
write that waited for a pooled connection past the first check and the lapse's cut of the requests in flight is
refused there, not sent late on a fresh connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from kai_scheduler.store.interface import JSON, Cancelled, ClusterStore, Selector, WatchEvent, checked_when_sent

_T = TypeVar("_T")


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

    def _write(self, what: str, write: Callable[[], _T]) -> _T:
        """`write()` if this process leads, and with its requests refused at the wire once it does not."""
        self._check(what)
        with checked_when_sent(lambda: self._check(what)):
            return write()

    # --- reads ---

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        return self.store.get(resource, name, namespace)

    def list(
        self, resource: str, namespace: str | None = None, selector: Selector = None, *, cached: bool = False
    ) -> tuple[list[JSON], str]:
        return self.store.list(resource, namespace, selector, cached=cached)

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None
    ) -> Iterator[WatchEvent]:
        return self.store.watch(resource, resource_version, timeout, selector)

    # --- writes ---

    def create(self, obj: JSON) -> JSON:
        return self._write(f"create {obj.get('kind') or 'object'} {_name(obj)}", lambda: self.store.create(obj))

    def update(self, obj: JSON) -> JSON:
        return self._write(f"update {obj.get('kind') or 'object'} {_name(obj)}", lambda: self.store.update(obj))

    def update_status(self, obj: JSON) -> JSON:
        what = f"update {obj.get('kind') or 'object'} {_name(obj)} status"
        return self._write(what, lambda: self.store.update_status(obj))

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        return self._write(
            f"patch {resource} {namespace}/{name}",
            lambda: self.store.patch(resource, name, namespace, patch, subresource, strategic=strategic),
        )

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        self._write(
            f"delete {resource} {namespace}/{name}",
            lambda: self.store.delete(resource, name, namespace, grace_period_seconds),
        )

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        self._write(f"bind pod {namespace}/{pod_name}", lambda: self.store.bind(namespace, pod_name, node_name, uid))

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        self._write(f"evict pod {namespace}/{pod_name}", lambda: self.store.evict(namespace, pod_name, uid))


def _name(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)
