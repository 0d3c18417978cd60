"""Namespace (`v1`): only its name and labels matter here (queue access control selects namespaces by label)."""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta


@dataclass(slots=True, kw_only=True)
class Namespace:
    meta: ObjectMeta

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_dict(cls, data: JSON) -> Namespace:
        return cls(meta=ObjectMeta.read(Reader(data, "Namespace")))

    def to_dict(self) -> JSON:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": self.meta.to_dict()}
