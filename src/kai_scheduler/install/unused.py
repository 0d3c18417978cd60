"""Values that change nothing in the install they were given to, so that `kai manifests` can say so.

In the operator install (the default) the operator renders the components from the Config `kai-config` and the
SchedulingShards with the chart's defaults, so a value such as `scheduler.replicas` set for `kai manifests` reaches
no object; likewise `nodeScaleAdjuster.*` while it is not enabled. A value is unused when putting it back to its
default leaves every object of the stream as it was: one rendering per value that differs from the default.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from kai_scheduler.install.model import manifests
from kai_scheduler.install.values import Values, defaults


def _leaves(values: Any, base: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf of `values` that differs from `base`; a mapping of the defaults is walked
    into, anything else (lists, scalars, a map that is empty in the defaults) is one leaf."""
    if isinstance(values, dict) and isinstance(base, dict) and base:
        for key, value in values.items():
            yield from _leaves(value, base.get(key), f"{path}.{key}" if path else key)
    elif values != base:
        yield path, values


def _set(values: Values, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = values
    for part in parents:
        node = node[part]
    node[last] = copy.deepcopy(value)


def _get(values: Values, path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        node = node[part]
    return node


def unused(values: Values, *, skip_crds: bool = False) -> list[str]:
    """The dotted keys whose value differs from the default and changes nothing in the stream of `values`."""
    base = defaults()
    rendered = manifests(values, skip_crds=skip_crds)
    out = []
    for path, _ in _leaves(values, base):
        reverted = copy.deepcopy(values)
        _set(reverted, path, _get(base, path))
        if manifests(reverted, skip_crds=skip_crds) == rendered:
            out.append(path)
    return out
