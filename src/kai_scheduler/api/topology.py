"""Topology (`kai.scheduler/v1alpha1`): ordered levels, widest first, each a node label with an alias."""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    node_label: str
    alias: str = ""


@dataclass(slots=True, kw_only=True)
class Topology:
    meta: ObjectMeta
    levels: tuple[TopologyLevel, ...]

    @classmethod
    def from_dict(cls, data: JSON) -> Topology:
        r = Reader(data, "Topology")
        meta = ObjectMeta.read(r)
        raw = r.list("spec.levels")
        if not 1 <= len(raw) <= 16:
            raise r.error("spec.levels", f"needs 1 to 16 levels, has {len(raw)}")
        levels = []
        seen: set[str] = set()
        for i, level in enumerate(raw):
            path = f"spec.levels[{i}]"
            if not isinstance(level, dict) or not isinstance(level.get("nodeLabel"), str) or not level["nodeLabel"]:
                raise r.error(f"{path}.nodeLabel", "missing node label")
            label, alias = level["nodeLabel"], str(level.get("alias") or "")
            if label in seen:
                raise r.error(f"{path}.nodeLabel", f"duplicate level {label!r}")
            if alias and alias in seen:
                raise r.error(f"{path}.alias", f"alias {alias!r} repeats a level name or alias")
            if label == constants.LABEL_HOSTNAME and i != len(raw) - 1:
                raise r.error(f"{path}.nodeLabel", f"{label} may only be the last level")
            seen.update({label, alias} - {""})
            levels.append(TopologyLevel(label, alias))
        return cls(meta=meta, levels=tuple(levels))

    def resolve(self, level: str) -> str | None:
        """The node label of a level given by label or alias; None if this topology has no such level."""
        for lv in self.levels:
            if level in (lv.node_label, lv.alias):
                return lv.node_label
        return None

    def to_dict(self) -> JSON:
        return {
            "apiVersion": constants.TOPOLOGY_API_VERSION,
            "kind": "Topology",
            "metadata": self.meta.to_dict(),
            "spec": {
                "levels": [
                    {"nodeLabel": lv.node_label, **({"alias": lv.alias} if lv.alias else {})} for lv in self.levels
                ]
            },
        }
