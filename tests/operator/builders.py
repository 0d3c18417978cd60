"""SchedulingShard and Config objects for the operator's tests."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def shard(name: str = "default", **spec: Any) -> JSON:
    return {"apiVersion": "kai.scheduler/v1", "kind": "SchedulingShard", "metadata": {"name": name}, "spec": spec}


def config(**spec: Any) -> JSON:
    return {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"}, "spec": spec}
