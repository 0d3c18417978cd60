"""CEL device selectors of DeviceClasses and claim requests, evaluated with cel-python (`celpy`).

A selector sees `device` as Kubernetes gives it: `device.driver`, `device.attributes[domain].name` and
`device.capacity[domain].name` (an unqualified attribute or capacity name belongs to the driver's domain).
Capacities are numbers in the resource's base unit; `quantity("40Gi")` and `a.compareTo(b)` work as in
Kubernetes' CEL library. A selector that does not compile, or that fails on a device (a missing attribute, a
non-boolean result), is a `SelectorError` with one line naming the expression and the reason.

Compiled programs are kept per expression and results per (expression, the device content it can read), so a
cluster of identical GPUs evaluates each selector once per kind of device, not once per device: an expression
that names its attributes and capacities (the usual `device.attributes["d"].name`) reads only those, so a
device's uuid or index does not make it a kind of its own; one that iterates (`all`, `exists`, `in`, …) or
names none is keyed on the whole device.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import celpy
from celpy import celtypes

from kai_scheduler.api import quantity as quantities
from kai_scheduler.api.dra import Device

# celpy logs every evaluation failure at error level with a traceback; a bad selector is the user's, and it is
# reported once on the claim, not in the scheduler's log.
logging.getLogger("celpy").setLevel(logging.CRITICAL)
logging.getLogger("Evaluator").setLevel(logging.CRITICAL)
logging.getLogger("NameContainer").setLevel(logging.CRITICAL)

_ENV = celpy.Environment()
_CACHE_LIMIT = 100_000


class SelectorError(Exception):
    """A selector that cannot be used: the message is one line."""


def _quantity(text: Any) -> celtypes.IntType:
    try:
        return celtypes.IntType(int(quantities.parse_quantity(str(text))))
    except (quantities.QuantityError, ValueError) as err:
        raise ValueError(f"bad quantity {text!r}: {err}") from None


def _compare_to(left: Any, right: Any) -> celtypes.IntType:
    return celtypes.IntType((left > right) - (left < right))


_FUNCTIONS = {"quantity": _quantity, "compareTo": _compare_to}


@functools.lru_cache(maxsize=4096)
def program(expression: str) -> celpy.Runner | SelectorError:
    """The compiled selector, or the compile error (kept too: a bad expression is tried once)."""
    try:
        return _ENV.program(_ENV.compile(expression), functions=_FUNCTIONS)  # type: ignore[arg-type]
    except Exception as err:  # celpy raises its parse errors and, for some inputs, plain lark errors
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return SelectorError(f"CEL expression {expression!r} does not compile: {first}")


def check(expression: str) -> SelectorError | None:
    """The compile error of `expression`, if any."""
    compiled = program(expression)
    return compiled if isinstance(compiled, SelectorError) else None


def activation(driver: str, device: Device) -> dict[str, Any]:
    """The `device` variable for one device, as CEL values."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes:
        domain, _, short = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[short] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, amount in device.capacity:
        domain, _, short = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[short] = int(amount) if float(amount).is_integer() else amount
    cel: dict[str, Any] = celpy.json_to_cel(  # type: ignore[attr-defined,assignment]
        {"device": {"driver": driver, "attributes": attributes, "capacity": capacity}}
    )
    return cel


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
_ITERATING = re.compile(r"\b(all|exists|exists_one|map|filter|size|in)\b|\.attributes\s*\)|\.capacity\s*\)")


@functools.lru_cache(maxsize=4096)
def _names_read(expression: str) -> frozenset[str] | None:
    """The attribute and capacity names `expression` can read, None when it may read any."""
    if _ITERATING.search(expression):
        return None
    return frozenset(_TOKEN.findall(expression))


def _read(items: tuple[tuple[str, Any], ...], names: frozenset[str] | None) -> tuple[tuple[str, Any], ...]:
    if names is None:
        return items
    return tuple((k, v) for k, v in items if k.rpartition("/")[2] in names)


class Evaluator:
    """Selector results per (expression, driver, the device content it reads), kept across snapshots."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str, tuple[Any, ...], tuple[Any, ...]], bool | SelectorError] = {}

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        """Whether `device` passes `expression`; SelectorError when it cannot be told."""
        names = _names_read(expression)
        key = (expression, driver, _read(device.attributes, names), _read(device.capacity, names))
        result = self._results.get(key)
        if result is None:
            result = self._evaluate(expression, driver, device)
            if len(self._results) >= _CACHE_LIMIT:
                self._results.clear()
            self._results[key] = result
        if isinstance(result, SelectorError):
            raise result
        return result

    @staticmethod
    def _evaluate(expression: str, driver: str, device: Device) -> bool | SelectorError:
        compiled = program(expression)
        if isinstance(compiled, SelectorError):
            return compiled
        try:
            value: Any = compiled.evaluate(activation(driver, device))
        except Exception as err:  # celpy raises CELEvalError, or Python errors from user functions
            return SelectorError(f"CEL expression {expression!r} failed on device {device.name}: {_reason(err)}")
        if isinstance(value, Exception):
            return SelectorError(f"CEL expression {expression!r} failed on device {device.name}: {_reason(value)}")
        if not isinstance(value, celtypes.BoolType | bool):
            return SelectorError(f"CEL expression {expression!r} gave {value!r} on device {device.name}, not a bool")
        return bool(value)


def _reason(err: BaseException) -> str:
    args: tuple[Any, ...] = err.args
    first = args[0] if args else type(err).__name__
    return str(first).splitlines()[0] if str(first) else type(err).__name__
