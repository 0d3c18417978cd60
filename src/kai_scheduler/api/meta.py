"""ObjectMeta: the metadata every object has, parsed once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api.fields import JSON, Reader, format_time


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(slots=True, kw_only=True)
class ObjectMeta:
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float | None = None
    deletion_timestamp: float | None = None
    owner_references: tuple[OwnerReference, ...] = ()

    @property
    def key(self) -> str:
        """`namespace/name`, or `name` for cluster-scoped objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def read(cls, r: Reader) -> ObjectMeta:
        name = r.str("metadata.name")
        if not name:
            raise r.error("metadata.name", "missing name")
        owners = []
        for i, ref in enumerate(r.list("metadata.ownerReferences")):
            if not isinstance(ref, dict):
                raise r.error(f"metadata.ownerReferences[{i}]", f"expected an object, got {ref!r}")
            owners.append(
                OwnerReference(
                    str(ref.get("apiVersion", "")),
                    str(ref.get("kind", "")),
                    str(ref.get("name", "")),
                    str(ref.get("uid", "")),
                    bool(ref.get("controller", False)),
                )
            )
        return cls(
            name=name,
            namespace=r.str("metadata.namespace"),
            uid=r.str("metadata.uid"),
            resource_version=r.str("metadata.resourceVersion"),
            labels=r.str_map("metadata.labels"),
            annotations=r.str_map("metadata.annotations"),
            creation_timestamp=r.time("metadata.creationTimestamp"),
            deletion_timestamp=r.time("metadata.deletionTimestamp"),
            owner_references=tuple(owners),
        )

    def to_dict(self) -> JSON:
        out: dict[str, Any] = {"name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.creation_timestamp is not None:
            out["creationTimestamp"] = format_time(self.creation_timestamp)
        if self.deletion_timestamp is not None:
            out["deletionTimestamp"] = format_time(self.deletion_timestamp)
        if self.owner_references:
            out["ownerReferences"] = [
                {"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid, "controller": o.controller}
                for o in self.owner_references
            ]
        return out
