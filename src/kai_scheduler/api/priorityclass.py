"""PriorityClass (`scheduling.k8s.io/v1`): the value behind a PodGroup's priorityClassName, and the classes KAI
ships (its chart's `templates/priorityclasses/`): one table, read by the install that creates them and by the
offline loaders that give a file the classes a KAI cluster has."""

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


@dataclass(frozen=True, slots=True)
class Shipped:
    """A class the install creates. Preemptibility follows from the value: below 100 preemptible (§1.2)."""

    name: str
    value: int
    description: str


SHIPPED: tuple[Shipped, ...] = (
    Shipped(constants.PRIORITY_CLASS_TRAIN, 50, "Preemptible training workloads."),
    Shipped(constants.PRIORITY_CLASS_BUILD_PREEMPTIBLE, 75, "Preemptible interactive workloads."),
    Shipped(constants.PRIORITY_CLASS_BUILD, 100, "Non-preemptible interactive workloads."),
    Shipped(constants.PRIORITY_CLASS_INFERENCE, 125, "Non-preemptible inference workloads."),
)
SHIPPED_NAMES: frozenset[str] = frozenset(pc.name for pc in SHIPPED)


def shipped_object(pc: Shipped, metadata: JSON) -> JSON:
    """The PriorityClass object of a shipped class, with the caller's `metadata` (which names it)."""
    return {
        "apiVersion": constants.PRIORITYCLASS_API_VERSION,
        "kind": "PriorityClass",
        "metadata": metadata,
        "value": pc.value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": pc.description,
    }


def shipped() -> list[PriorityClass]:
    """The four classes the chart installs (§2): train 50, build-preemptible 75, build 100, inference 125."""
    return [PriorityClass(meta=ObjectMeta(name=pc.name), value=pc.value) for pc in SHIPPED]
