"""`Changes`: what changed in one resource since the last look, as (key, object) pairs, from a shared informer.

The first `poll()` hands over everything; later ones what the informer's watch brought since. After the informer
relisted (its watch was Gone), every object present is handed over again, with a deletion for every key that
vanished meanwhile. `poll_updates()` is the same with each object as this reader last saw it (None: not seen).
"""

from __future__ import annotations

from kai_scheduler.store.informer import Batch, Change, Informer
from kai_scheduler.store.interface import JSON, ClusterStore

Update = tuple[str, JSON | None, JSON | None]  # (key, the object as last seen or None, the object now or None)


class Changes:
    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self.resource = informer.resource
        self._subscription = informer.subscribe()
        self._keys: set[str] = set()

    @classmethod
    def of(cls, store: ClusterStore, resource: str) -> Changes:
        """Changes from an informer of its own (a command with one reader of the resource)."""
        return cls(Informer(store, resource))

    def poll(self, timeout: float = 0.0) -> list[Change]:
        """The changes since the last poll, oldest first; after the first poll, waits up to `timeout` seconds for
        the first event (an idle loop's sleep)."""
        return self._changes(self._subscription.take(timeout))

    def poll_updates(self, timeout: float = 0.0) -> list[Update]:
        """As `poll`, each change with the object as this reader last saw it."""
        batch = self._subscription.take(timeout)
        return [(key, batch.before.get(key), obj) for key, obj in self._changes(batch)]

    def _changes(self, batch: Batch) -> list[Change]:
        if not batch.relisted:
            for key, obj in batch.changes:
                if obj is None:
                    self._keys.discard(key)
                else:
                    self._keys.add(key)
            return batch.changes
        present = {key for key, _ in batch.changes}
        out: list[Change] = [(key, None) for key in sorted(self._keys - present)]
        self._keys = present
        return out + batch.changes
