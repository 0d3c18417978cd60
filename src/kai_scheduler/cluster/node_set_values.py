"""`NodeSetValues`: values derived from the pool's node objects alone, kept from one snapshot to the next.

A plugin that reads the same thing from every node at each session open (a label parsed per node, taint
masks, label columns) pays a Python loop over all nodes per cycle, although the nodes rarely change. The
snapshot hands the same memo while it is built from the same node objects in the same order on the same
resource axis (the cache replaces a node object when its resourceVersion changes), so such values are
computed once per node set instead.

What goes in must depend on the node objects and their allocatable only, never on ledgers or pods. Values
are shared by every later session: never mutate them (arrays are handed back read-only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")


class NodeSetValues:
    def __init__(self) -> None:
        self._values: dict[str, object] = {}

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The value kept under `key` (one per plugin and quantity), computed by `compute` on first use."""
        if key in self._values:
            return cast(T, self._values[key])
        value = compute()
        self._values[key] = value
        return value

    def __len__(self) -> int:
        return len(self._values)
