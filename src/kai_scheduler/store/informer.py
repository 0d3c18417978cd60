"""Shared informers: one LIST and WATCH of a resource per process, its objects in a local cache, and each consumer
told what changed since it last looked (client-go's SharedInformer and SharedInformerFactory).

- `Informer`: lists the resource when first synced (the first time, in a long-running component, from the server's
  cache, as client-go's reflector does), then drains its watch from the last resourceVersion seen
  (bookmarks move it too); a watch the store answers Gone (the version was compacted away) relists, and every
  consumer is handed the whole resource again. Its cache holds the objects as the store sent them, by
  `keys.object_key`, with named indexes (`add_index`, `index`).
- Syncing is pulled: the consumer that asks drains what the store has, under the informer's lock, and every
  subscription gets its share. A single-threaded run (the tests, the simulator) stays deterministic, and with one
  informer per resource a `KubeStore` keeps one watch stream per resource however many components read it. One
  exception, in a component process (`Informers(lists_ahead=True)`): a consumer with several first lists to make
  may start one of them on a thread of its own (`list_ahead`) and make the others while it runs.
- `Subscription`: one consumer's changes since its last `take`, one entry per key: a key changed many times in
  between is handed over once, as it is now, after a deletion if it was deleted meanwhile, with the object as that
  consumer last saw it (`Batch.before`, client-go's old object of an update; after a relist too), so a consumer
  that reacts to what changed in an object keeps no copy of its own. A consumer that does not take (a standby
  component beside a leading one) so holds at most one entry per object.
- `Informers`: the informers of one store, one per (resource, label selector); `runtime.components.build` makes one
  for all the components of a process.

The objects are shared by every consumer: none may change an object it was handed (the memory store's checking
mode names one that does, see `store.shared`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kai_scheduler.store import collector
from kai_scheduler.store.interface import JSON, ClusterStore, Gone, Selector, StoreError, WatchEvent
from kai_scheduler.store.keys import object_key

log = logging.getLogger(__name__)

Change = tuple[str, JSON | None]  # (key, the object; None = deleted)
IndexFunc = Callable[[JSON], Iterable[str]]  # the values an object is filed under in an index
NAMESPACE_INDEX = "namespace"  # the index of `by_namespace` (client-go's NamespaceIndex)


def by_namespace(obj: JSON) -> tuple[str, ...]:
    """The object's namespace ("" for a cluster-scoped one): the `NAMESPACE_INDEX`."""
    return (str((obj.get("metadata") or {}).get("namespace") or ""),)


@dataclass(frozen=True, slots=True)
class Batch:
    """What a subscription takes: `changes` oldest first; when `relisted`, they are every object there is (no
    deletions: the consumer drops what it holds that is not among them). `version`: the informer's resourceVersion,
    which the batch brings the consumer up to. `before`: for the keys changed (or, relisted, present or gone) that
    the consumer had seen, each object as its last batch left it."""

    changes: list[Change]
    relisted: bool
    version: str
    before: Mapping[str, JSON] = field(default_factory=dict)


