"""Read typed fields out of Kubernetes JSON, with errors that name the object and the field path."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kai_scheduler.api import duration, quantity
from kai_scheduler.api.errors import ObjectError

JSON = dict[str, Any]


@functools.lru_cache(maxsize=8192)
def parse_time(text: str) -> float:
    """RFC 3339 timestamp ("2026-01-01T00:00:00Z") as POSIX seconds (cached: objects created in the same
    second share their stamp)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {text!r}")
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def format_time(seconds: float) -> str:
    """POSIX seconds as an RFC 3339 UTC timestamp, whole seconds as Kubernetes writes them."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reader:
    """Typed access to one object's fields; every failure raises ObjectError naming `kind name field`."""

    __slots__ = ("data", "kind")

    def __init__(self, data: Mapping[builtins.str, Any], kind: builtins.str) -> None:
        if type(data) is not dict and not isinstance(data, Mapping):  # the exact-type test is the fast path
            raise ObjectError(kind, "?", "", f"expected an object, got {type(data).__name__}")
        self.data = data
        self.kind = kind
        for section in _SECTIONS:  # a spec of "abc" is no empty spec (a file may hold it; the API server not)
            value = data.get(section)
            if value is not None and type(value) is not dict and not isinstance(value, Mapping):
                raise self.error(section, f"expected a mapping, got {_short(value)}")

    @property
    def name(self) -> builtins.str:
        """`namespace/name` (or `name`) for messages; worked out only when one is written."""
        meta = self.data.get("metadata") or {}
        name = meta.get("name", "?") if isinstance(meta, Mapping) else "?"
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        return f"{ns}/{name}" if ns else str(name)

    def error(self, path: builtins.str, message: builtins.str) -> ObjectError:
        return ObjectError(self.kind, self.name, path, message)

    def get(self, path: builtins.str, default: Any = None) -> Any:
        """The value at a dotted path; `name[i]` segments index lists ("spec.containers[0].resources").

        A field that is absent (or null), on the way or at the end, gives `default`; so does an index past the end
        of its list. A field on the way that is there but of the wrong type (`spec.affinity: abc`,
        `resources: [a]`) is an ObjectError naming it: read as absent, it would change what is scheduled (a
        container's requests read as none). `lenient` reads only what may be wrong without harm (a display
        field, a condition others write)."""
        node: Any = self.data
        for name, index in _segments(path):
            if type(node) is not dict and not isinstance(node, Mapping):  # the exact-type test is the fast path
                raise self._wrong_type(path)
            node = node.get(name)
            if node is None:
                return default
            if index >= 0:
                if type(node) is not builtins.list and not isinstance(node, builtins.list):
                    raise self._wrong_type(path)
                if index >= len(node):
                    return default
                node = node[index]
                if node is None:
                    return default
        return node

    def _wrong_type(self, path: builtins.str) -> ObjectError:
        """The error for the field on the way to `path` that is there but of the wrong type (walked again: only
        a bad object pays for finding which)."""
        node: Any = self.data
        segments = _segments(path)
        for i, (name, index) in enumerate(segments):
            if not isinstance(node, Mapping):
                return self.error(_prefix(segments, i - 1, with_index=True), f"expected a mapping, got {_short(node)}")
            node = node.get(name)
            if index >= 0:
                if not isinstance(node, builtins.list):
                    return self.error(_prefix(segments, i, with_index=False), f"expected a list, got {_short(node)}")
                node = node[index] if index < len(node) else None
        raise AssertionError(f"no field of the wrong type on the way to {path}")  # pragma: no cover

    def lenient(self, path: builtins.str, default: Any = None) -> Any:
        """`get`, but a field on the way of the wrong type gives `default`: for fields whose absence changes
        nothing that is scheduled (the caller says why)."""
        try:
            return self.get(path, default)
        except ObjectError:
            return default

    def str(self, path: builtins.str, default: builtins.str = "") -> builtins.str:
        value = self.get(path)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(path, f"expected a string, got {value!r}")
        return value

    def int(self, path: builtins.str, default: builtins.int | None = None) -> builtins.int | None:
        value = self.get(path)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise self.error(path, f"expected an integer, got {value!r}")
        return value

    def float(self, path: builtins.str, default: builtins.float | None = None) -> builtins.float | None:
        value = self.get(path)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, builtins.int | float):
            if isinstance(value, str):
                try:
                    return float(value)
                except ValueError:
                    pass
            raise self.error(path, f"expected a number, got {value!r}")
        return float(value)

    def bool(self, path: builtins.str, default: builtins.bool = False) -> builtins.bool:
        value = self.get(path)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(path, f"expected true or false, got {value!r}")
        return value

    def map(self, path: builtins.str) -> builtins.dict[builtins.str, Any]:
        value = self.get(path)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(path, f"expected a mapping, got {value!r}")
        return dict(value)

    def str_map(self, path: builtins.str) -> builtins.dict[builtins.str, builtins.str]:
        value = self.map(path)
        for key, item in value.items():
            if not isinstance(item, str):
                raise self.error(f"{path}.{key}", f"expected a string, got {item!r}")
        return value

    def list(self, path: builtins.str) -> builtins.list[Any]:
        value = self.get(path)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"expected a list, got {value!r}")
        return value

    def time(self, path: builtins.str) -> builtins.float | None:
        value = self.get(path)
        if value is None:
            return None
        try:
            return parse_time(value)
        except (TypeError, ValueError) as err:
            raise self.error(path, f"expected an RFC 3339 time, got {value!r}") from err

    def duration(self, path: builtins.str) -> builtins.float | None:
        value = self.get(path)
        if value is None:
            return None
        try:
            return duration.parse_duration(value)
        except duration.DurationError as err:
            raise self.error(path, str(err)) from err

    def quantity(self, path: builtins.str, value: Any) -> builtins.float:
        """A non-negative quantity in the scheduler's unit for resource `path`'s last segment."""
        resource = path.rsplit(".", 1)[-1]
        unit = "cpu" if resource == "cpu" else "bytes" if resource == "memory" or resource.endswith("storage") else ""
        try:
            amount = _amount(unit, value) if type(value) is builtins.str else _convert(unit, value)
        except quantity.QuantityError as err:
            raise self.error(path, str(err)) from err
        if amount < 0:
            raise self.error(path, f"negative quantity {value!r}")
        return amount

    def resources(self, path: builtins.str) -> builtins.dict[builtins.str, builtins.float]:
        """A ResourceList: cpu in millicores, memory in bytes, everything else in units."""
        return {name: self.quantity(f"{path}.{name}", value) for name, value in self.map(path).items()}


