"""What a grouper is given and what it returns.

A grouper sees the pod and its owner chain as unstructured Kubernetes JSON (`Obj`), exactly as the store
serves them, so the CRDs of Kubeflow, Ray, JobSet… need not be installed (or typed here) unless they are used.
It returns a `Grouping`: the PodGroup the workload should have and the subgroup the pod joins.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError
from kai_scheduler.api.fields import JSON, Reader, parse_time
from kai_scheduler.api.meta import OwnerReference
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.podgrouper.type_defaults import TypeDefaults

GroupKind = tuple[str, str]  # (API group, Kind); "" is the core group
T = TypeVar("T")

# Default priority class per top-owner kind (BEHAVIOR.md §2); every other kind gets `train`.
DEFAULT_PRIORITY_CLASSES: Mapping[GroupKind, str] = {
    ("apps", "Deployment"): constants.PRIORITY_CLASS_INFERENCE,
    ("serving.knative.dev", "Service"): constants.PRIORITY_CLASS_INFERENCE,
    ("kubeflow.org", "Notebook"): constants.PRIORITY_CLASS_BUILD,
}


class GroupingError(UserError):
    """An owner object the grouper cannot read (a missing or malformed field); the pod is skipped.

    `awaited`: the object (plural, namespace, name) whose appearance or change may make the pod groupable (a
    Grove pod's PodGang, malformed or not there yet): the pod is looked at again when it appears or changes,
    without waiting for the pod itself to change."""

    awaited: tuple[str, str, str] | None = None


class NotReady(GroupingError):
    """An object the pod's grouping needs is not there yet (or does not name the pod yet): the pod is left
    ungrouped, rather than put in a gang guessed without it, and looked at again when that object, `plural`
    `namespace/name`, appears or changes (or the pod changes)."""

    def __init__(self, message: str, plural: str, namespace: str, name: str) -> None:
        super().__init__(message)
        self.awaited = (plural, namespace, name)


@dataclass(frozen=True, slots=True)
class Config:
    """The podgrouper's settings (KAI's `global` and `podGrouper` configuration)."""

    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    queue_label_key: str = constants.DEFAULT_QUEUE_LABEL_KEY
    node_pool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    default_queue: str = constants.DEFAULT_QUEUE_NAME
    # KAI's defaults ConfigMap (--default-priorities-configmap-namespace and -name; "" = none): a priority class
    # and preemptibility per workload kind (`type_defaults`), read through `Lookup.type_defaults`.
    defaults_configmap_namespace: str = ""
    defaults_configmap_name: str = ""
    # Knative: one PodGroup per Revision with minMember = min-scale (True, KAI's default), or one per pod (False).
    knative_gang_schedule: bool = True
    # Migration (not KAI's): group pods written for these schedulers ("volcano", "yunikorn") by their markers,
    # with their queue names mapped by `queue_map` (a name not in it is used as a Queue name).
    migrate_from: frozenset[str] = frozenset()
    queue_map: Mapping[str, str] = field(default_factory=dict)
    # KAI's selective monitoring (--pod-label-selector, --namespace-label-selector): only the pods carrying every
    # label of the first, in namespaces carrying every label of the second, are grouped (empty: all).
    pod_label_selector: Mapping[str, str] = field(default_factory=dict)
    namespace_label_selector: Mapping[str, str] = field(default_factory=dict)

    def default_priority_class(self, kind: GroupKind) -> str:
        return DEFAULT_PRIORITY_CLASSES.get(kind, constants.PRIORITY_CLASS_TRAIN)


class Lookup(Protocol):
    """Cluster reads a grouper may need beyond the owner chain."""

    def priority_class_exists(self, name: str) -> bool: ...

    def podgroup_exists(self, namespace: str, name: str) -> bool:
        """Whether the PodGroup is in the grouper's watched copy (as KAI's cached client reads it)."""
        ...

    def podgroup(self, namespace: str, name: str) -> JSON | None:
        """The PodGroup from the grouper's watched copy (None: not there)."""
        ...

    def pods(self, namespace: str, labels: Mapping[str, str]) -> list[JSON]:
        """Pods of `namespace` carrying all of `labels`."""
        ...

    def read(self, plural: str, namespace: str, name: str) -> JSON | None:
        """An object of a served kind by name (None: absent, or the kind is not installed)."""
        ...

    def type_defaults(self) -> TypeDefaults:
        """The defaults ConfigMap's priority class and preemptibility per workload kind (none configured: empty),
        read once per reconcile."""
        ...

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once per reconcile for `key`: what a grouper reads of an object many pods share (a
        PodGang), so that grouping its n pods does not read it n times. The key names the object's version."""
        ...


@dataclass(frozen=True, slots=True)
class Obj:
    """One object of the chain (the pod or an owner) read unstructured. `partial`: only what an owner
    reference says is known (the store does not serve the kind, or the object is gone)."""

    raw: JSON
    partial: bool = False

    @classmethod
    def from_reference(cls, ref: JSON, namespace: str) -> Obj:
        meta = {"name": ref.get("name", ""), "namespace": namespace, "uid": ref.get("uid", "")}
        return cls({"apiVersion": ref.get("apiVersion", ""), "kind": ref.get("kind", ""), "metadata": meta}, True)

    @property
    def meta(self) -> JSON:
        meta = self.raw.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def api_version(self) -> str:
        return str(self.raw.get("apiVersion") or "")

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind") or "")

    @property
    def group_kind(self) -> GroupKind:
        group = self.api_version.rpartition("/")[0]
        return group, self.kind

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace") or "")

    @property
    def uid(self) -> str:
        return str(self.meta.get("uid") or "")

    @property
    def created(self) -> float | None:
        """metadata.creationTimestamp in POSIX seconds (None if absent or unreadable)."""
        stamp = self.meta.get("creationTimestamp")
        try:
            return parse_time(stamp) if isinstance(stamp, str) else None
        except ValueError:
            return None

    @property
    def labels(self) -> dict[str, str]:
        return _strings(self.meta.get("labels"))

    @property
    def annotations(self) -> dict[str, str]:
        return _strings(self.meta.get("annotations"))

    def reader(self) -> Reader:
        return Reader(self.raw, self.kind or "object")

    def reference(self) -> OwnerReference:
        return OwnerReference(self.api_version, self.kind, self.name, self.uid)

    def get(self, path: str, default: Any = None) -> Any:
        """The field at `path` (`default` if absent); a field on the way of the wrong type is a GroupingError
        naming it (the pod is skipped and told, as for any owner field the grouper cannot read)."""
        try:
            return self.reader().get(path, default)
        except ValueError as err:
            raise GroupingError(str(err)) from None


