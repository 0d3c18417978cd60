"""Queue (`scheduling.run.ai/v2`): quota, over-quota weight and limit per resource, priority, parent (§1.1).

Access control (this project's extension, off unless the scheduler and admission are told to check it):
`spec.allowedNamespaces` lists the namespaces that may submit to the queue and `spec.allowedNamespaceSelector`
selects them by label; a namespace passes when either admits it. A queue that sets neither admits every
namespace, as KAI's queues do.

Units as in KAI: GPU in devices, CPU in millicores, memory in megabytes (10^6 bytes). `-1` is unlimited for
quota and limit; an omitted limit is 0 (nothing allowed), an omitted weight is 0 (no over-quota share).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, duration
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.selectors import LabelSelector, parse_label_selector

QUEUE_RESOURCES = ("gpu", "cpu", "memory")
_NOT_IN_NAME = re.compile(r"[^a-z0-9-]+")
UNLIMITED = -1.0


@dataclass(frozen=True, slots=True)
class QueueResource:
    quota: float = 0.0
    over_quota_weight: float = 0.0
    limit: float = 0.0

    def to_dict(self) -> JSON:
        return {"quota": self.quota, "overQuotaWeight": self.over_quota_weight, "limit": self.limit}


@dataclass(frozen=True, slots=True)
class QueueAccess:
    """Which namespaces may submit to a queue; `restricted` False (neither field set) admits all."""

    namespaces: tuple[str, ...] = ()
    selector: LabelSelector | None = None

    @property
    def restricted(self) -> bool:
        return bool(self.namespaces) or self.selector is not None

    @property
    def needs_labels(self) -> bool:
        return self.selector is not None

    def admits(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """Whether `namespace` (with its `labels`; None = unknown, the selector then admits nothing) may submit."""
        if not self.restricted or namespace in self.namespaces:
            return True
        return self.selector is not None and labels is not None and self.selector.matches(labels)

    def describe(self) -> str:
        """What the queue admits, for messages."""
        parts = []
        if self.namespaces:
            parts.append(f"spec.allowedNamespaces: {', '.join(self.namespaces)}")
        if self.selector is not None:
            parts.append("spec.allowedNamespaceSelector")
        return "; ".join(parts)

    def to_spec(self) -> JSON:
        out: dict[str, Any] = {}
        if self.namespaces:
            out["allowedNamespaces"] = list(self.namespaces)
        if self.selector is not None:
            sel: dict[str, Any] = {}
            if self.selector.match_labels:
                sel["matchLabels"] = dict(self.selector.match_labels)
            if self.selector.requirements:
                sel["matchExpressions"] = [
                    {"key": q.key, "operator": q.operator, **({"values": list(q.values)} if q.values else {})}
                    for q in self.selector.requirements
                ]
            out["allowedNamespaceSelector"] = sel
        return out


def read_access(r: Reader) -> QueueAccess:
    names = r.list("spec.allowedNamespaces")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise r.error(f"spec.allowedNamespaces[{i}]", f"expected a namespace name, got {name!r}")
    raw = r.get("spec.allowedNamespaceSelector")
    selector = None
    if raw is not None:
        selector = parse_label_selector(raw, "Queue", r.name, "spec.allowedNamespaceSelector")
    return QueueAccess(tuple(names), selector)


@dataclass(slots=True, kw_only=True)
class Queue:
    meta: ObjectMeta
    display_name: str = ""
    parent_queue: str = ""
    priority: int = constants.DEFAULT_QUEUE_PRIORITY
    resources: dict[str, QueueResource] = field(default_factory=dict)
    preempt_min_runtime: float | None = None
    reclaim_min_runtime: float | None = None
    access: QueueAccess = field(default_factory=QueueAccess)
    # Fields that could not be read and took their default instead (the queue is still used); the snapshot
    # reports each on the Queue. Never written back.
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_dict(cls, data: JSON) -> Queue:
        r = Reader(data, "Queue")
        meta = ObjectMeta.read(r)
        resources = {}
        raw = r.map("spec.resources")
        for key in raw:
            if key not in QUEUE_RESOURCES:
                raise r.error(f"spec.resources.{key}", f"unknown resource; want one of {', '.join(QUEUE_RESOURCES)}")
        for key in QUEUE_RESOURCES:
            if key not in raw:
                resources[key] = QueueResource()
                continue
            base = f"spec.resources.{key}"
            r.map(base)
            quota = r.float(f"{base}.quota", 0.0) or 0.0
            weight = r.float(f"{base}.overQuotaWeight", 0.0) or 0.0
            limit = r.float(f"{base}.limit", 0.0) or 0.0
            if quota < 0 and quota != UNLIMITED:
                raise r.error(f"{base}.quota", f"must be -1 (unlimited) or at least 0, got {quota:g}")
            if limit < 0 and limit != UNLIMITED:
                raise r.error(f"{base}.limit", f"must be -1 (no limit) or at least 0, got {limit:g}")
            if weight < 0:
                raise r.error(f"{base}.overQuotaWeight", f"must be at least 0, got {weight:g}")
            resources[key] = QueueResource(quota, weight, limit)
        priority = r.int("spec.priority", constants.DEFAULT_QUEUE_PRIORITY)
        warnings: list[str] = []
        return cls(
            meta=meta,
            display_name=r.str("spec.displayName"),
            parent_queue=r.str("spec.parentQueue"),
            priority=priority if priority is not None else constants.DEFAULT_QUEUE_PRIORITY,
            resources=resources,
            preempt_min_runtime=_lenient_duration(r, "spec.preemptMinRuntime", warnings),
            reclaim_min_runtime=_lenient_duration(r, "spec.reclaimMinRuntime", warnings),
            access=read_access(r),
            warnings=warnings,
        )

    def to_dict(self) -> JSON:
        spec: dict[str, Any] = {
            "priority": self.priority,
            "resources": {k: v.to_dict() for k, v in self.resources.items()},
        }
        if self.parent_queue:
            spec["parentQueue"] = self.parent_queue
        if self.display_name:
            spec["displayName"] = self.display_name
        if self.preempt_min_runtime is not None:
            spec["preemptMinRuntime"] = duration.format_duration(self.preempt_min_runtime)
        if self.reclaim_min_runtime is not None:
            spec["reclaimMinRuntime"] = duration.format_duration(self.reclaim_min_runtime)
        spec.update(self.access.to_spec())
        meta = self.meta.to_dict()
        return {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue", "metadata": meta, "spec": spec}


def _lenient_duration(r: Reader, path: str, warnings: list[str]) -> float | None:
    """A min-runtime; an unreadable one is a warning and None (the parent's or the plugin default applies)."""
    try:
        return r.duration(path)
    except ObjectError as err:
        warnings.append(f"{err.field}: {err.message}; using the parent queue's or the default")
        return None


def namespace_refusal(
    queue: str,
    namespace: str,
    lookup: Callable[[str], Queue | None],
    labels: Callable[[], Mapping[str, str] | None],
) -> str | None:
    """Why `namespace` may not submit to `queue`, or None. The queue and each of its ancestors that restricts
    access must admit it; `lookup` finds a queue by name (None: unknown, the walk stops there) and `labels`
    gives the namespace's labels when a selector needs them."""
    seen: set[str] = set()
    name = queue
    known: Mapping[str, str] | None = None
    asked = False
    while name and name not in seen:
        seen.add(name)
        q = lookup(name)
        if q is None:
            return None
        if q.access.restricted:
            if q.access.needs_labels and not asked:
                known, asked = labels(), True
            if not q.access.admits(namespace, known):
                where = f"queue {queue!r}" if name == queue else f"queue {name!r} (ancestor of queue {queue!r})"
                return f"{where} does not admit namespace {namespace!r} ({q.access.describe()})"
        name = q.parent_queue
    return None


def queue_name(name: str) -> str:
    """Another scheduler's queue name as a Queue name (a DNS label): lower case, other characters as '-'."""
    return _NOT_IN_NAME.sub("-", name.lower()).strip("-")[:63] or "queue"
