"""ObjectMeta: the metadata every object has, parsed once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api.fields import JSON, Reader, format_time, parse_time

# A Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a
# letter or digit.
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def is_label_value(text: str) -> bool:
    """Whether `text` may be the value of a label (the API server refuses an object whose label is not)."""
    return _LABEL_VALUE.match(text) is not None


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False

    @classmethod
    def from_dict(cls, ref: dict[str, Any]) -> OwnerReference:
        """An ownerReferences entry (an object); absent fields read as empty (controller: false)."""
        return cls(
            str(ref.get("apiVersion", "")),
            str(ref.get("kind", "")),
            str(ref.get("name", "")),
            str(ref.get("uid", "")),
            bool(ref.get("controller", False)),
        )


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
        """The object's metadata; well-formed metadata (the usual case) is read straight from the dict, anything
        irregular goes through the field reader, which names the field in its error."""
        meta = r.data.get("metadata")
        if type(meta) is dict:
            fast = _read_plain(meta)
            if fast is not None:
                return fast
        return cls._read_checked(r)

    @classmethod
    def _read_checked(cls, r: Reader) -> ObjectMeta:
        name = r.str("metadata.name")
        if not name:
            raise r.error("metadata.name", "missing name")
        owners = []
        for i, ref in enumerate(r.list("metadata.ownerReferences")):
            if not isinstance(ref, dict):
                raise r.error(f"metadata.ownerReferences[{i}]", f"expected an object, got {ref!r}")
            owners.append(OwnerReference.from_dict(ref))
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


def _read_plain(meta: dict[str, Any]) -> ObjectMeta | None:
    """ObjectMeta from metadata whose every field has its expected type; None at the first surprise."""
    name, namespace, uid, version = (
        meta.get("name"),
        meta.get("namespace"),
        meta.get("uid"),
        meta.get("resourceVersion"),
    )
    if type(name) is not str or not name:
        return None
    if (
        (namespace is not None and type(namespace) is not str)
        or (uid is not None and type(uid) is not str)
        or (version is not None and type(version) is not str)
    ):
        return None
    labels, annotations = _plain_map(meta.get("labels")), _plain_map(meta.get("annotations"))
    if labels is None or annotations is None:
        return None
    refs = meta.get("ownerReferences")
    owners: tuple[OwnerReference, ...] = ()
    if refs is not None:
        if type(refs) is not list or any(type(ref) is not dict for ref in refs):
            return None
        owners = tuple(OwnerReference.from_dict(ref) for ref in refs)
    created, deleted = meta.get("creationTimestamp"), meta.get("deletionTimestamp")
    try:
        created_at = None if created is None else parse_time(created)
        deleted_at = None if deleted is None else parse_time(deleted)
    except (TypeError, ValueError):
        return None
    # `__init__` called as a function: calling the class with keywords packs them in a dict first (twice the
    # cost of the call for every object of a LIST)
    obj = object.__new__(ObjectMeta)
    ObjectMeta.__init__(
        obj,
        name=name,
        namespace=namespace or "",
        uid=uid or "",
        resource_version=version or "",
        labels=labels,
        annotations=annotations,
        creation_timestamp=created_at,
        deletion_timestamp=deleted_at,
        owner_references=owners,
    )
    return obj


def _plain_map(value: Any) -> dict[str, str] | None:
    if value is None:
        return {}
    if type(value) is not dict:
        return None
    for v in value.values():  # a loop, not any(): a generator costs more than these few values
        if type(v) is not str:
            return None
    return dict(value)