_SECTIONS = ("metadata", "spec", "status")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _prefix(segments: tuple[tuple[str, int], ...], upto: int, *, with_index: bool) -> str:
    """The dotted path of `segments[: upto + 1]` as written in messages (`spec.containers[0].resources`)."""
    parts = [f"{n}[{i}]" if i >= 0 else n for n, i in segments[:upto]]
    name, index = segments[upto]
    parts.append(f"{name}[{index}]" if with_index and index >= 0 else name)
    return ".".join(parts)


@functools.lru_cache(maxsize=1024)
def _segments(path: str) -> tuple[tuple[str, int], ...]:
    """A dotted path split once: (field name, list index or -1) per segment."""
    out = []
    for part in path.split("."):
        name, _, index = part.partition("[")
        out.append((name, int(index.rstrip("]")) if index else -1))
    return tuple(out)


def plain_quantity(resource: str, value: Any) -> float | None:
    """A well-formed, non-negative quantity string in the scheduler's unit for `resource`; None otherwise (the
    caller then takes the checked path, `Reader.quantity`, which says what is wrong)."""
    return _plain_amount(resource, value) if type(value) is str else None


@functools.lru_cache(maxsize=4096)
def _plain_amount(resource: str, value: str) -> float | None:
    """`plain_quantity` of a string: (resource, quantity) pairs repeat across pods ("cpu", "4")."""
    unit = "cpu" if resource == "cpu" else "bytes" if resource == "memory" or resource.endswith("storage") else ""
    try:
        amount = _amount(unit, value)
    except quantity.QuantityError:
        return None
    return amount if amount >= 0 else None


@functools.lru_cache(maxsize=4096)
def _amount(unit: str, value: str) -> float:
    """Quantity strings repeat across pods ("1", "4Gi", "500m"): each is parsed once per unit."""
    return _convert(unit, value)


def _convert(unit: str, value: str | int | float) -> float:
    if unit == "cpu":
        return float(quantity.to_millicores(value))
    if unit == "bytes":
        return float(quantity.to_bytes(value))
    return quantity.to_float(value)
