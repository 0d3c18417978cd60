"""Queue (`scheduling.run.ai/v2`): quota, over-quota weight and limit per resource, priority, parent (§1.1).

Units as in KAI: GPU in devices, CPU in millicores, memory in megabytes (10^6 bytes). `-1` is unlimited for
quota and limit; an omitted limit is 0 (nothing allowed), an omitted weight is 0 (no over-quota share).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, duration
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta

QUEUE_RESOURCES = ("gpu", "cpu", "memory")
UNLIMITED = -1.0


@dataclass(frozen=True, slots=True)
class QueueResource:
    quota: float = 0.0
    over_quota_weight: float = 0.0
    limit: float = 0.0

    def to_dict(self) -> JSON:
        return {"quota": self.quota, "overQuotaWeight": self.over_quota_weight, "limit": self.limit}


@dataclass(slots=True, kw_only=True)
class Queue:
    meta: ObjectMeta
    display_name: str = ""
    parent_queue: str = ""
    priority: int = constants.DEFAULT_QUEUE_PRIORITY
    resources: dict[str, QueueResource] = field(default_factory=dict)
    preempt_min_runtime: float | None = None
    reclaim_min_runtime: float | None = None
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
        meta = self.meta.to_dict()
        return {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue", "metadata": meta, "spec": spec}


def _lenient_duration(r: Reader, path: str, warnings: list[str]) -> float | None:
    """A min-runtime; an unreadable one is a warning and None (the parent's or the plugin default applies)."""
    try:
        return r.duration(path)
    except ObjectError as err:
        warnings.append(f"{err.field}: {err.message}; using the parent queue's or the default")
        return None
