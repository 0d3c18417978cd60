"""A small labelled cluster for the topology tests: two zones of two racks of two nodes (4 GPUs each)."""

from __future__ import annotations

from typing import Any

from kai_scheduler.api import constants
from tests import builders as b

JSON = dict[str, Any]
ZONE, RACK = "topology/zone", "topology/rack"
LAYOUT = {"z1": ("r1", "r2"), "z2": ("r3", "r4")}


def topology(name: str = "cluster", levels: list[JSON] | None = None) -> JSON:
    return {
        "apiVersion": constants.TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {
            "levels": levels
            or [
                {"nodeLabel": ZONE, "alias": "zone"},
                {"nodeLabel": RACK, "alias": "rack"},
                {"nodeLabel": constants.LABEL_HOSTNAME},
            ]
        },
    }


def nodes(gpus: int = 4) -> list[JSON]:
    """z1-r1-0 … z2-r4-1, in name order (their snapshot rows 0-7)."""
    return [
        b.node(f"{zone}-{rack}-{i}", gpus=gpus, labels={ZONE: zone, RACK: rack})
        for zone, racks in LAYOUT.items()
        for rack in racks
        for i in range(2)
    ]


def constraint(required: str = "", preferred: str = "", topology_name: str = "cluster") -> JSON:
    out: JSON = {"topology": topology_name}
    if required:
        out["requiredTopologyLevel"] = required
    if preferred:
        out["preferredTopologyLevel"] = preferred
    return out
