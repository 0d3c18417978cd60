"""ObjectCache: typed objects kept in step with a ClusterStore through shared informers (KAI `scheduler/cache`).

Each object is parsed once per resource version; an object that fails to parse is kept out of the typed view
and reported (kind, key, message) until a newer version parses. After the informer relisted (a watch answered
Gone, or `relist` asked for it: a write of this process whose answer was lost) the typed view is rebuilt from the
objects it hands over. `sync()` is non-blocking: it takes in the events that are there and returns.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kai_scheduler.api import PARSERS, ObjectError
from kai_scheduler.store import collector
from kai_scheduler.store.informer import Change, Informers, Subscription
from kai_scheduler.store.interface import JSON, RESOURCES, ClusterStore, NotFound
from kai_scheduler.store.keys import object_key

log = logging.getLogger(__name__)
T = TypeVar("T")

DRA_RESOURCES = ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates")
SCHEDULER_RESOURCES = (
    "nodes",
    "pods",
    "podgroups",
    "queues",
    "bindrequests",
    "priorityclasses",
    "topologies",
    "namespaces",  # their labels: pod affinity terms' namespaceSelector, queue access control
    *DRA_RESOURCES,
)
# Kinds a cluster may not serve (resource.k8s.io/v1beta1 is off by default in Kubernetes 1.32): a list answered
# NotFound reads as empty, and is asked again every OPTIONAL_RETRY syncs.
OPTIONAL_RESOURCES = frozenset(DRA_RESOURCES)
OPTIONAL_RETRY = 60
# The resource whose first LIST runs on a thread of its own while the others are listed and parsed (where the
# informers allow it): the pods, by far the largest. The API server encodes a list whole before it sends a byte
# (about 10 s for 140,000 pods from its watch cache), and the other lists fit in that wait. One only: two lists
# receiving at once contend for the interpreter's lock on every chunk libcurl hands over (bench/README.md).
LISTED_AHEAD = "pods"
LOG_FLOOR = 4096  # entries an informer's change log keeps at least (see `_logged`)


@dataclass(frozen=True, slots=True)
class BadObject:
    kind: str
    key: str
    resource_version: str
    message: str
    annotations: Mapping[str, str] = field(default_factory=dict)  # as written, e.g. a bad pod's PodGroup


@dataclass(slots=True)
class _Typed(Generic[T]):
    """The parsed view of one resource, fed by its subscription to the shared informer."""

    resource: str
    parse: Callable[[JSON], T]
    subscription: Subscription
    items: dict[str, tuple[str, T]] = field(default_factory=dict)  # key → (resourceVersion, object)
    bad: dict[str, BadObject] = field(default_factory=dict)
    version: str = ""
    listed: bool = False  # a first batch was taken in
    ordered: list[Any] | None = None  # the parsed objects in key order (None: sort them again)
    ordered_keys: list[str] = field(default_factory=list)  # their keys
    changed: set[str] = field(default_factory=set)  # keys changed since `ordered` was made
    gone: set[str] = field(default_factory=set)  # keys deleted since the last relist (see `seen`)
    unserved: int = 0  # an optional kind the server does not serve: syncs until it is asked again
    dropped: dict[str, dict[str, str]] = field(default_factory=dict)  # key → labels of objects `keep` dropped
    # The change log (see `ObjectCache.changed`): the keys put or deleted, in order, since the last relist
    # (`epoch` counts relists); `log_start` is the position of log[0] since then.
    log: list[str] = field(default_factory=list)
    log_start: int = 0
    epoch: int = 0


Mark = tuple[int, int]  # (relists, position in the change log): where an informer's change log stood


class ObjectCache:
    """`keep`: per resource, which objects the cache holds (as the server sends them, before parsing); the others
    are dropped as they arrive, as a label-selected informer would (a scheduler shard keeps its node pool's
    nodes, queues and PodGroups), so nothing later parses, sorts or snapshots them. This is the one place the
    node-pool filter applies: the shared informers under it keep every object, for the components that need all.
    `informers`: the process's shared informers (a private set when none is given)."""

    def __init__(
        self,
        store: ClusterStore,
        resources: Iterable[str] = SCHEDULER_RESOURCES,
        keep: Mapping[str, Callable[[JSON], bool]] | None = None,
        remember_dropped: Iterable[str] = (),
        informers: Informers | None = None,
    ) -> None:
        """`remember_dropped`: resources whose dropped objects' names and labels are kept (`dropped`), such as
        other pools' queues, which a job of this pool may name by mistake."""
        self.store = store
        self._keep = dict(keep or {})
        self._remember = frozenset(remember_dropped)
        shared = informers if informers is not None else Informers(store)
        self._lists_ahead = shared.lists_ahead
        self._informers: dict[str, _Typed[Any]] = {}
        for resource in resources:
            kind = RESOURCES[resource].kind
            self._informers[resource] = _Typed(resource, PARSERS[kind], shared.subscribe(resource))
        self.reported: set[tuple[str, str, str]] = set()

    def sync(self) -> None:
        """Take in what every informer brought since the last sync (after a relist, the whole resource again).
        The first sync may list `LISTED_AHEAD` on a thread while it lists the rest; it is then taken last."""
        ahead = self._list_ahead()
        for informer in self._informers.values():
            if informer is not ahead:
                self._sync_one(informer)
        if ahead is not None:
            self._sync_one(ahead)  # waits for its LIST to end

    def _list_ahead(self) -> _Typed[Any] | None:
        informer = self._informers.get(LISTED_AHEAD)
        if not self._lists_ahead or informer is None or informer.listed or len(self._informers) == 1:
            return None
        informer.subscription.informer.list_ahead()
        return informer

    def _sync_one(self, informer: _Typed[Any]) -> None:
        """Take in what one informer brought since the last sync."""
        if informer.unserved:
            informer.unserved -= 1
            return
        try:
            batch = informer.subscription.take()
        except NotFound:
            if informer.resource not in OPTIONAL_RESOURCES:
                raise
            log.info("resource not served by the cluster; taken as empty", extra={"resource": informer.resource})
            informer.unserved = OPTIONAL_RETRY
            return
        if batch.relisted:
            self._relist(informer, batch.changes)
        else:
            for key, obj in batch.changes:
                if obj is None:
                    _logged(informer, key)
                    informer.items.pop(key, None)
                    informer.bad.pop(key, None)
                    informer.dropped.pop(key, None)
                    informer.changed.add(key)
                    informer.gone.add(key)
                else:
                    self._put(informer, key, obj)
        informer.version = batch.version

    def _relist(self, informer: _Typed[Any], objects: list[Change]) -> None:
        with collector.paused():  # parsing a large list allocates many objects that all stay alive
            self._relist_all(informer, objects)

    def _relist_all(self, informer: _Typed[Any], objects: list[Change]) -> None:
        """Rebuild the typed view from a relisted batch. Nothing is logged or marked changed key by key: the
        change log starts anew and the order is made again from every object."""
        old = informer.items
        items: dict[str, tuple[str, Any]] = {}
        informer.items, informer.bad, informer.dropped = items, {}, {}
        for key, obj in objects:
            assert obj is not None  # a relisted batch holds objects only
            rv = obj.get("metadata", {}).get("resourceVersion", "")
            kept = old.get(key)
            if kept is not None and kept[0] == rv:
                items[key] = kept  # unchanged: keep the parsed object
            else:
                self._take(informer, key, rv, obj)
        informer.listed = True
        informer.changed.clear()
        informer.ordered = None
        informer.epoch += 1  # what changed is not known key by key: readers of the change log look at all
        informer.log, informer.log_start = [], 0
        informer.gone = set(old) - set(informer.items) - set(informer.bad)

    def _put(self, informer: _Typed[Any], key: str, obj: JSON) -> None:
        informer.changed.add(key)
        _logged(informer, key)  # logged before the keep filter: a dropped object reads as gone
        self._take(informer, key, obj.get("metadata", {}).get("resourceVersion", ""), obj)

    def _take(self, informer: _Typed[Any], key: str, rv: str, obj: JSON) -> None:
        """Hold the object of `key` (version `rv`) parsed, or as unparsable, or drop it (`keep`)."""
        keep = self._keep.get(informer.resource)
        if keep is not None and not keep(obj):  # not (or no longer) one of ours: as if deleted
            informer.items.pop(key, None)
            informer.bad.pop(key, None)
            if informer.resource in self._remember:
                labels = obj.get("metadata", {}).get("labels")
                informer.dropped[key] = dict(labels) if isinstance(labels, dict) else {}
            return
        informer.dropped.pop(key, None)
        if rv and key in informer.items and informer.items[key][0] == rv:
            return  # the version taken in already (`assume`): parsed once
        try:
            parsed = informer.parse(obj)
        except ObjectError as err:
            informer.items.pop(key, None)
            informer.bad[key] = BadObject(RESOURCES[informer.resource].kind, key, rv, str(err), _annotations(obj))
            return
        informer.bad.pop(key, None)
        informer.items[key] = (rv, parsed)

    def assume(self, resource: str, obj: JSON) -> None:
        """Take in an object this process wrote, as the server answered it, before the watch brings it back
        (KAI's scheduler adds its BindRequests to its own informer store so): unless the cache has seen the
        key already, in which case the watch's copy is as new or newer."""
        informer = self._informers[resource]
        key = object_key(obj)
        if informer.listed and not self.seen(resource, key):
            self._put(informer, key, obj)

    def relist(self, resource: str) -> None:
        """Have the next `sync` list `resource` again rather than follow its watch: the store may hold objects the
        watch has not brought (a write of this process whose answer was lost, while the watch reconnects)."""
        self._informers[resource].subscription.informer.relist_next()

    def objects(self, resource: str) -> list[Any]:
        """The parsed objects of one resource, in key order (a new list; sorted again only after a change)."""
        informer = self._informers[resource]
        if informer.ordered is None or len(informer.changed) * 8 > len(informer.items):
            ordered = sorted(informer.items.items())
            informer.ordered, informer.ordered_keys = [obj for _, (_, obj) in ordered], [k for k, _ in ordered]
        else:  # a few changes: each put in its place, not the whole list sorted again
            keys, objs = informer.ordered_keys, informer.ordered
            for key in informer.changed:
                i = bisect.bisect_left(keys, key)
                there = i < len(keys) and keys[i] == key
                item = informer.items.get(key)
                if item is None and there:
                    del keys[i], objs[i]
                elif item is not None and there:
                    objs[i] = item[1]
                elif item is not None:
                    keys.insert(i, key)
                    objs.insert(i, item[1])
        informer.changed.clear()
        return list(informer.ordered)

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources this cache lists and watches, in sync order."""
        return tuple(self._informers)

    def held(self, resource: str) -> list[tuple[str, Any]]:
        """(key, parsed object) of every object of `resource` held now, unordered: references copied, nothing
        parsed or sorted (a reader on another thread holds the owner's lock only this long)."""
        return [(key, item[1]) for key, item in self._informers[resource].items.items()]

    def mark(self, resource: str) -> Mark:
        """Where the change log of `resource` stands now (give it to `changed` later)."""
        informer = self._informers[resource]
        return informer.epoch, informer.log_start + len(informer.log)

    def changed(self, resource: str, since: object, until: object) -> dict[str, Any] | None:
        """The parsed objects whose keys changed between two marks of `resource` (None for a key now gone or
        unparsable), or None when that is not known: a relist came between, the log no longer reaches back to
        `since`, or something changed after `until` (the caller's objects would not be the cache's now)."""
        informer = self._informers[resource]
        end = informer.log_start + len(informer.log)
        if (
            not isinstance(since, tuple)
            or since[0] != informer.epoch
            or until != (informer.epoch, end)
            or not informer.log_start <= since[1] <= end
        ):
            return None
        out: dict[str, Any] = {}
        for key in informer.log[since[1] - informer.log_start :]:
            item = informer.items.get(key)
            out[key] = item[1] if item is not None else None
        return out

    def seen(self, resource: str, key: str) -> bool:
        """Whether the cache has seen the object (it is here, unparsable, or was deleted since the last relist):
        how a writer knows its own write has come back through the watch."""
        informer = self._informers[resource]
        return key in informer.items or key in informer.bad or key in informer.gone

    def versions(self) -> tuple[str, ...]:
        """Each resource's last resource version seen: equal tuples mean nothing arrived in between."""
        return tuple(informer.version for informer in self._informers.values())

    def dropped(self, resource: str) -> dict[str, dict[str, str]]:
        """Key → labels of the objects of `resource` that `keep` dropped and that still exist (only for the
        resources named in `remember_dropped`)."""
        return self._informers[resource].dropped

    def bad_objects(self) -> list[BadObject]:
        return [b for inf in self._informers.values() for _, b in sorted(inf.bad.items())]


def _logged(informer: _Typed[Any], key: str) -> None:
    """Append to the change log; past twice the objects (and a floor) its older half is dropped, and a reader
    whose mark falls before what is kept looks at every object instead."""
    log = informer.log
    log.append(key)
    if len(log) > max(LOG_FLOOR, 2 * len(informer.items)):
        drop = len(log) // 2
        del log[:drop]
        informer.log_start += drop


def _annotations(obj: JSON) -> dict[str, str]:
    raw = obj.get("metadata", {}).get("annotations")
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
