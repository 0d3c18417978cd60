"""The `ClusterStore` interface: what every component may ask of a cluster, real or in memory.

Objects cross this boundary as Kubernetes JSON (dicts), exactly as the API server serves them; typed parsing
happens above (once per resource version). Resource kinds are named by their plural resource name
("pods", "podgroups"…), see `RESOURCES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kai_scheduler.api.kinds import GVK_TO_PLURAL as GVK_TO_PLURAL
from kai_scheduler.api.kinds import KIND_TO_PLURAL as KIND_TO_PLURAL
from kai_scheduler.api.kinds import RESOURCES as RESOURCES
from kai_scheduler.api.kinds import Resource as Resource
from kai_scheduler.api.selectors import LabelSelector

JSON = dict[str, Any]


# Lists that a strategic merge patch merges by key instead of replacing (the `patchMergeKey`s of the
# Kubernetes core types this project writes), by field name.
STRATEGIC_MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ownerReferences": "uid",
    "tolerations": "key",
    "imagePullSecrets": "name",
}


class StoreError(Exception):
    """Base of the store's errors; `reason` is the Kubernetes Status reason.

    The message names the request and its object ("patch PodGroup team-a/pg-1 status: …"). From an API server
    the error also keeps the HTTP `code`, the `causes` of a 422 as (field, message) pairs, and `retry_after`
    (the Retry-After header, if any); elsewhere they stay at their defaults."""

    reason = "InternalError"
    code: int = 0
    causes: Sequence[tuple[str, str]] = ()
    retry_after: str | None = None


class Cancelled(StoreError):
    """The request was cut, or refused before it went out, because its store was cancelled: the process is
    stopping and says so once itself (see `KubeStore.cancel`); whoever sees this logs it at debug level."""

    reason = "ServiceUnavailable"


class NotFound(StoreError):
    reason = "NotFound"


class AlreadyExists(StoreError):
    reason = "AlreadyExists"


class Conflict(StoreError):
    """An update carried a stale resourceVersion, or a pod is already bound."""

    reason = "Conflict"


class Gone(StoreError):
    """A watch asked for a resource version older than the store keeps: relist."""

    reason = "Gone"


class Invalid(StoreError):
    reason = "Invalid"


def replaced(err: StoreError) -> bool:
    """Whether `err` refused a write because its object is not the one the writer named by uid: it was deleted
    and made again under its name. The API server says so as a 422 with a `metadata.uid` cause (a patch naming
    the old uid) or as a 409 whose message names the uid precondition (a binding, an eviction, an update)."""
    if isinstance(err, Invalid):
        return any(field == "metadata.uid" for field, _ in err.causes)
    return isinstance(err, Conflict) and "uid in" in str(err).lower() and "precondition" in str(err).lower()


def may_have_been_done(err: StoreError) -> bool:
    """Whether the write that raised `err` may have been carried out all the same: no answer came (the connection
    broke once the request was out, a timeout, a cut) or the server failed (5xx) when it may have committed it.
    An answer that refuses the write (NotFound, AlreadyExists, Conflict, Invalid, any other 4xx) says it was not."""
    if isinstance(err, (NotFound, AlreadyExists, Conflict, Gone, Invalid)):
        return False
    return err.code == 0 or err.code >= 500


# The check a store runs just before a request's bytes go out, in the thread that makes the request (a refusal
# raises): a write may wait for a connection after its caller last looked (`checked_when_sent`).
_SEND_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("send_check", default=None)


class checked_when_sent:  # a context manager called as a function, so named as one
    """Within this block a store that sends over a network runs `check` right before each request goes out (each
    attempt), so a condition the caller checked first (its leadership) still holds when the bytes are sent.

    A class, not a `contextmanager` generator: every fenced write enters one, and the generator's wrapper costs
    several times the two calls here."""

    __slots__ = ("_check", "_token")

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check

    def __enter__(self) -> None:
        self._token = _SEND_CHECK.set(self._check)

    def __exit__(self, *_exc: object) -> None:
        _SEND_CHECK.reset(self._token)


def check_before_sending() -> None:
    """Run the check of the enclosing `checked_when_sent`, if any."""
    check = _SEND_CHECK.get()
    if check is not None:
        check()


def resource_named(plural: str) -> Resource:
    """The resource of a `RESOURCES` key; Invalid, listing what is served, for any other name."""
    try:
        return RESOURCES[plural]
    except KeyError:
        served = ", ".join(sorted(RESOURCES))
        raise Invalid(f"unknown resource {plural!r}; the store serves {served}") from None


def resource_for(kind: Any, api_version: Any = None) -> Resource:
    """The resource serving `kind` at `api_version` (none given: the kind's first listed one); Invalid if none."""
    if not isinstance(kind, str) or kind not in KIND_TO_PLURAL:
        raise Invalid(f"unknown kind {kind!r}; the store serves {', '.join(sorted(KIND_TO_PLURAL))}")
    if not api_version:
        return RESOURCES[KIND_TO_PLURAL[kind]]
    plural = GVK_TO_PLURAL.get((api_version, kind)) if isinstance(api_version, str) else None
    if plural is None:
        served = ", ".join(r.api_version for r in RESOURCES.values() if r.kind == kind)
        raise Invalid(f"{kind} apiVersion {api_version!r} is not served; want {served}")
    return RESOURCES[plural]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: JSON


Selector = LabelSelector | str | None


class ClusterStore(Protocol):
    """One interface, two implementations: `store.memory.MemoryStore` and the API-server store."""

    def get(self, resource: str, name: str, namespace: str = "") -> JSON:
        """The object, or NotFound."""
        ...

    def list(
        self, resource: str, namespace: str | None = None, selector: Selector = None, *, cached: bool = False
    ) -> tuple[list[JSON], str]:
        """All matching objects (namespace None = all) and the resource version to watch from.

        `cached=True` lets the store answer from what it keeps in memory, at a version that may be behind its
        latest write (the API server's watch cache: client-go's reflector lists so the first time); a watch from
        the returned version brings what came after. Without it the answer holds every write made before it."""
        ...

    def watch(
        self, resource: str, resource_version: str, timeout: float = 0.0, selector: Selector = None
    ) -> Iterator[WatchEvent]:
        """Events after `resource_version`, in order; waits up to `timeout` seconds for the first one.

        With a label `selector`, the events of the matching objects only, as the API server sends them: an object
        that comes to match arrives as ADDED, one that stops matching as DELETED (with its new labels).
        Raises Gone when the version is older than the store's history (the caller relists)."""
        ...

    def create(self, obj: JSON) -> JSON:
        """Store a new object (AlreadyExists if it does); return it with uid, resourceVersion, creationTimestamp."""
        ...

    def update(self, obj: JSON) -> JSON:
        """Replace an object; Conflict if its metadata.resourceVersion is not the stored one."""
        ...

    def update_status(self, obj: JSON) -> JSON:
        """Replace only `status` (the status subresource); Conflict on a stale resourceVersion."""
        ...

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        """JSON merge patch (RFC 7386) of the object, or of its status when subresource="status".

        `strategic`: a strategic merge patch (built-in kinds only): lists with a merge key (pod and node
        conditions by type, containers by name, …; see `STRATEGIC_MERGE_KEYS`) are merged item by item,
        where a merge patch would replace the whole list.

        A `metadata.resourceVersion` in the patch is a precondition (Conflict if stale), and so is a
        `metadata.uid`: Invalid if it is not the object's ("field is immutable", the object was deleted and made
        again under its name; see `replaced`), except in a custom resource's status patch, where the API server
        ignores it."""
        ...

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        """Delete; a pod with a grace period > 0 only gets a deletionTimestamp (it is Releasing) until it ends."""
        ...

    def bind(self, namespace: str, pod_name: str, node_name: str, uid: str = "") -> None:
        """The `pods/binding` subresource: set spec.nodeName; Conflict if the pod is already bound, or if `uid` is
        given and is not the pod's (the pod was deleted and made again under its name): the Binding's
        `metadata.uid`, a precondition the API server checks."""
        ...

    def evict(self, namespace: str, pod_name: str, uid: str = "") -> None:
        """The Eviction API: delete the pod with its default grace period; Conflict if `uid` is given and is not
        the pod's (the eviction's `deleteOptions.preconditions.uid`, which the API server checks)."""
        ...
