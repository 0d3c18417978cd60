"""Resource amounts of the status fields: sums in the scheduler's units, and their ResourceList form.

Units while summing: CPU in millicores, memory in bytes, GPUs in devices (fractions allowed), anything else
in its own unit. Written as Kubernetes quantities ("2500m", "64Gi", "1.5"); cpu, memory and nvidia.com/gpu
are always present (0 when nothing), other resources only when used. Comparisons are made on the written
form, so float noise never causes a write.

Both conversions are memoised: a fill's thousands of PodGroups hold a handful of distinct ResourceLists, and every
pass of the status controllers converts each PodGroup it looks at.

`RunningTotal` keeps a sum of amounts up to date as parts come and go, equal to `total` of the parts present.
"""

from __future__ import annotations

import functools
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
    items = tuple(amounts.items())
    # Memoised by value only where equal keys format alike: floats (0.0 and -0.0 both give "0").
    if all(type(value) is float for _, value in items):
        return dict(_formatted(items))
    return dict(_format(items))


@functools.lru_cache(maxsize=4096)
def _formatted(items: tuple[tuple[str, float], ...]) -> tuple[tuple[str, str], ...]:
    return _format(items)


def _format(items: tuple[tuple[str, float], ...]) -> tuple[tuple[str, str], ...]:
    amounts = dict(items)
    out = {name: quantity.format_resource(name, amounts.get(name, 0.0)) for name in STATUS_RESOURCES}
    for name, value in amounts.items():
        if name not in out and value:
            out[name] = quantity.format_resource(name, value)
    return tuple(sorted(out.items()))


def from_resource_list(raw: Any) -> Amounts:
    """A ResourceList in the summing units; entries that are not quantities are left out."""
    if not isinstance(raw, dict):
        return {}
    items = tuple(raw.items())
    # Memoised by value only for strings (as the API server writes quantities): 1, 1.0 and True are equal keys.
    if all(type(value) is str for _, value in items):
        return dict(_parsed(items))
    return _parse(items)


@functools.lru_cache(maxsize=4096)
def _parsed(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, float], ...]:
    return tuple(_parse(items).items())


def _parse(items: Iterable[tuple[str, Any]]) -> Amounts:
    out: Amounts = {}
    for name, value in items:
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


_EXACT = 2**53  # every whole number up to this magnitude is a float exactly


class RunningTotal:
    """The sum of the amounts added and not removed since, kept as whole numbers: `value()` is what `total` of
    those parts gives (in any order), or None when that cannot be had so. Summing floats, `total` rounds after each
    addition, so its result depends on the order unless every partial sum is exact: when every figure is a whole
    number and each resource's magnitudes add up to at most 2**53. Otherwise (a fractional GPU, an amount past
    2**53) None: the caller sums the parts afresh, in its order."""

    __slots__ = ("_inexact", "_resources")

    def __init__(self) -> None:
        # resource → [the parts that name it, the sum of their whole figures, the sum of those figures' magnitudes]
        self._resources: dict[str, list[int]] = {}
        self._inexact = 0  # figures present that are not whole numbers within 2**53

    def add(self, part: Mapping[str, float], sign: int = 1) -> None:
        """Add `part` (with `sign` -1: remove a part added before)."""
        resources = self._resources
        for name, value in part.items():
            kept = resources.get(name)
            if kept is None:
                kept = resources[name] = [0, 0, 0]
            kept[0] += sign
            if isinstance(value, float) and value.is_integer() and -_EXACT <= value <= _EXACT:
                whole = int(value)
                kept[1] += sign * whole
                kept[2] += sign * abs(whole)
            else:
                self._inexact += sign
            if not kept[0]:
                del resources[name]

    def value(self) -> Amounts | None:
        if self._inexact or any(kept[2] > _EXACT for kept in self._resources.values()):
            return None
        return {name: float(kept[1]) for name, kept in self._resources.items()}

    def __bool__(self) -> bool:
        return bool(self._resources)
