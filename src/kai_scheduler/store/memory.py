"""`MemoryStore`: the embedded cluster, a small in-memory API server behind the `ClusterStore` interface.

`kai schedule` and the simulator run every component over it, so it answers as the Kubernetes API server
does wherever a component could tell the difference:

- Objects are Kubernetes JSON, copied on the way in and out (orjson round trips, ~10x faster than
  `copy.deepcopy`); a stored dict is never mutated afterwards, so events and new versions share it safely.
- One global resourceVersion counter, as etcd's: every change bumps it and records one watch event. A write
  that changes nothing (an update or patch equal to the stored object) is not a change: no new version and
  no event, as the API server skips no-op writes.
- Create stamps `uid` (uuid5 of kind/namespace/name/resourceVersion, so two stores fed the same writes agree),
  `creationTimestamp` from the clock, and `namespace: default` for namespaced kinds; it clears the namespace
  of cluster-scoped kinds. Like a restore, it keeps a given `uid`, `creationTimestamp` and
  `deletionTimestamp` (scenario files and cluster snapshots set them, and owner references point at uids).
- Kinds with a status subresource (`object_rules.STATUS_SUBRESOURCE`): `update` and object patches keep the stored
  `status`; `update_status` and status patches change only `status`. Other kinds are replaced whole.
- Pods delete gracefully, as the API server's pod strategy: an unbound or finished pod, or grace 0, goes at
  once; otherwise it gets `deletionTimestamp` = now + grace and `deletionGracePeriodSeconds` and stays
  (Releasing) until `finish_deletion` (the emulated kubelet) or a delete with grace 0. A repeated graceful
  delete keeps the first deadline. There are no finalizers.
- Garbage collection covers the one ownership our components create: when a pod is removed, the
  BindRequests whose ownerReferences name its uid are removed too (synchronously, after the pod).
- Watch history is kept per resource, as the API server's watch cache, and bounded (`history_size` events
  of each resource); a watch from a version older than its resource's kept history raises Gone. So a watch
  of a quiet resource (nodes, queues) stays valid however much else changes, and costs the events of its
  own resource only. The memory store never sends BOOKMARK events.

Waiting in `watch` is real time (threads wait on a condition); everything recorded in objects comes from the
injected clock.

Shared reads: `get`, `list` and `watch` with `shared=True` hand out the stored objects themselves, no copy, for
readers that never change what they read (`store.shared.SharedReads` gives an embedded component such a store).
A reader that did change one would change the store under everyone. The checking mode
(`KAI_CHECK_SHARED_READS=1`, on in the test suite) keeps a fingerprint of every stored object and compares it
when the object is replaced or removed and on `changed_by_readers()`: a difference names the object.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.selectors import LabelSelector
from kai_scheduler.store import object_rules as rules
from kai_scheduler.store.interface import (
    JSON,
    RESOURCES,
    AlreadyExists,
    ClusterStore,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Resource,
    Selector,
    WatchEvent,
    resource_for,
    resource_named,
)
from kai_scheduler.store.label_index import Key, LabelIndex, labels_of, parse_selector
from kai_scheduler.store.merge_patch import merge_patch, strategic_merge_patch

DEFAULT_HISTORY_SIZE: Final = 10_000
CHECK_SHARED_READS_ENV: Final = "KAI_CHECK_SHARED_READS"
# Stores made in the checking mode, held for a test harness to verify (and then forget) after each test.
CHECKED_STORES: list[MemoryStore] = []

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class _Event:
    rv: int
    plural: str
    type: EventType
    object: JSON  # the stored dict, never mutated
    # A MODIFIED event's labels before it (the replaced version's dict, not a copy): whether the object matched a
    # watch's selector before; None for the other events.
    labels_before: Mapping[str, str] | None = None


_Events = list[_Event]  # spelt once here: inside MemoryStore, `list` is the method
_Names = list[str]


# How the API server words a refused uid precondition of a binding and of an eviction.
_BIND_UID_REFUSED: Final = (
    "cannot bind pod {pod}: Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
)
_EVICT_UID_REFUSED: Final = (
    "cannot evict pod {pod}: the UID in the precondition ({uid}) does not match the UID in record ({actual}); "
    "the object might have been deleted and then recreated"
)


class MemoryStore:
    """A thread-safe `ClusterStore` in memory; all state sits behind one lock (a `threading.Condition`)."""

    def __init__(self, clock: Clock, *, history_size: int = DEFAULT_HISTORY_SIZE) -> None:
        if history_size < 1:
            raise ValueError(f"history_size must be at least 1, got {history_size}")
        self._clock = clock
        self._history_size = history_size
        self._cond = threading.Condition()
        self._objects: dict[str, dict[Key, JSON]] = {plural: {} for plural in RESOURCES}
        self._rv = 0
        self._history: dict[str, deque[_Event]] = {plural: deque() for plural in RESOURCES}
        # Per resource: the newest version whose event was dropped from its history.
        self._compacted_rv: dict[str, int] = dict.fromkeys(RESOURCES, 0)
        self._labels: dict[str, LabelIndex] = {plural: LabelIndex() for plural in RESOURCES}
        # BindRequests by (namespace, owner uid): what a removed pod takes with it, found without a scan.
        self._owned: dict[tuple[str, str], set[Key]] = {}
        self._generated = 0  # names made from metadata.generateName so far
        self._now_text: tuple[float, str] = (float("nan"), "")  # the clock's last reading, formatted
        self._checking = os.environ.get(CHECK_SHARED_READS_ENV) == "1"
        self._prints: dict[int, bytes] = {}  # checking mode: id of each stored object → its JSON when stored
        self._changed: list[str] = []  # checking mode: stored objects found changed when replaced or removed
        if self._checking:
            CHECKED_STORES.append(self)

    # --- reads ---

    def get(self, resource: str, name: str, namespace: str = "", *, shared: bool = False) -> JSON:
        """The object; `shared=True`: the stored one itself, which the caller must not change."""
        res = resource_named(resource)
        with self._cond:
            stored = self._stored(res.plural, _key(res, name, namespace))
        return stored if shared else rules.copy_out(stored)

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        selector: Selector = None,
        *,
        shared: bool = False,
        cached: bool = False,
    ) -> tuple[list[JSON], str]:
        """Matching objects sorted by (namespace, name); namespace None or "" means all namespaces. Always the
        latest version (`cached` changes nothing: this store is its own cache).

        `shared=True`: the stored objects themselves, which the caller must not change."""
        res = resource_named(resource)
        match = parse_selector(selector)
        scope = namespace if res.namespaced else None
        with self._cond:
            rv = str(self._rv)
            found = [
                (key, obj)
                for key, obj in self._labels[res.plural].candidates(self._objects[res.plural], match)
                if (not scope or key[0] == scope) and (match is None or match.matches(labels_of(obj)))
            ]
        found.sort(key=_by_key)
        objects = [obj for _, obj in found]
        return (objects if shared else rules.copy_out(objects)), rv

    def watch(
        self,
        resource: str,
        resource_version: str,
        timeout: float = 0.0,
        selector: Selector = None,
        *,
        shared: bool = False,
    ) -> Iterator[WatchEvent]:
        """Events of `resource` after `resource_version`, oldest first; one batch, then the iterator ends.

        "" means from now (only later events); "0" means from the beginning, which is what `list` returns
        on a store that never changed. With nothing to report, waits up to `timeout` real seconds for the
        first event. With a `selector`, the events of matching objects as the API server sends them (one that comes
        to match is ADDED, one that stops matching DELETED). Raises Gone (now, not on iteration) when the history no
        longer reaches back that far, and Invalid for a version this store never issued. `shared=True`: the events
        carry the stored objects themselves, which the caller must not change."""
        res = resource_named(resource)
        with self._cond:
            since = self._parse_version(resource_version)
            self._events_after(res.plural, since)  # fail fast on Gone
        return self._stream(res.plural, since, timeout, shared, parse_selector(selector))

    def changed_by_readers(self) -> _Names:
        """Checking mode: every stored object a reader changed (found when it was replaced or removed, or now);
        empty when none was, or when the mode is off."""
        with self._cond:
            changed = list(self._changed)
            for objects in self._objects.values():
                for obj in objects.values():
                    printed = self._prints.get(id(obj))
                    if printed is not None and orjson.dumps(obj) != printed:
                        changed.append(_describe(obj))
        return changed

    # --- writes ---

    def create(self, obj: JSON, *, shared: bool = False) -> JSON:
        """Store a new object; the object as stored (`shared=True`: the stored one itself, never to be changed)."""
        doc = rules.copy_in(obj)
        with self._cond:
            res, key, doc = self._prepare_new(doc)
            if key in self._objects[res.plural]:
                raise AlreadyExists(f"{res.plural} {_show(key)} already exists")
            stored = self._commit(res.plural, key, doc, "ADDED")
        return stored if shared else rules.copy_out(stored)

    def add_many(self, objects: Iterable[JSON]) -> int:
        """Create all of `objects` or none (AlreadyExists names the first clash); return how many.

        For loading scenarios and snapshots fast: one copy of the whole batch, no copies back."""
        docs = rules.copy_in(list(objects))
        with self._cond:
            prepared = [self._prepare_new(doc) for doc in docs]
            seen: set[tuple[str, Key]] = set()
            for res, key, _ in prepared:
                if key in self._objects[res.plural] or (res.plural, key) in seen:
                    raise AlreadyExists(f"{res.plural} {_show(key)} already exists")
                seen.add((res.plural, key))
            for res, key, doc in prepared:
                self._commit(res.plural, key, doc, "ADDED")
        return len(prepared)

    def update(self, obj: JSON, *, shared: bool = False) -> JSON:
        doc = rules.copy_in(obj)
        with self._cond:
            res, key = self._locate(doc)
            stored = self._stored(res.plural, key)
            rules.check_precondition(doc, stored)
            if res.plural in rules.STATUS_SUBRESOURCE:
                doc = rules.with_status(doc, stored.get("status"))
            written = self._write(res.plural, key, stored, rules.keep_system_fields(doc, stored))
        return written if shared else rules.copy_out(written)

    def update_status(self, obj: JSON, *, shared: bool = False) -> JSON:
        doc = rules.copy_in(obj)
        with self._cond:
            res, key = self._locate(doc)
            rules.require_status_subresource(res)
            stored = self._stored(res.plural, key)
            rules.check_precondition(doc, stored)
            written = self._write(res.plural, key, stored, rules.with_status(stored, doc.get("status")))
        return written if shared else rules.copy_out(written)

    def patch(
        self,
        resource: str,
        name: str,
        namespace: str,
        patch: JSON,
        subresource: str = "",
        *,
        strategic: bool = False,
        shared: bool = False,
    ) -> JSON:
        """RFC 7386 merge patch, or a strategic merge patch (see the interface). With subresource="status" the
        patch is still object-shaped
        (`{"status": {...}}`, as the API server takes it) and only its status part applies.

        A `metadata.resourceVersion` in the patch is a precondition (Conflict if stale), and so is a `metadata.uid`
        (Invalid if not the object's), except in a custom resource's status patch (the API server ignores it)."""
        res = resource_named(resource)
        if subresource not in ("", "status"):
            raise Invalid(f"unknown subresource {subresource!r}; want '' or 'status'")
        if subresource:
            rules.require_status_subresource(res)
        if not isinstance(patch, dict):
            raise Invalid(f"a merge patch must be an object, got {type(patch).__name__}")
        doc = rules.copy_in(patch)
        with self._cond:
            key = _key(res, name, namespace)
            stored = self._stored(res.plural, key)
            rules.check_precondition(doc, stored)
            if res.builtin or not subresource:
                rules.check_uid(doc, stored)
            merged = strategic_merge_patch(stored, doc) if strategic else merge_patch(stored, doc)
            if subresource:
                new = rules.with_status(stored, merged.get("status"))
            elif res.plural in rules.STATUS_SUBRESOURCE:
                new = rules.keep_system_fields(rules.with_status(merged, stored.get("status")), stored)
            else:
                new = rules.keep_system_fields(merged, stored)
            written = self._write(res.plural, key, stored, new)
        return written if shared else rules.copy_out(written)

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        """Remove the object; pods delete gracefully (see the module docstring). None = the pod's default."""
        res = resource_named(resource)
        if grace_period_seconds is not None and grace_period_seconds < 0:
            raise Invalid(f"grace_period_seconds must be at least 0, got {grace_period_seconds}")
        with self._cond:
            key = _key(res, name, namespace)
            stored = self._stored(res.plural, key)
            if res.plural == "pods":
                self._delete_pod(key, stored, grace_period_seconds)
            else:
                self._remove(res.plural, key, stored)

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        """Set spec.nodeName and the PodScheduled=True condition, as the API server's binding does.

        Conflict if the pod is not of `uid` (when given; checked first, as the server's precondition) or is
        bound already (to any node); Invalid if the node does not exist."""
        with self._cond:
            key = (namespace, pod_name)
            stored = self._pod_of(key, uid, _BIND_UID_REFUSED)
            spec = stored.get("spec") or {}
            if spec.get("nodeName"):
                raise Conflict(f"pod {_show(key)} is already bound to {spec['nodeName']}")
            if ("", node_name) not in self._objects["nodes"]:
                raise Invalid(f"cannot bind pod {_show(key)}: node {node_name!r} does not exist")
            status = rules.with_scheduled_condition(stored.get("status") or {}, self._now())
            bound = {**stored, "spec": {**spec, "nodeName": node_name}, "status": status}
            self._commit("pods", key, bound, "MODIFIED")

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        """Delete with the pod's own grace period (spec.terminationGracePeriodSeconds, else 30s); Conflict if the
        pod is not of `uid` (when given), as the server's precondition."""
        with self._cond:
            key = (namespace, pod_name)
            self._delete_pod(key, self._pod_of(key, uid, _EVICT_UID_REFUSED), None)

    def finish_deletion(self, namespace: str, pod_name: str) -> None:
        """Remove a terminating pod: what the kubelet does once its containers stopped.

        Not part of `ClusterStore`; Invalid if the pod was never asked to terminate."""
        with self._cond:
            key = (namespace, pod_name)
            stored = self._stored("pods", key)
            if not stored["metadata"].get("deletionTimestamp"):
                raise Invalid(f"pod {_show(key)} is not terminating")
            self._remove("pods", key, stored)

    # --- internals (called with the lock held) ---

    def _now(self) -> str:
        """The clock's time as RFC 3339, formatted once per instant (bulk writes share one instant)."""
        now = self._clock.now()
        if now != self._now_text[0]:
            self._now_text = (now, format_time(now))
        return self._now_text[1]

    def _pod_of(self, key: Key, uid: str, refused: str) -> JSON:
        """The stored pod `key`; Conflict, saying `refused` (with `{pod}`, `{uid}`, `{actual}`), when `uid` is given
        and is not the pod's: the server's uid precondition on a binding or an eviction."""
        stored = self._stored("pods", key)
        actual = (stored.get("metadata") or {}).get("uid")
        if uid and actual != uid:
            raise Conflict(refused.format(pod=_show(key), uid=uid, actual=actual))
        return stored

    def _stored(self, plural: str, key: Key) -> JSON:
        try:
            return self._objects[plural][key]
        except KeyError:
            raise NotFound(f"{plural} {_show(key)} not found") from None

    def _prepare_new(self, doc: Any) -> tuple[Resource, Key, JSON]:
        """Validate a new object and fill in what the server defaults; the version and uid come at commit."""
        if not isinstance(doc, dict):
            raise Invalid(f"an object must be a mapping, got {type(doc).__name__}")
        res = _resource_of(doc)
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            raise Invalid(f"{res.kind} has no metadata")
        meta.pop("resourceVersion", None)
        if res.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            meta["name"] = self._generate_name(res, meta)
        if not isinstance(meta["name"], str):
            raise Invalid(f"{res.kind} metadata.name must be a string, got {meta['name']!r}")
        if not meta.get("creationTimestamp"):  # kubectl writes `creationTimestamp: null` in templates
            meta["creationTimestamp"] = self._now()
        return res, (meta.get("namespace", ""), meta["name"]), doc

    def _generate_name(self, res: Resource, meta: JSON) -> str:
        """metadata.generateName plus five characters, reproducible from the sequence of writes."""
        prefix = meta.get("generateName")
        if not prefix or not isinstance(prefix, str):
            raise Invalid(f"{res.kind} has neither metadata.name nor metadata.generateName")
        while True:
            self._generated += 1
            name = prefix + rules.uuid5(f"{prefix}/{self._generated}")[:5]
            if (meta.get("namespace", ""), name) not in self._objects[res.plural]:
                return name

    def _locate(self, doc: Any) -> tuple[Resource, Key]:
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            raise Invalid("an object needs kind and metadata")
        res = _resource_of(doc)
        meta = doc["metadata"]
        if not meta.get("name"):
            raise Invalid(f"{res.kind} has no metadata.name")
        return res, _key(res, meta["name"], meta.get("namespace") or ("default" if res.namespaced else ""))

    def _write(self, plural: str, key: Key, stored: JSON, new: JSON) -> JSON:
        """Commit `new` as a modification, unless it equals what is stored (then nothing happens)."""
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise Invalid(f"{plural} {_show(key)}: metadata must be an object")
        new = {**new, "metadata": {**meta, "resourceVersion": stored["metadata"]["resourceVersion"]}}
        if new == stored:
            return stored
        return self._commit(plural, key, new, "MODIFIED")

    def _delete_pod(self, key: Key, stored: JSON, grace: int | None) -> None:
        if grace is None:
            grace = rules.default_grace(stored)
        unbound = not (stored.get("spec") or {}).get("nodeName")
        finished = (stored.get("status") or {}).get("phase") in rules.TERMINAL_POD_PHASES
        if grace == 0 or unbound or finished:
            self._remove("pods", key, stored)
            return
        if stored["metadata"].get("deletionTimestamp"):
            return
        meta = {
            **stored["metadata"],
            "deletionTimestamp": format_time(self._clock.now() + grace),
            "deletionGracePeriodSeconds": grace,
        }
        self._commit("pods", key, {**stored, "metadata": meta}, "MODIFIED")

    def _remove(self, plural: str, key: Key, stored: JSON) -> None:
        self._commit(plural, key, stored, "DELETED")
        uid = stored["metadata"].get("uid")
        if plural == "pods" and uid:
            self._collect_bind_requests(key[0], uid)

    def _collect_bind_requests(self, namespace: str, owner_uid: str) -> None:
        """Remove the BindRequests a removed pod owned: the only garbage collection the store does."""
        bind_requests = self._objects["bindrequests"]
        owned = [(key, bind_requests[key]) for key in self._owned.get((namespace, owner_uid), ())]
        for key, obj in sorted(owned, key=_by_key):
            self._commit("bindrequests", key, obj, "DELETED")

    def _commit(self, plural: str, key: Key, obj: JSON, event_type: EventType) -> JSON:
        """Bump the version, stamp it (and a new object's uid), store or drop the object, record the event."""
        self._rv += 1
        old = self._objects[plural].get(key)
        if plural in rules.GENERATION and event_type != "DELETED":
            obj = rules.with_generation(obj, old)
        meta = {**obj["metadata"], "resourceVersion": str(self._rv)}
        if event_type == "ADDED" and not meta.get("uid"):
            meta["uid"] = rules.uuid5(f"{obj['kind']}/{key[0]}/{key[1]}/{self._rv}")
        stored = {**obj, "metadata": meta}
        if self._checking:
            self._fingerprint(old, stored if event_type != "DELETED" else None)
        if old is not None:
            self._labels[plural].update(key, old, adding=False)
            if plural == "bindrequests":
                self._own(key, old, adding=False)
        if event_type == "DELETED":
            del self._objects[plural][key]
        else:
            self._objects[plural][key] = stored
            self._labels[plural].update(key, stored, adding=True)
            if plural == "bindrequests":
                self._own(key, stored, adding=True)
        history = self._history[plural]
        before = labels_of(old) if old is not None and event_type == "MODIFIED" else None
        history.append(_Event(self._rv, plural, event_type, stored, before))
        if len(history) > self._history_size:
            self._compacted_rv[plural] = history.popleft().rv
        self._cond.notify_all()
        return stored

    def _own(self, key: Key, obj: JSON, *, adding: bool) -> None:
        """Keep `_owned` for one BindRequest version coming into the store or leaving it."""
        for ref in obj["metadata"].get("ownerReferences") or ():
            uid = ref.get("uid") if isinstance(ref, dict) else None
            if not isinstance(uid, str):
                continue
            owner = (key[0], uid)
            if adding:
                self._owned.setdefault(owner, set()).add(key)
            elif owner in self._owned:
                self._owned[owner].discard(key)
                if not self._owned[owner]:
                    del self._owned[owner]

    def _fingerprint(self, old: JSON | None, new: JSON | None) -> None:
        """Checking mode: compare the replaced object with its JSON when stored; remember the new one's."""
        if old is not None:
            printed = self._prints.pop(id(old), None)
            if printed is not None and orjson.dumps(old) != printed:
                self._changed.append(_describe(old))
        if new is not None:
            self._prints[id(new)] = orjson.dumps(new)

    def _parse_version(self, text: str) -> int:
        if text == "":
            return self._rv
        try:
            rv = int(text)
        except ValueError:
            raise Invalid(f"resourceVersion {text!r} is not a version this store issued") from None
        if not 0 <= rv <= self._rv:
            raise Invalid(f"resourceVersion {text} is not a version this store issued (latest {self._rv})")
        return rv

    def _events_after(self, plural: str, since: int) -> _Events:
        """Walk the resource's history back from the newest event: cost is the number of newer events of that
        resource, not the history's size."""
        compacted = self._compacted_rv[plural]
        if since < compacted:
            raise Gone(f"resourceVersion {since} predates the kept history of {plural} ({compacted}): relist")
        events: _Events = []
        for event in reversed(self._history[plural]):
            if event.rv <= since:
                break
            events.append(event)
        events.reverse()
        return events

    def _stream(
        self, plural: str, since: int, timeout: float, shared: bool, selector: LabelSelector | None
    ) -> Iterator[WatchEvent]:
        with self._cond:
            events = self._events_after(plural, since)
            if not events and timeout > 0:
                self._cond.wait_for(lambda: bool(self._events_after(plural, since)), timeout)
                events = self._events_after(plural, since)
        typed = [(event, event.type) for event in events]
        if selector is not None:
            typed = [(event, kind) for event in events if (kind := _seen_as(event, selector)) is not None]
        objects = [event.object for event, _ in typed]
        if not shared:
            objects = rules.copy_out(objects)
        for (_, kind), obj in zip(typed, objects, strict=True):
            yield WatchEvent(kind, obj)


def _seen_as(event: _Event, selector: LabelSelector) -> EventType | None:
    """The event's type for a watch with `selector` (None: not sent), as the API server's watch cache decides it."""
    now = selector.matches(labels_of(event.object))
    if event.type != "MODIFIED":
        return event.type if now else None
    before = event.labels_before is not None and selector.matches(event.labels_before)
    if now:
        return "MODIFIED" if before else "ADDED"
    return "DELETED" if before else None


def _resource_of(doc: JSON) -> Resource:
    """The resource of an object from its kind and apiVersion (none given: the kind's first served one)."""
    res = resource_for(doc.get("kind"), doc.get("apiVersion"))
    doc.setdefault("apiVersion", res.api_version)
    return res


def _key(res: Resource, name: str, namespace: str) -> Key:
    if not res.namespaced:
        return ("", name)
    if not namespace:
        raise Invalid(f"{res.plural} are namespaced: give a namespace for {name!r}")
    return (namespace, name)


def _by_key(item: tuple[Key, JSON]) -> Key:
    return item[0]


def _show(key: Key) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def _describe(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    key = (meta.get("namespace", ""), meta.get("name", ""))
    return (
        f"{obj.get('kind')} {_show(key)} (resourceVersion {meta.get('resourceVersion')}) was changed by a reader "
        "after the store handed it out shared"
    )


if TYPE_CHECKING:  # the checker rejects MemoryStore the day it drifts from the interface
    _IS_A_CLUSTER_STORE: Callable[[Clock], ClusterStore] = MemoryStore
