"""Resource amounts of the status fields: sums in the scheduler's units, and their ResourceList form.

Units while summing: CPU in millicores, memory in bytes, GPUs in devices (fractions allowed), anything else
in its own unit. Written as Kubernetes quantities ("2500m", "64Gi", "1.5"); cpu, memory and nvidia.com/gpu
are always present (0 when nothing), other resources only when used. Comparisons are made on the written
form, so float noise never causes a write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kai_scheduler.api import constants, quantity

Amounts = dict[str, float]
STATUS_RESOURCES = (constants.RESOURCE_CPU, constants.RESOURCE_MEMORY, constants.RESOURCE_GPU)


def add(into: Amounts, more: Mapping[str, float]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0.0) + value


def total(parts: Iterable[Mapping[str, float]]) -> Amounts:
    out: Amounts = {}
    for part in parts:
        add(out, part)
    return out


def to_resource_list(amounts: Mapping[str, float]) -> dict[str, str]:
    out = {name: quantity.format_resource(name, amounts.get(name, 0.0)) for name in STATUS_RESOURCES}
    for name, value in amounts.items():
        if name not in out and value:
            out[name] = quantity.format_resource(name, value)
    return dict(sorted(out.items()))


def from_resource_list(raw: Any) -> Amounts:
    """A ResourceList in the summing units; entries that are not quantities are left out."""
    out: Amounts = {}
    if not isinstance(raw, dict):
        return out
    for name, value in raw.items():
        try:
            if name == constants.RESOURCE_CPU:
                out[name] = float(quantity.to_millicores(value))
            elif name == constants.RESOURCE_MEMORY:
                out[name] = float(quantity.to_bytes(value))
            else:
                out[name] = quantity.to_float(value)
        except quantity.QuantityError:
            continue
    return out


def replacing(old: Any, new: Any) -> Any:
    """The JSON merge patch that turns `old` into `new` (keys only in `old` become null)."""
    if not isinstance(new, dict) or not isinstance(old, dict):
        return new
    patch = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old or old[key] != value:
            patch[key] = replacing(old.get(key), value)
    return patch
