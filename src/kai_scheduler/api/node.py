"""Node (`v1`): allocatable resources, labels, taints, readiness."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from kai_scheduler.api import constants, mig, quantity, selectors
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.selectors import Taint

_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


@dataclass(slots=True, kw_only=True)
class Node:
    meta: ObjectMeta
    allocatable: dict[str, float]  # cpu millicores, memory bytes, others in units
    capacity: dict[str, float] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    taints: tuple[Taint, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def gpu_memory_mib(self) -> int | None:
        """Per-GPU memory from `nvidia.com/gpu.memory` (§6): MiB floored to 100; values ≥ 1 TiB-in-MiB are bytes."""
        return _gpu_memory_mib(self.meta.labels.get(constants.LABEL_GPU_MEMORY))

    @classmethod
    def from_dict(cls, data: JSON) -> Node:
        r = Reader(data, "Node")
        meta = ObjectMeta.read(r)
        taints = []
        for i, t in enumerate(r.list("spec.taints")):
            if not isinstance(t, dict) or not isinstance(t.get("key"), str):
                raise r.error(f"spec.taints[{i}].key", "missing taint key")
            effect = t.get("effect", "NoSchedule")
            if not isinstance(effect, str) or effect not in _TAINT_EFFECTS:
                raise r.error(f"spec.taints[{i}].effect", f"unknown effect {effect!r}")
            taints.append(Taint(t["key"], str(t.get("value") or ""), effect))
        ready = True
        for i, cond in enumerate(r.list("status.conditions")):
            if not isinstance(cond, dict):  # read as no condition, an unreadable Ready would count the node ready
                raise r.error(f"status.conditions[{i}]", f"expected a condition, got {cond!r}")
            if cond.get("type") == "Ready":
                ready = cond.get("status") == "True"
        allocatable = r.resources("status.allocatable")
        for name, count in allocatable.items():
            if mig.is_mig_resource(name) and count > mig.MAX_NODE_INSTANCES:
                raise r.error(
                    f"status.allocatable.{name}",
                    f"{quantity.format_count(count)} MIG instances; a node has at most {mig.MAX_NODE_INSTANCES}",
                )
        return cls(
            meta=meta,
            allocatable=allocatable,
            capacity=r.resources("status.capacity") or dict(allocatable),
            unschedulable=r.bool("spec.unschedulable"),
            ready=ready,
            taints=tuple(taints),
        )

    def to_dict(self) -> JSON:
        spec: JSON = {}
        if self.unschedulable:
            spec["unschedulable"] = True
        if self.taints:
            spec["taints"] = [selectors.taint_dict(t) for t in self.taints]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": self.meta.to_dict(),
            "spec": spec,
            "status": {
                "allocatable": _resource_list(self.allocatable),
                "capacity": _resource_list(self.capacity),
                "conditions": [{"type": "Ready", "status": "True" if self.ready else "False"}],
            },
        }


def _resource_list(resources: dict[str, float]) -> dict[str, str]:
    return {name: quantity.format_resource(name, amount) for name, amount in sorted(resources.items())}


@functools.lru_cache(maxsize=256)
def _gpu_memory_mib(raw: str | None) -> int | None:
    """Parsed once per distinct label value: a snapshot reads it for every node every cycle."""
    if raw is None:
        return None
    try:
        value = int(float(raw))
    except (ValueError, OverflowError):  # not a number, NaN, ±Inf: as if unlabelled
        return None
    if value < 0:
        return None
    if value >= 1024 * 1024:
        value //= 1024 * 1024
    return value // 100 * 100
