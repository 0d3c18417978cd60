"""Read YAML documents and remember where every mapping and key sits, so errors can cite `file:line`.

PyYAML drops positions once it has built Python objects. The loader here records, per constructed dict
(by identity), the line of the mapping and of each of its keys in a side table (`Lines`), so the data stays
plain dicts and lists. Two more departures from `yaml.safe_load`, both to match what users mean: timestamps
stay strings (Kubernetes reads RFC 3339 text, and `now:` is parsed by us), and a key repeated in one mapping
is an error instead of silently keeping the last value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kai_scheduler.api.errors import ObjectError

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MAP_TAG = "tag:yaml.org,2002:map"


class ScenarioError(ObjectError):
    """A whole-file problem: missing or unreadable file, invalid YAML, a top level that is neither form.

    A subclass of ObjectError so callers catch one type; its str() is `source: message`, one line.
    """

    def __init__(self, source: str, message: str) -> None:
        super().__init__("file", source, "", message, source=source)

    def with_source(self, source: str) -> ScenarioError:
        return ScenarioError(source, self.message)

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


class Lines:
    """Line numbers (1-based) of the mappings of one loaded file and of their keys, looked up by identity.

    Each recorded dict is held, so its id cannot be reused by another object while the table lives."""

    __slots__ = ("_maps",)

    def __init__(self) -> None:
        self._maps: dict[int, tuple[dict[Any, Any], int, dict[Any, int]]] = {}

    def record(self, data: dict[Any, Any], line: int, keys: dict[Any, int]) -> None:
        self._maps[id(data)] = (data, line, keys)

    def of(self, data: object, key: object = None) -> int | None:
        """The line of `key` in mapping `data`, else of `data` itself; None for objects not from the file."""
        entry = self._maps.get(id(data))
        if entry is None or entry[0] is not data:
            return None
        _, line, keys = entry
        if key is None:
            return line
        return keys.get(key, line)


class _Loader(_BaseLoader):  # type: ignore[misc]
    lines: Lines


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    keys: dict[Any, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if key_node.value in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
            )
        keys[key_node.value] = value_node.start_mark.line + 1
    loader.lines.record(data, node.start_mark.line + 1, keys)
    yield data
    data.update(loader.construct_mapping(node))


_Loader.add_constructor(_MAP_TAG, _construct_map)


def parse_documents(text: str, source: str) -> tuple[list[Any], Lines]:
    """Every non-empty YAML document of `text`, with the line table; invalid YAML is a ScenarioError."""
    lines = Lines()
    loader = _Loader(text)
    loader.lines = lines
    docs: list[Any] = []
    try:
        while loader.check_data():
            doc = loader.get_data()
            if doc is not None:
                docs.append(doc)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from err
    finally:
        loader.dispose()
    return docs, lines


def _yaml_error(err: yaml.YAMLError, source: str) -> ScenarioError:
    """One line out of PyYAML's multi-line message: where, and the problem."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        parts = [p for p in (err.context, err.problem) if p]
        message = "; ".join(" ".join(p.split()) for p in parts) or "malformed"
        column = f" (column {mark.column + 1})" if mark is not None else ""
        return ScenarioError(where, f"invalid YAML: {message}{column}")
    return ScenarioError(source, "invalid YAML: " + " ".join(str(err).split()))


def located(source: str, line: int | None) -> str:
    """`file:line`, or just `file` when the line is unknown."""
    return f"{source}:{line}" if line else source


def line_map(data: object, lines: Lines, path: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], int]:
    """The line of every mapping, key and list item under `data`, by path (keys and list indices).

    For locating problems found later, by code that sees only plain data (a scheduler configuration)."""
    out: dict[tuple[str | int, ...], int] = {}
    if isinstance(data, dict):
        own = lines.of(data)
        if own is not None:
            out[path] = own
        for key, value in data.items():
            line = lines.of(data, key)
            if line is not None:
                out[(*path, key)] = line
            out.update(line_map(value, lines, (*path, key)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            out.update(line_map(item, lines, (*path, i)))
    return out


def line_of(table: dict[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    """The line of `path`, else of its nearest ancestor in the table; None when nothing is known."""
    for end in range(len(path), -1, -1):
        line = table.get(path[:end])
        if line is not None:
            return line
    return None
