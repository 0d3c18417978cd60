"""Grove's PodGang (`scheduler.grove.io/v1alpha1`), as a manifest or scenario holds it: the pod grouper reads its
spec when it groups the gang's pods (`podgrouper/grove.py`, which reports a malformed spec on those pods, as in a
cluster); here only its metadata is checked, as for any object the store holds, and its spec is kept as written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta

KIND: Final = "PodGang"
API_VERSION: Final = "scheduler.grove.io/v1alpha1"


@dataclass(slots=True, kw_only=True)
class PodGang:
    meta: ObjectMeta
    spec: JSON = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: JSON) -> PodGang:
        r = Reader(data, KIND)
        return cls(meta=ObjectMeta.read(r), spec=r.map("spec"))

    def to_dict(self) -> JSON:
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": self.meta.to_dict(), "spec": self.spec}
