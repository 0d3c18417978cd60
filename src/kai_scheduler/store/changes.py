"""`Changes`: what changed in one resource since the last look, from a LIST then a WATCH of the store.

The first `poll()` lists everything; later ones drain the watch from the version reached. When the store no
longer has that version (Gone) the resource is listed again and reported as a diff: every object present,
and a deletion for every key that vanished meanwhile.
"""

from __future__ import annotations

import logging

from kai_scheduler.store.interface import JSON, ClusterStore, Gone

log = logging.getLogger(__name__)

Change = tuple[str, JSON | None]  # (namespace/name or name, the object; None = deleted)


class Changes:
    def __init__(self, store: ClusterStore, resource: str) -> None:
        self.store = store
        self.resource = resource
        self._version = ""
        self._listed = False
        self._keys: set[str] = set()

    def poll(self, timeout: float = 0.0) -> list[Change]:
        """The changes since the last poll, oldest first (one object may appear more than once); after the
        first poll, waits up to `timeout` seconds for the first event (an idle loop's sleep)."""
        if self._listed:
            try:
                return self._watch(timeout)
            except Gone:
                log.info("watch expired, relisting", extra={"resource": self.resource})
        return self._relist()

    def _watch(self, timeout: float) -> list[Change]:
        out: list[Change] = []
        for event in self.store.watch(self.resource, self._version, timeout):
            meta = event.object.get("metadata", {})
            self._version = meta.get("resourceVersion", self._version)
            if event.type == "BOOKMARK":
                continue
            key = object_key(event.object)
            if event.type == "DELETED":
                self._keys.discard(key)
                out.append((key, None))
            else:
                self._keys.add(key)
                out.append((key, event.object))
        return out

    def _relist(self) -> list[Change]:
        items, self._version = self.store.list(self.resource)
        self._listed = True
        present = {object_key(obj): obj for obj in items}
        out: list[Change] = [(key, None) for key in sorted(self._keys - present.keys())]
        out += list(present.items())
        self._keys = set(present)
        return out


def object_key(obj: JSON) -> str:
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace", "")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))
