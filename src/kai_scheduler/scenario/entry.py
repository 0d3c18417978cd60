"""Typed, located access to one mapping of a scenario file (a node, a queue, a job, one of its tasks).

Like `api.fields.Reader` for Kubernetes JSON, but for the compact scenario format: every failure is an
ObjectError naming the entry (`job train-1`), the field path (`tasks[2].gpus`) and the place in the file
(`examples/bad.yaml:17`), so a user can fix the file from one line of output.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import duration, quantity
from kai_scheduler.api.errors import ObjectError, did_you_mean
from kai_scheduler.scenario.source import Lines, located

INT32_MAX = 2**31 - 1  # Kubernetes' integers (replicas, minMember, priorities) are int32
# Objects one count in a file may make (nodes, pods of a job, devices): a typo (count: 1e30) is told, not run
# until the memory is gone.
MAX_OBJECTS = 100_000
# A job's `createdAt` (minutes before now) and a queue's (seconds): past these a time is out of any calendar.
MAX_JOB_AGE_MINUTES = 10_000_000.0  # about 19 years
MAX_QUEUE_CREATED_SECONDS = 10_000_000_000.0  # the year 2286


@dataclass(frozen=True, slots=True)
class Where:
    """The file being read: its name as the user gave it and the line table of its mappings."""

    source: str
    lines: Lines

    def at(self, data: object, key: object = None) -> str:
        """`file:line` of `key` in `data` (or of `data`)."""
        return located(self.source, self.lines.of(data, key))


def _join(path: str, key: str | None) -> str:
    if not key:
        return path
    return f"{path}.{key}" if path and not key.startswith("[") else f"{path}{key}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class Entry:
    """One mapping of the scenario, read field by field; `path` is its place inside the named entry."""

    __slots__ = ("data", "kind", "name", "path", "where")

    def __init__(self, where: Where, data: Mapping[str, Any], kind: str, name: str, path: str = "") -> None:
        self.where = where
        self.data = data
        self.kind = kind
        self.name = name
        self.path = path

    @classmethod
    def named(cls, where: Where, raw: Any, kind: str, position: str) -> Entry:
        """A list item that must be a mapping with a string `name` (until read, `position` names it)."""
        if not isinstance(raw, Mapping):
            raise ObjectError(kind, position, "", f"expected a mapping, got {raw!r}", source=where.source)
        entry = cls(where, raw, kind, position)
        entry.name = entry.required_text("name")
        return entry

    # --- errors and structure ---

    def error(self, key: str | None, message: str) -> ObjectError:
        """An error about field `key` of this entry (None: the entry itself), at its line."""
        line_key = key.split("[", 1)[0].split(".", 1)[0] if key else None
        return ObjectError(
            self.kind, self.name, _join(self.path, key), message, source=self.where.at(self.data, line_key)
        )

    def check_keys(self, known: Collection[str]) -> None:
        """Reject a field this entry does not have: a typo must not be silently ignored."""
        for key in self.data:
            if key in known:
                continue
            guess = did_you_mean(str(key), known)
            raise self.error(str(key), f"unknown field{guess}; known fields: {', '.join(sorted(known))}")

    def child(self, key: str, known: Collection[str]) -> Entry | None:
        """The nested mapping under `key` as an Entry (None when absent), its keys checked."""
        raw = self.data.get(key)
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise self.error(key, f"expected a mapping, got {raw!r}")
        entry = Entry(self.where, raw, self.kind, self.name, _join(self.path, key))
        entry.check_keys(known)
        return entry

    def items(self, key: str) -> list[Entry]:
        """The list of mappings under `key`, each an Entry with path `key[i]`."""
        out = []
        for i, raw in enumerate(self.sequence(key)):
            if not isinstance(raw, Mapping):
                raise self.error(f"{key}[{i}]", f"expected a mapping, got {raw!r}")
            out.append(Entry(self.where, raw, self.kind, self.name, _join(self.path, f"{key}[{i}]")))
        return out

    def named_items(self, key: str, kind: str, *, unique: bool = True) -> list[Entry]:
        """The named entries of `kind` listed under `key` (nodes, queues…); `unique`: no name twice."""
        out: list[Entry] = []
        seen: set[str] = set()
        for i, raw in enumerate(self.sequence(key)):
            entry = Entry.named(self.where, raw, kind, f"{key}[{i}]")
            if unique and entry.name in seen:
                raise entry.error("name", f"duplicate {kind} name {entry.name!r}")
            seen.add(entry.name)
            out.append(entry)
        return out

    # --- scalars ---

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def text(self, key: str, default: str = "") -> str:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {value!r}")
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if not value:
            raise self.error(key, f"missing {key}")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def number(
        self, key: str, default: float | None = None, *, minimum: float | None = None, maximum: float | None = None
    ) -> float | None:
        """A number (a numeric string is accepted); below `minimum` or above `maximum` is an error."""
        value = self.data.get(key)
        if value is None:
            return default
        try:
            number: float | None = float(value) if _is_number(value) or isinstance(value, str) else None
        except (ValueError, OverflowError):  # not a number, or an integer past what a float holds
            number = None
        if number is None or not math.isfinite(number):
            raise self.error(key, f"expected a number, got {value!r}")
        if minimum is not None and number < minimum:
            raise self.error(key, f"must be at least {minimum:g}, got {value!r}")
        if maximum is not None and number > maximum:
            raise self.error(key, f"must be at most {maximum:g}, got {number:g}")
        return number

    def integer(
        self, key: str, default: int | None = None, *, minimum: int | None = None, maximum: int = INT32_MAX
    ) -> int | None:
        """An integer (a whole float is one) from `minimum` to `maximum`: int32 unless the caller says less (a
        count of objects to make: MAX_OBJECTS)."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(key, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise self.error(key, f"must be at most {maximum}, got {value:g}")
        return value

    def quantity(self, key: str, default: str | None = None) -> str | None:
        """A non-negative Kubernetes quantity, returned as the string to write in the object."""
        value = self.data.get(key)
        if value is None:
            return default
        try:
            amount = quantity.parse_quantity(value)
        except quantity.QuantityError:
            hint = quantity.near_miss(value)
            raise self.error(key, f"expected a Kubernetes quantity, got {value!r}{hint}") from None
        if amount < 0:
            raise self.error(key, f"negative quantity {value!r}")
        return value if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)

    def duration(self, key: str, *, allow_negative: bool = False) -> tuple[float, str] | None:
        """A Go duration ("90s", "10m") or a bare number of seconds: (seconds, Go duration text)."""
        value = self.data.get(key)
        if value is None:
            return None
        if _is_number(value):
            seconds, text = float(value), f"{value:g}s"
        else:
            try:
                seconds, text = duration.parse_duration(value), str(value)
            except duration.DurationError:
                message = f'expected a Go duration such as "90s" or "10m", got {value!r}'
                raise self.error(key, message) from None
        if not math.isfinite(seconds):  # YAML's .nan or .inf: no time is that long
            raise self.error(key, f"expected a finite duration, got {value!r}")
        if seconds < 0 and not allow_negative:
            raise self.error(key, f"must not be negative, got {value!r}")
        return seconds, text

    # --- collections ---

    def sequence(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {value!r}")
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        """The mapping under `key` itself (not a copy: its identity keeps its line numbers); {} if absent."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping, got {value!r}")
        return value

    def text_map(self, key: str) -> dict[str, str]:
        """Labels, annotations, selectors: string values; numbers become text, booleans are rejected."""
        out: dict[str, str] = {}
        for name, value in self.mapping(key).items():
            if isinstance(value, str):
                out[str(name)] = value
            elif _is_number(value):
                out[str(name)] = f"{value:g}" if isinstance(value, float) else str(value)
            else:
                raise self.error(f"{key}.{name}", f"expected a string, got {value!r} (quote it)")
        return out

    def mappings(self, key: str) -> list[dict[str, Any]]:
        """A list of mappings passed through as written (taints, tolerations, affinity terms)."""
        out = []
        for i, raw in enumerate(self.sequence(key)):
            if not isinstance(raw, Mapping):
                raise self.error(f"{key}[{i}]", f"expected a mapping, got {raw!r}")
            out.append(dict(raw))
        return out
