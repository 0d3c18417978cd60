"""`KubeStore`: the `ClusterStore` interface over HTTP to a real kube-apiserver.

Objects cross the interface as the API server serves them (dicts decoded with orjson), with two
normalisations that the dynamic client also makes: list items get their `apiVersion` and `kind` back (the
server leaves them out of list items), and `metadata.managedFields` are dropped (kube-scheduler's informers
strip them too; they are large and nothing here reads them).

- `KubeStore.connect(kubeconfig, context)` configures itself as kubectl or client-go would (a kubeconfig
  file and context, else the in-cluster service account; see `kube_http.config.load_client`).
- Paths come from `RESOURCES`: core v1 under `/api/v1`, groups under `/apis/{group}/{version}`, with
  `/namespaces/{ns}` for namespaced kinds. A namespaced object without a namespace goes to `default`.
- `list` pages with `limit` and `continue`; every page of one list shares the first page's resource
  version. An expired continue token (410) restarts the list, a bounded number of times.
- `watch` keeps long-running watch requests open in background threads (see `kube_watch`); `""` means
  "from now", resolved with a one-item LIST.
- Writes: create (POST), update (PUT), update_status (PUT …/status), patch (merge patch), delete
  (DeleteOptions with gracePeriodSeconds), bind (`pods/binding`), evict (`pods/eviction`, policy/v1).
- A stale resourceVersion or a second bind is Conflict (409). An eviction that a PodDisruptionBudget
  blocks is `EvictionBlocked`, a Conflict: the pod stays and the caller may try later; it is not retried.
- `cancel()` cuts every request in flight and refuses new ones (until `resume()`); `close()` does it too, so
  neither a stopping process nor its watch readers wait for an API server that does not answer.
- Every request goes through one rate limiter (qps/burst as KAI's flags; event creation through a second one
  of the same size, as client-go's event broadcaster) and 429s are retried honouring
  Retry-After (see `kube_http.retry`); a server that cannot be reached raises `Unavailable`.

Differences from `MemoryStore` that a component can see: timestamps and uids come from the server (a real
server overwrites a given uid and creationTimestamp on create), and a real server does not check that a
binding's node exists. Writes are not visible to a watch at once: their events arrive over the network.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from kubernetes.client import ApiClient

from kai_scheduler.api.selectors import LabelSelector
from kai_scheduler.store import collector
from kai_scheduler.store.activity import Activity
from kai_scheduler.store.interface import (
    JSON,
    RESOURCES,
    ClusterStore,
    Conflict,
    Gone,
    Invalid,
    Resource,
    Selector,
    StoreError,
    WatchEvent,
    resource_for,
    resource_named,
)
from kai_scheduler.store.kube_http.body import MERGE_PATCH_TYPE, STRATEGIC_MERGE_PATCH_TYPE
from kai_scheduler.store.kube_http.cancellation import Cancellation
from kai_scheduler.store.kube_http.config import load_client
from kai_scheduler.store.kube_http.connection import Connections
from kai_scheduler.store.kube_http.errors import Cancelled, ConfigurationError, Throttled, Unavailable
from kai_scheduler.store.kube_http.rate_limit import RateLimiter
from kai_scheduler.store.kube_http.reachability import Reachability
from kai_scheduler.store.kube_http.timing import RealTiming, Timing
from kai_scheduler.store.kube_http.transport import Limits, Transport
from kai_scheduler.store.kube_watch import WatchSettings, WatchStream

_StreamList = list[WatchStream]  # spelt here: inside KubeStore, `list` is the method
_Items = list[JSON]
_Query = list[tuple[str, str]]

__all__ = [
    "Cancelled",
    "ConfigurationError",
    "EvictionBlocked",
    "KubeOptions",
    "KubeStore",
    "Throttled",
    "Unavailable",
    "load_client",
]

log = logging.getLogger(__name__)

_LIST_RESTARTS: Final = 3
# The characters `quote` never encodes (RFC 3986's unreserved), a whole string of them.
_UNRESERVED: Final = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch
CLOSE_TIMEOUT: Final = 1.0  # seconds `close` waits for the watch readers to end once their connections are cut


class EvictionBlocked(Conflict):
    """The Eviction API refused: evicting the pod would violate a PodDisruptionBudget (HTTP 429).

    A Conflict, so callers that handle "the cluster changed under me" handle it; the pod keeps running."""

    reason = "TooManyRequests"


@dataclass(frozen=True, slots=True)
class KubeOptions:
    """Client settings; the defaults are KAI's flags (§9.3: qps 50, burst 300) and client-go's habits."""

    qps: float = 50.0  # requests per second once the burst is spent; <= 0: no limit
    burst: int = 300
    max_retries: int = 5  # retries of a 429 (or a 5xx with Retry-After) before Throttled
    max_retry_after: float = 30.0  # a longer Retry-After is shortened to this
    connect_timeout: float = 10.0
    read_timeout: float = 60.0  # per read of a non-watch answer
    page_size: int = 500  # LIST limit per page, as client-go's pager
    default_namespace: str = "default"
    watch_timeout_seconds: int = 300  # the server ends a watch request after this; the stream reconnects
    watch_read_margin: float = 30.0
    watch_settle: float = 0.5  # a fresh watch waits up to this long for the server to answer
    watch_backoff_initial: float = 0.5
    watch_backoff_max: float = 30.0
    watch_streams_per_resource: int = 4
    watch_max_buffered: int = 200_000
    strip_managed_fields: bool = True
    user_agent: str = "kai-scheduler"


class KubeStore:
    """A `ClusterStore` backed by a kube-apiserver; thread-safe. Close it to stop its watch threads."""

    def __init__(
        self, api_client: ApiClient, options: KubeOptions | None = None, *, timing: Timing | None = None
    ) -> None:
        self.options = options or KubeOptions()
        opts = self.options
        timing = timing or RealTiming()
        api_client.user_agent = opts.user_agent
        limits = Limits(opts.max_retries, opts.max_retry_after, opts.connect_timeout, opts.read_timeout)
        self.cancellation = Cancellation()  # shared by both transports: `cancel` cuts every request in flight
        interrupt = self.cancellation.cancelled
        self.limiter = RateLimiter(opts.qps, opts.burst, timing, interrupt)
        # Shared too: one line when the server stops answering and one when it answers again, for the process.
        self.reachability = Reachability(timing)
        connections = Connections(api_client, self.cancellation)  # one pool for both transports
        self.transport = Transport(
            api_client, self.limiter, timing, limits, self.cancellation, self.reachability, connections=connections
        )
        self.requests = self.transport.requests  # rest_client_* of both transports (docs/components.md)
        # Events go out under a limiter of their own, as client-go's event broadcaster has its own client: a
        # burst of events never delays a bind or an eviction.
        self.event_transport = Transport(
            api_client,
            RateLimiter(opts.qps, opts.burst, timing, interrupt),
            timing,
            limits,
            self.cancellation,
            self.reachability,
            self.requests,
            connections,
        )
        self._watch_settings = WatchSettings(
            opts.watch_timeout_seconds,
            opts.watch_read_margin,
            opts.watch_backoff_initial,
            opts.watch_backoff_max,
            opts.watch_max_buffered,
            opts.strip_managed_fields,
        )
        self.activity = Activity()  # watch events received, for loops that run on change
        self._lock = threading.Lock()
        self._streams: dict[str, _StreamList] = {}  # by resource, least recently used first
        # Streams a caller is taking from: another caller at the same version gets a stream of its own, else one
        # would take the events the other was waiting for and move the position past them.
        self._taking: set[WatchStream] = set()
        self._closed = False

    @classmethod
    def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, options: KubeOptions | None = None
    ) -> KubeStore:
        """A store for the cluster a kubeconfig (or the in-cluster service account) names; see `load_client`."""
        return cls(load_client(kubeconfig, context), options)

    def cancel(self) -> int:
        """Cut every request in flight (each fails at once with Unavailable) and refuse new ones until `resume`;
        the number of connections cut. For a process that stops while the API server does not answer."""
        return self.cancellation.cancel()

    def resume(self) -> None:
        """Take requests again after `cancel`."""
        self.cancellation.resume()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Stop every watch stream, cut what is still in flight and release the connection pool, within about
        `timeout` seconds whatever the API server does (a reader that has not ended by then is left to end on
        its own: the threads are daemons). Closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = [s for group in self._streams.values() for s in group]
            self._streams.clear()
        deadline = time.monotonic() + timeout
        for stream in streams:
            stream.close()
        self.cancellation.cancel()  # a watch still waiting for its answer, and any other request in flight
        for stream in streams:
            stream.join(timeout=max(0.0, deadline - time.monotonic()))
        self.transport.close()
        limiter = self.limiter
        if limiter.qps > 0 and limiter.requests:
            log.info(
                f"client rate limiter: {limiter.waited:.1f} s waited by {limiter.waits} of {limiter.requests} requests",
                extra={
                    "requests": limiter.requests,
                    "waits": limiter.waits,
                    "waited_seconds": round(limiter.waited, 3),
                },
            )

    def __enter__(self) -> KubeStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- reads ---

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        res = resource_named(resource)
        path = object_path(res, name, namespace)
        return self._clean(self.transport.call("GET", path, what=describe("get", res, name, namespace)))

    def list(
        self, resource: str, namespace: str | None = None, selector: Selector = None, *, cached: bool = False
    ) -> tuple[list[JSON], str]:
        """All matching objects, fetched in pages of `page_size`, and the version to watch from.

        `cached`: `resourceVersion=0`, which the API server answers from its watch cache, as client-go's reflector
        lists first: it costs the server far less than pages read from etcd (bench/README.md, "LIST from the watch
        cache"). v1.32 sends it whole, ignoring the page size; a server that pages it gets its continue tokens
        alone, as the API asks."""
        res = resource_named(resource)
        query = [("limit", str(self.options.page_size))]
        if cached:
            query.append(("resourceVersion", "0"))
        selector_text = selector_string(selector)
        if selector_text:
            query.append(("labelSelector", selector_text))
        path = collection_path(res, namespace or None)
        what = describe("list", res, "", namespace or "")
        for attempt in range(_LIST_RESTARTS + 1):
            try:
                items, version = self._list_pages(res, path, query, what)
            except Gone:
                if attempt == _LIST_RESTARTS:
                    raise
                continue  # the continue token expired between pages: start over
            return items, version
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _list_pages(self, res: Resource, path: str, query: _Query, what: str) -> tuple[_Items, str]:
        items: _Items = []
        version = ""
        token = ""
        with collector.paused():
            while True:
                page = self.transport.call("GET", path, query=_next_page(query, token) if token else query, what=what)
                meta = page.get("metadata") or {}
                version = version or str(meta.get("resourceVersion") or "")
                items.extend(page.get("items") or ())
                token = str(meta.get("continue") or "")
                if not token:
                    break
            for item in items:
                self._clean(item, res)
        return items, version

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None
    ) -> Iterator[WatchEvent]:
        """Events after `resource_version` ("" = from now), from a long-running watch (see `kube_watch`); with a
        label `selector`, the server's watch of the matching objects (a stream of its own).

        Waits up to `timeout` seconds for the first event; a fresh stream also waits (up to `watch_settle`)
        for the server's answer and its backlog. Raises Gone (at the call) when the server no longer has
        that version."""
        res = resource_named(resource)
        if resource_version == "":
            resource_version = self._current_version(res)
        selector_text = selector_string(selector)
        stream = self._stream(res, resource_version, selector_text)
        try:
            events = stream.take(timeout, self.options.watch_settle)
        except StoreError:
            self._forget(_stream_key(res.plural, selector_text), stream)
            raise
        finally:
            with self._lock:
                self._taking.discard(stream)
        return iter(events)

    def _current_version(self, res: Resource) -> str:
        page = self.transport.call(
            "GET", collection_path(res, None), query=[("limit", "1")], what=describe("list", res)
        )
        return str((page.get("metadata") or {}).get("resourceVersion") or "0")

    def _stream(self, res: Resource, version: str, selector: str) -> WatchStream:
        """The open stream at `version` (of `selector`) no other caller is taking from, or a new one (closing the
        least recently used beyond the cap); the caller's until `watch` lets it go."""
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            group = self._streams.setdefault(_stream_key(res.plural, selector), [])
            for stream in group:
                if stream.position == version and stream not in self._taking:
                    group.remove(stream)
                    group.append(stream)
                    self._taking.add(stream)
                    return stream
            stream = WatchStream(
                self.transport,
                collection_path(res, None),
                version,
                self._watch_settings,
                what=describe("watch", res) + (f" {selector}" if selector else ""),
                on_event=functools.partial(self.activity.note, res.plural),
                selector=selector,
            )
            group.append(stream)
            self._taking.add(stream)
            keep = self.options.watch_streams_per_resource
            evicted = group[:-keep]
            del group[:-keep]
        for old in evicted:
            old.close()
        return stream

    def _forget(self, plural: str, stream: WatchStream) -> None:
        with self._lock:
            group = self._streams.get(plural)
            if group is not None and stream in group:
                group.remove(stream)
        stream.close()

    # --- writes ---

    def create(self, obj: JSON) -> JSON:
        res, meta = _identify(obj)
        namespace = self._namespace(res, meta)
        body = {**obj, "apiVersion": res.api_version, "kind": res.kind}
        if res.namespaced:
            body["metadata"] = {**meta, "namespace": namespace}
        transport = self.event_transport if res.plural == "events" else self.transport
        name = meta.get("name") or f"{meta.get('generateName') or ''}*"
        what = describe("create", res, str(name), namespace)
        return self._clean(transport.call("POST", collection_path(res, namespace), body=body, what=what))

    def update(self, obj: JSON) -> JSON:
        return self._replace(obj, "")

    def update_status(self, obj: JSON) -> JSON:
        return self._replace(obj, "status")

    def _replace(self, obj: JSON, subresource: str) -> JSON:
        res, meta = _identify(obj)
        name = _name(res, meta)
        namespace = self._namespace(res, meta)
        body = {**obj, "apiVersion": res.api_version, "kind": res.kind}
        if res.namespaced:
            body["metadata"] = {**meta, "namespace": namespace}
        path = object_path(res, name, namespace, subresource)
        what = describe("update", res, name, namespace, subresource)
        return self._clean(self.transport.call("PUT", path, body=body, what=what))

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        """RFC 7386 merge patch (application/merge-patch+json) of the object or of its status, or a strategic
        merge patch (application/strategic-merge-patch+json; built-in kinds only)."""
        res = resource_named(resource)
        if subresource not in ("", "status"):
            raise Invalid(f"unknown subresource {subresource!r}; want '' or 'status'")
        if not isinstance(patch, dict):
            raise Invalid(f"a merge patch must be an object, got {type(patch).__name__}")
        path = object_path(res, name, namespace, subresource)
        kind = STRATEGIC_MERGE_PATCH_TYPE if strategic else MERGE_PATCH_TYPE
        what = describe("patch", res, name, namespace, subresource)
        return self._clean(self.transport.call("PATCH", path, body=patch, content_type=kind, what=what))

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        res = resource_named(resource)
        if grace_period_seconds is not None and grace_period_seconds < 0:
            raise Invalid(f"grace_period_seconds must be at least 0, got {grace_period_seconds}")
        body: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        self.transport.call(
            "DELETE", object_path(res, name, namespace), body=body, what=describe("delete", res, name, namespace)
        )

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        """POST a v1 Binding to `pods/{name}/binding`; Conflict (409) if the pod is already bound, or is not of
        `uid` (the server's "Precondition failed: UID in precondition")."""
        metadata = {"name": pod_name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = object_path(RESOURCES["pods"], pod_name, namespace, "binding")
        self.transport.call(
            "POST",
            path,
            body=body,
            what=f"bind {describe('', RESOURCES['pods'], pod_name, namespace)} to node {node_name}",
        )

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        """POST a policy/v1 Eviction; the pod's own grace period applies. EvictionBlocked if a PDB refuses;
        Conflict (409) if `uid` is given and is not the pod's (its `deleteOptions.preconditions.uid`)."""
        body: JSON = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod_name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        path = object_path(RESOURCES["pods"], pod_name, namespace, "eviction")
        self.transport.call(
            "POST",
            path,
            body=body,
            refusal=_disruption_budget_refusal,
            what=describe("evict", RESOURCES["pods"], pod_name, namespace),
        )

    # --- helpers ---

    def _namespace(self, res: Resource, meta: JSON) -> str:
        if not res.namespaced:
            return ""
        namespace = meta.get("namespace") or self.options.default_namespace
        if not isinstance(namespace, str):
            raise Invalid(f"{res.kind} metadata.namespace must be a string, got {namespace!r}")
        return namespace

    def _clean(self, obj: JSON, res: Resource | None = None) -> JSON:
        """Give a list item its apiVersion and kind back and drop managedFields (see the module docstring)."""
        if res is not None:
            obj.setdefault("apiVersion", res.api_version)
            obj.setdefault("kind", res.kind)
        if self.options.strip_managed_fields:
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                meta.pop("managedFields", None)
        return obj


def _next_page(query: _Query, token: str) -> _Query:
    """The query of the page after `token`: a continue token carries the version, which may not be given again."""
    return [*(item for item in query if item[0] != "resourceVersion"), ("continue", token)]


def _stream_key(plural: str, selector: str) -> str:
    """Where the streams of one resource and selector are kept ("pods", "pods?app=x")."""
    return f"{plural}?{selector}" if selector else plural


def describe(verb: str, res: Resource, name: str = "", namespace: str = "", subresource: str = "") -> str:
    """A request as errors and log lines name it: "patch PodGroup team-a/pg-1 status", "list Pod in team-a",
    "create Queue default-queue", "watch Node"."""
    words = [verb, res.kind] if verb else [res.kind]
    if name:
        words.append(f"{namespace}/{name}" if res.namespaced and namespace else name)
    elif namespace and res.namespaced:
        words.append(f"in {namespace}")
    if subresource:
        words.append(subresource)
    return " ".join(words)


def collection_path(res: Resource, namespace: str | None) -> str:
    """The collection URL path: a namespace's objects, or all (namespace None, or a cluster-scoped kind)."""
    base = "/api/v1" if res.api_version == "v1" else f"/apis/{res.api_version}"
    if res.namespaced and namespace:
        return f"{base}/namespaces/{path_segment(namespace)}/{res.path_name}"
    return f"{base}/{res.path_name}"


def object_path(res: Resource, name: str, namespace: str, subresource: str = "") -> str:
    if not name:
        raise Invalid(f"{res.kind} needs a name")
    if res.namespaced and not namespace:
        raise Invalid(f"{res.plural} are namespaced: give a namespace for {name!r}")
    path = f"{collection_path(res, namespace)}/{path_segment(name)}"
    return f"{path}/{subresource}" if subresource else path


def path_segment(text: str) -> str:
    """`text` percent-encoded as one segment of a path (`quote(text, safe="")`); a Kubernetes name (letters,
    digits, `-` and `.`) is its own encoding, found so by one match instead of `quote`'s encode and scan."""
    return text if _UNRESERVED(text) else quote(text, safe="")


def selector_string(selector: Selector) -> str:
    """A label selector in the query-string form the API server parses ("a=b,c in (x,y),!d")."""
    if selector is None or isinstance(selector, str):
        return (selector or "").strip()
    return _format_selector(selector)


def _format_selector(selector: LabelSelector) -> str:
    parts = [f"{key}={value}" for key, value in selector.match_labels]
    for req in selector.requirements:
        if req.operator == "Exists":
            parts.append(req.key)
        elif req.operator == "DoesNotExist":
            parts.append(f"!{req.key}")
        elif req.operator in ("In", "NotIn"):
            op = "in" if req.operator == "In" else "notin"
            parts.append(f"{req.key} {op} ({','.join(req.values)})")
        else:
            raise Invalid(f"label selectors have no {req.operator!r} operator (key {req.key!r})")
    return ",".join(parts)


def _identify(obj: Any) -> tuple[Resource, JSON]:
    """The resource of an object from its kind (and apiVersion, if given), and its metadata."""
    if not isinstance(obj, dict):
        raise Invalid(f"an object must be a mapping, got {type(obj).__name__}")
    kind = obj.get("kind")
    res = resource_for(kind, obj.get("apiVersion"))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise Invalid(f"{kind} has no metadata")
    return res, meta


def _name(res: Resource, meta: JSON) -> str:
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise Invalid(f"{res.kind} has no metadata.name")
    return name


def _disruption_budget_refusal(status: JSON, what: str) -> StoreError | None:
    """An eviction's 429 that a PodDisruptionBudget caused (a DisruptionBudget cause), not throttling."""
    causes = (status.get("details") or {}).get("causes") or ()
    if any(isinstance(c, dict) and c.get("type") == "DisruptionBudget" for c in causes):
        message = status.get("message") or "the pod's disruption budget does not allow the eviction"
        details = "; ".join(str(c.get("message")) for c in causes if isinstance(c, dict) and c.get("message"))
        err = EvictionBlocked(f"{what}: {message} {details}".strip())
        err.code = 429
        return err
    return None


if TYPE_CHECKING:  # the checker rejects KubeStore the day it drifts from the interface
    _IS_A_CLUSTER_STORE: Callable[[ApiClient], ClusterStore] = KubeStore
