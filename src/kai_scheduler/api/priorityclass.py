"""PriorityClass (`scheduling.k8s.io/v1`): the value behind a PodGroup's priorityClassName."""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta


@dataclass(slots=True, kw_only=True)
class PriorityClass:
    meta: ObjectMeta
    value: int
    global_default: bool = False

    @classmethod
    def from_dict(cls, data: JSON) -> PriorityClass:
        r = Reader(data, "PriorityClass")
        value = r.int("value")
        if value is None:
            raise r.error("value", "missing priority value")
        return cls(meta=ObjectMeta.read(r), value=value, global_default=r.bool("globalDefault"))

    def to_dict(self) -> JSON:
        return {
            "apiVersion": constants.PRIORITYCLASS_API_VERSION,
            "kind": "PriorityClass",
            "metadata": self.meta.to_dict(),
            "value": self.value,
            "globalDefault": self.global_default,
        }


def shipped() -> list[PriorityClass]:
    """The four classes the chart installs (§2): train 50, build-preemptible 75, build 100, inference 125."""
    return [PriorityClass(meta=ObjectMeta(name=n), value=v) for n, v in constants.SHIPPED_PRIORITY_CLASSES]