class Informer:
    """One resource (of one label selector) of one store; see the module docstring."""

    def __init__(
        self, store: ClusterStore, resource: str, selector: Selector = None, *, first_from_cache: bool = False
    ) -> None:
        self.store = store
        self.resource = resource
        self.selector = selector
        self.first_from_cache = first_from_cache  # see `Informers`
        self.version = ""
        self.listed = False
        self.relists = 0  # LISTs made (the first, then one per Gone)
        self._lock = threading.RLock()
        self._items: dict[str, JSON] = {}
        self._subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {}
        self._filed: dict[str, dict[str, tuple[str, ...]]] = {}  # index → key → the values it is filed under
        self._ahead: threading.Thread | None = None  # the first LIST under way on a thread (`list_ahead`)
        self._ahead_lock = threading.Lock()

    def subscribe(self) -> Subscription:
        """A new consumer: its first `take` hands over every object."""
        subscription = Subscription(self)
        with self._lock:
            self._subscriptions.add(subscription)
        return subscription

    def sync(self, timeout: float = 0.0) -> None:
        """Take in what the store has: the LIST the first time, else the watch's events (waiting up to `timeout`
        for the first), or a LIST again when the watch is Gone. A store error other than Gone goes to the caller
        (a LIST refused leaves the informer unlisted: the next sync lists again)."""
        with self._lock:
            if not self.listed:
                self._relist()
                return
            try:
                if self.selector is None:
                    events = self.store.watch(self.resource, self.version, timeout)
                else:
                    events = self.store.watch(self.resource, self.version, timeout, selector=self.selector)
                for event in events:
                    self._receive(event)
            except Gone:
                log.info("watch expired, relisting", extra={"resource": self.resource})
                self._relist()

    def list_ahead(self) -> None:
        """Start the first LIST on a thread of its own and return; nothing once listed or while that LIST runs. A
        consumer's `take` then waits for it. A LIST that fails is left to the next `sync`, which lists again and
        meets the error itself."""
        with self._ahead_lock:
            if self.listed or (self._ahead is not None and self._ahead.is_alive()):
                return
            self._ahead = threading.Thread(target=self._first_list, name=f"kai-list-{self.resource}", daemon=True)
            self._ahead.start()

    def _first_list(self) -> None:
        try:
            self.sync()
        except StoreError as err:
            log.info(
                "list ahead failed; the next sync lists again", extra={"resource": self.resource, "error": str(err)}
            )

    def relist_next(self) -> None:
        """Have the next `sync` LIST again instead of following the watch (every subscription then takes the whole
        resource): the store may hold what the watch has not brought yet."""
        with self._lock:
            self.listed = False

    # --- the cache ---

    def get(self, key: str) -> JSON | None:
        with self._lock:
            return self._items.get(key)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def add_index(self, name: str, index: IndexFunc) -> None:
        """File every object (now and to come) under the values `index` gives it; `index(name, value)` reads them.
        Adding the same index again (a second consumer of one kind) changes nothing."""
        with self._lock:
            known = self._index_funcs.get(name)
            if known is index:
                return
            if known is not None:
                raise ValueError(f"{self.resource}: another index is named {name!r}")
            self._index_funcs[name] = index
            self._indexes[name], self._filed[name] = {}, {}
            for key, obj in self._items.items():
                self._file(name, key, obj)

    def index(self, name: str, value: str) -> set[str]:
        """The keys of the objects filed under `value` in the index `name`."""
        with self._lock:
            return set(self._indexes[name].get(value, ()))

    # --- inside the lock ---

    def _receive(self, event: WatchEvent) -> None:
        obj = event.object
        self.version = obj.get("metadata", {}).get("resourceVersion", self.version)
        if event.type == "BOOKMARK":
            return
        key = object_key(obj)
        old = self._items.get(key)
        if event.type == "DELETED":
            self._items.pop(key, None)
            self._refile(key, None)
            for subscription in self._subscriptions:
                subscription._deleted(key, old)
        else:
            self._items[key] = obj
            self._refile(key, obj)
            for subscription in self._subscriptions:
                subscription._changed(key, obj, old)

    def _relist(self) -> None:
        # The first list may come from the server's cache (client-go's reflector lists so); a relist, after Gone or
        # asked for because the store may hold what the watch has not brought, must not be behind the store.
        first = self.relists == 0
        cached = self.first_from_cache and first
        # The first list is start-up data: in a component process it is frozen out of the collector before the
        # collector is back on, which would otherwise walk all of it at once (1.9 s at 140,000 pods).
        with collector.paused():
            if self.selector is None:
                items, version = self.store.list(self.resource, cached=cached)
            else:
                items, version = self.store.list(self.resource, None, self.selector, cached=cached)
            old, self._items = self._items, {object_key(obj): obj for obj in items}
            self.version = version
            self.listed = True
            self.relists += 1
            for name in self._index_funcs:
                self._indexes[name], self._filed[name] = {}, {}
                for key, obj in self._items.items():
                    self._file(name, key, obj)
            if first:
                collector.loaded()
        for subscription in self._subscriptions:
            subscription._relisted(old)

    def _refile(self, key: str, obj: JSON | None) -> None:
        for name in self._index_funcs:
            index = self._indexes[name]
            for value in self._filed[name].pop(key, ()):
                keys = index[value]
                keys.discard(key)
                if not keys:
                    del index[value]
            if obj is not None:
                self._file(name, key, obj)

    def _file(self, name: str, key: str, obj: JSON) -> None:
        values = tuple(self._index_funcs[name](obj))
        if values:
            self._filed[name][key] = values
            for value in values:
                self._indexes[name].setdefault(value, set()).add(key)


