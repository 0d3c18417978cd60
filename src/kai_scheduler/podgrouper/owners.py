"""Workload owners served from the process's informers, as KAI's podgrouper reads them from its informers.

Against an API server a GET per pod's owner costs one request of the client's QPS, and the pods of one Job
arriving in different reconciles would read it again each time. Each owner kind is listed and watched from
the first time a pod names an owner of that kind (only the kinds in use are watched); `refresh()`, once per
reconcile, takes what the watches delivered. The owners are the informers' objects: the cache keeps no copy.

An owner the informer lacks, or holds under another uid than the reference names, may only be newer than the
watch (a Job created just before its pods): it is read from the store, and kept until the watch brings it.
A kind that cannot be listed (its CRD is not installed, or RBAC grants `get` alone) is read by name each
time, as before. `refresh()` also says which watched owners changed their spec, labels or annotations, so that
their PodGroups are computed again without waiting for one of their pods to change.
"""

from __future__ import annotations

import logging

from kai_scheduler.store.changes import Changes, Update
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, StoreError
from kai_scheduler.store.keys import meta_key, split_key

log = logging.getLogger(__name__)


class OwnerCache:
    def __init__(self, store: ClusterStore, informers: Informers | None = None) -> None:
        self.store = store
        self._informers = informers or Informers(store)
        self._feeds: dict[str, Changes] = {}
        # plural → namespace/name → an owner read from the store because its informer lacked it (or had another
        # uid), until its watch brings a change of it
        self._read: dict[str, dict[str, JSON]] = {}
        self._unwatched: set[str] = set()
        self._touched: set[tuple[str, str, str]] = set()

    def refresh(self) -> list[JSON]:
        """Apply what every started watch delivered since the last refresh (a store error goes to the caller,
        as the grouper's other watches' do); return the owners that changed what a grouping reads of them: their
        spec, labels or annotations. Status updates, which operators write often, and
        owners seen for the first time are not changes."""
        changed: list[JSON] = []
        for plural, feed in self._feeds.items():
            changed += self._apply(plural, feed.poll_updates())
        return changed

    def touched(self) -> set[tuple[str, str, str]]:
        """The watched owners, as (plural, namespace, name), that appeared or changed what a grouping reads of
        them since the last call: pods waiting for one of them (`context.NotReady`) are looked at again."""
        touched, self._touched = self._touched, set()
        return touched

    def get(self, plural: str, namespace: str, name: str, uid: str = "") -> JSON | None:
        """The owner `plural` `namespace/name` (None: not found), with `uid` if one is given and it exists."""
        if plural not in self._unwatched and plural not in self._feeds:
            self._start(plural)
        if plural in self._unwatched:
            return self._fetch(plural, namespace, name)
        key = meta_key({"namespace": namespace, "name": name})
        read = self._read[plural]
        known = read.get(key) or self._feeds[plural].informer.get(key)
        if known is not None and (not uid or known.get("metadata", {}).get("uid") == uid):
            return known
        found = self._fetch(plural, namespace, name)
        if found is not None:
            read[key] = found
        return found

    def _start(self, plural: str) -> None:
        feed = Changes(self._informers.informer(plural))
        try:
            updates = feed.poll_updates()
        except StoreError as err:
            self._unwatched.add(plural)
            log.info("owner kind not watched, read by name", extra={"resource": plural, "reason": err.reason})
            return
        self._feeds[plural] = feed
        self._read[plural] = {}
        self._apply(plural, updates)

    def _apply(self, plural: str, updates: list[Update]) -> list[JSON]:
        read = self._read[plural]
        changed: list[JSON] = []
        for key, before, obj in updates:
            old = before if before is not None else read.get(key)
            read.pop(key, None)
            if obj is None:
                continue
            if old is None or _grouped_part(old) != _grouped_part(obj):
                namespace, name = split_key(key)
                self._touched.add((plural, namespace, name))
                if old is not None:
                    changed.append(obj)
        return changed

    def _fetch(self, plural: str, namespace: str, name: str) -> JSON | None:
        try:
            return self.store.get(plural, name, namespace)
        except NotFound:
            return None


def _grouped_part(obj: JSON) -> tuple[object, ...]:
    """What of an owner its grouping may read: its uid, spec, labels and annotations (the spec itself, not
    `metadata.generation`, which the embedded store does not keep for every kind)."""
    meta = obj.get("metadata") or {}
    return meta.get("uid"), obj.get("spec"), meta.get("labels"), meta.get("annotations")
