"""Kubernetes resource quantities ("500m", "64Gi", "1.5", "2e3"), parsed exactly.

Mirrors `k8s.io/apimachinery/pkg/api/resource.Quantity`: a decimal number with an optional binary (Ki…Ei),
decimal (n, u, m, k, M…E) or exponent (e3) suffix. Parsing goes through `Decimal` so "0.1" is exactly a tenth;
the scheduler's canonical units are then millicores for CPU and bytes for memory.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from kai_scheduler.api.errors import UserError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


_NEAR_MISS = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+))\s*([A-Za-z]+)\s*$")
_COUNT_WORDS = frozenset({"core", "cores", "cpu", "cpus", "gpu", "gpus"})


def near_miss(value: object) -> str:
    """What a mistyped quantity likely meant, as ` (did you mean …?)`, or empty: a unit written the way people
    write it ("512GB", "64GiB", "16gi") rather than as Kubernetes does, or a count with a word ("8 cores")."""
    match = _NEAR_MISS.match(value) if isinstance(value, str) else None
    if match is None:
        return ""
    number, unit = match.group(1), match.group(2)
    if unit.lower() in _COUNT_WORDS:
        return f" (did you mean {number}?)"
    if _PATTERN.match(number + unit):  # only a space too many: "64 Gi"
        return f" (did you mean {number}{unit}?)"
    in_bytes = unit[-1] in "bB" and len(unit) > 1  # 512GB → 512G, 64GiB → 64Gi, 3mb → 3M
    stem = unit[:-1] if in_bytes else unit
    prefix = "k" if stem[0] in "kK" else stem[0] if stem[0] == "m" and not in_bytes else stem[0].upper()
    binary = "Ki" if prefix == "k" else f"{prefix}i"
    if binary not in _BINARY:
        return ""
    if len(stem) == 2 and stem[1] in "iI":
        return f" (did you mean {number}{binary}?)"
    if len(stem) == 1:
        return f" (did you mean {number}{binary} or {number}{prefix}?)"
    return ""


class QuantityError(UserError):
    """A string that is not a Kubernetes quantity."""


# Past this a quantity is no amount of anything (a typo: "1e400", 40 digits), and converting it to a float could be
# infinite; far above any resource (and the "9Ei" a user may write), far below a float's range.
LIMIT = Decimal("1e30")


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the exact value of a Kubernetes quantity; raise QuantityError if it is not one, or is larger in
    magnitude than LIMIT."""
    amount = _parse(value)
    if abs(amount) > LIMIT:
        raise QuantityError(f"quantity {_short(value)} is too large (at most 1e30)")
    return amount


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _parse(value: str | int | float) -> Decimal:
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}")
    match = _PATTERN.match(value.strip())
    if match is None:
        raise QuantityError(f"invalid quantity {value!r}")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        base = Decimal(number)
    except InvalidOperation as err:  # pragma: no cover - the pattern admits only decimals
        raise QuantityError(f"invalid quantity {value!r}") from err
    if base.adjusted() > 100:  # far past LIMIT; a million digits would overflow Decimal's context on scaling
        raise QuantityError(f"quantity {_short(value)} is too large (at most 1e30)")
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if exponent > 100:  # far past LIMIT whatever the digits (and past what Decimal scales without overflow)
        raise QuantityError(f"quantity {_short(value)} is too large (at most 1e30)")
    return base.scaleb(max(exponent, -100))  # below 1e-100 every unit rounds the same (and Decimal underflows)


def to_millicores(value: str | int | float) -> int:
    """CPU quantity in millicores, rounded up as Kubernetes does ("0.0001" → 1)."""
    return math.ceil(parse_quantity(value) * 1000)


def to_bytes(value: str | int | float) -> int:
    """Memory (or any byte) quantity in bytes, rounded up."""
    return math.ceil(parse_quantity(value))


def to_float(value: str | int | float) -> float:
    """Any quantity as a float in its base unit (devices, pods)."""
    return float(parse_quantity(value))


def format_cpu(millicores: float) -> str:
    """Millicores as a Kubernetes quantity: "8" for whole cores, "500m" otherwise."""
    m = round(millicores)
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def format_memory(num_bytes: float) -> str:
    """Bytes as a Kubernetes quantity with the largest exact binary suffix ("64Gi")."""
    b = round(num_bytes)
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if b and b % unit == 0:
            return f"{b // unit}{suffix}"
    return str(b)


def format_count(value: float) -> str:
    """Device counts: "8", or "0.5" for fractions (no trailing zeros)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def format_resource(name: str, amount: float) -> str:
    """One ResourceList entry in Kubernetes form: CPU from millicores, memory from bytes, else a count."""
    if name == "cpu":
        return format_cpu(amount)
    if name == "memory" or name.endswith("storage") or name.startswith("hugepages-"):
        return format_memory(amount)
    return format_count(amount)