class Subscription:
    """One consumer's share of an informer's changes; see the module docstring."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self._whole = True  # the next take hands over every object (the first one, and after a relist)
        # key → (deleted since the last take, the object now or None, the object at the last take or None): one
        # entry per key, in first-change order
        self._pending: dict[str, tuple[bool, JSON | None, JSON | None]] = {}
        self._seen: dict[str, JSON] = {}  # while whole after a relist: what the consumer had seen then

    def take(self, timeout: float = 0.0) -> Batch:
        """Sync the informer, then hand over what changed since the last take; with nothing pending, the sync
        waits up to `timeout` seconds for the first event."""
        informer = self.informer
        idle = not self._pending and not (self._whole and informer.listed)
        informer.sync(timeout if idle else 0.0)
        with informer._lock:
            if self._whole:
                seen, self._whole, self._pending, self._seen = self._seen, False, {}, {}
                return Batch(list(informer._items.items()), True, informer.version, seen)
            changes: list[Change] = []
            before: dict[str, JSON] = {}
            for key, (deleted, obj, last) in self._pending.items():
                if deleted:
                    changes.append((key, None))
                if obj is not None:
                    changes.append((key, obj))
                if last is not None:
                    before[key] = last
            self._pending = {}
            return Batch(changes, False, informer.version, before)

    def _changed(self, key: str, obj: JSON, old: JSON | None) -> None:
        if not self._whole:
            pending = self._pending.get(key)
            self._pending[key] = (False, obj, old) if pending is None else (pending[0], obj, pending[2])

    def _deleted(self, key: str, old: JSON | None) -> None:
        if not self._whole:
            pending = self._pending.get(key)
            self._pending[key] = (True, None, old if pending is None else pending[2])

    def _relisted(self, old: dict[str, JSON]) -> None:
        """`old`: the informer's objects before the relist, those of the keys pending as they changed since."""
        if not self._whole:  # else what it had seen is kept from the relist before, or it saw nothing yet
            seen = dict(old)
            for key, (_, _, last) in self._pending.items():
                if last is None:
                    seen.pop(key, None)
                else:
                    seen[key] = last
            self._seen = seen
        self._whole = True
        self._pending = {}


class Informers:
    """The shared informers of one store (client-go's SharedInformerFactory): one per resource and label selector."""

    def __init__(self, store: ClusterStore, *, first_from_cache: bool = False, lists_ahead: bool = False) -> None:
        """`first_from_cache`: each informer's first LIST may come from the API server's watch cache, behind the
        latest write, as client-go's reflector lists: for long-running components, whose watch brings the rest.
        A one-shot reader (`kai explain`) must see what was written before it started, and lists consistently.
        `lists_ahead`: a consumer with several first lists to make may start one on a thread (`list_ahead`), for
        a store whose lists wait on a server; a run in memory stays on one thread."""
        self.store = store
        self.first_from_cache = first_from_cache
        self.lists_ahead = lists_ahead
        self._lock = threading.Lock()
        self._informers: dict[tuple[str, Selector], Informer] = {}

    def informer(self, resource: str, selector: Selector = None) -> Informer:
        with self._lock:
            found = self._informers.get((resource, selector))
            if found is None:
                found = self._informers[(resource, selector)] = Informer(
                    self.store, resource, selector, first_from_cache=self.first_from_cache
                )
            return found

    def subscribe(self, resource: str, selector: Selector = None) -> Subscription:
        return self.informer(resource, selector).subscribe()

    def started(self) -> list[Informer]:
        """The informers made so far."""
        with self._lock:
            return list(self._informers.values())