@dataclass(frozen=True, slots=True)
class Context:
    """The pod and its owner chain: `chain[0]` is the pod, `chain[-1]` the top owner (the pod if it has none).
    The owners cut off above the chain (`below_top`): `skipped`, the outermost first, and `cut`, from the pod up."""

    chain: tuple[Obj, ...]
    config: Config
    lookup: Lookup
    skipped: tuple[Obj, ...] = ()
    cut: tuple[Obj, ...] = ()

    @property
    def pod(self) -> Obj:
        return self.chain[0]

    @property
    def top(self) -> Obj:
        return self.chain[-1]

    def below_top(self, *, skip: bool = False) -> Context:
        """The same pod with its top owner cut off: CronJob → its Job, or with `skip` a "skip top owner" kind."""
        top, rest = self.chain[-1], self.chain[:-1]
        if skip:
            return Context(rest, self.config, self.lookup, (*self.skipped, top), self.cut)
        return Context(rest, self.config, self.lookup, self.skipped, (top, *self.cut))

    def defaulting_owners(self) -> tuple[Obj, ...]:
        """Whose kind's defaults (`Lookup.type_defaults`) apply, in turn, as KAI's grouper takes them: the skipped
        top owners first (KAI writes their defaults into their child's labels), then the owners from the pod up;
        a pod with no owner is its own."""
        return (*self.skipped, *(self.chain[1:] or (self.pod,)), *self.cut)

    def find(self, group: str, kind: str) -> Obj | None:
        """The nearest owner (not the pod) of that group and kind."""
        return next((o for o in self.chain[1:] if o.group_kind == (group, kind)), None)


@dataclass(slots=True)
class Grouping:
    """The PodGroup a pod's workload should have, the leaf subgroup the pod joins ("" = none), and the
    owner fields that could not be used (each skipped with its documented default)."""

    podgroup: PodGroup
    subgroup: str = ""
    warnings: list[str] = field(default_factory=list)


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


# Replica counts, sizes and indexes are int32 in Kubernetes (and a PodGroup's minMember with them).
INT32_MAX = 2**31 - 1
# Subgroups one PodGroup may get (a leaf per JobSet replica, per segment): a workload past this is a typo of a
# count (replicas: 2000000000), and its PodGroup would be too large for the API server to store.
MAX_SUBGROUPS = 4096


def check_subgroups(where: str, count: int) -> None:
    """GroupingError, naming the owner field at `where`, when a workload would get more than MAX_SUBGROUPS."""
    if count > MAX_SUBGROUPS:
        raise GroupingError(f"{where}: makes {count} subgroups; a PodGroup has at most {MAX_SUBGROUPS}")


def read_int(obj: Obj, path: str, default: int | None = None, *, minimum: int = 0) -> int | None:
    """An integer field of an owner, at least `minimum` and at most INT32_MAX; GroupingError names the object and
    the field."""
    try:
        value = obj.reader().int(path, default)
    except ValueError as err:
        raise GroupingError(str(err)) from None
    if value is not None and value < minimum:
        raise GroupingError(f"{obj.kind} {obj.namespace}/{obj.name} {path}: must be at least {minimum}, got {value}")
    if value is not None and value > INT32_MAX:
        raise GroupingError(f"{obj.kind} {obj.namespace}/{obj.name} {path}: must be at most {INT32_MAX}, got {value:g}")
    return value


def read_map(obj: Obj, path: str) -> dict[str, Any]:
    try:
        return obj.reader().map(path)
    except ValueError as err:
        raise GroupingError(str(err)) from None


def read_list(obj: Obj, path: str) -> list[Any]:
    try:
        return obj.reader().list(path)
    except ValueError as err:
        raise GroupingError(str(err)) from None


def _short(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def annotation_int(
    annotations: Mapping[str, str], key: str, where: str, warnings: list[str], *, minimum: int = 0
) -> int | None:
    """An integer annotation (at least `minimum`); a bad value is a warning and None (the default applies)."""
    raw = annotations.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or not minimum <= value <= INT32_MAX:
        warnings.append(
            f"{where} annotation {key}: want an integer from {minimum} to {INT32_MAX}, got {_short(raw)}; ignored"
        )
        return None
    return value


def template_annotations(spec: Any) -> dict[str, str]:
    """The annotations of `spec.template.metadata` (a replica spec, a replicated job, a worker template)."""
    template = spec.get("template") if isinstance(spec, dict) else None
    return metadata_strings(template, "annotations")


def metadata_strings(obj: Any, key: str) -> dict[str, str]:
    """`obj.metadata.<key>` (labels or annotations) of a nested object, strings only."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return _strings(meta.get(key) if isinstance(meta, dict) else None)
