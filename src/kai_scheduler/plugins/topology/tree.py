"""Domain trees of a Topology, built from node labels each session (§1.4, §7.3; KAI `plugins/topology/`).

Level 0 is the root (one domain, "root"); level i ≥ 1 is the topology's i-th level, widest first. A node is in
the tree only if it carries every level label; its domain at level i is identified by the dot-joined label
values of levels 1..i, so two racks named "r1" in different zones are different domains. Levels without any
node have no domains. Everything is an array over the snapshot's node rows, for vector selection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.api.topology import Topology
from kai_scheduler.cluster.node_info import NodeInfo

ROOT_ID = "root"
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class TreeLevel:
    """One level: its domains, each node's domain (-1: not in the tree) and each domain's parent."""

    label: str  # the node label ("" for the root level)
    alias: str
    ids: tuple[str, ...]  # domain index → domain id
    of_node: Ints  # node row → domain index at this level, -1 outside the tree
    parent: Ints  # domain index → its parent's index one level up (-1 at the root level)

    @property
    def name(self) -> str:
        """How messages name the level: its alias, else its node label."""
        return self.alias or self.label or ROOT_ID


@dataclass(frozen=True, slots=True)
class DomainTree:
    topology: str
    levels: tuple[TreeLevel, ...]  # [0] is the root level
    in_tree: Mask  # nodes that carry every level label

    def level_index(self, level: str) -> int | None:
        """The level named by node label or alias (1 = widest), or None if the topology has no such level."""
        for i, lv in enumerate(self.levels[1:], start=1):
            if level in (lv.label, lv.alias):
                return i
        return None

    def level_names(self) -> list[str]:
        return [lv.alias or lv.label for lv in self.levels[1:]]

    def ancestors(self, level: int, upper: int) -> Ints:
        """For every domain at `level`, the index of its ancestor at level `upper` (≤ `level`)."""
        index: Ints = np.arange(len(self.levels[level].ids), dtype=np.int64)
        for lv in range(level, upper, -1):
            index = self.levels[lv].parent[index]
        return index


def build(topology: Topology, nodes: Sequence[NodeInfo]) -> DomainTree:
    """The domain tree of `topology` over the snapshot's nodes (rows in snapshot order)."""
    n = len(nodes)
    labels = [lv.node_label for lv in topology.levels]
    values = [[node.labels.get(label) for label in labels] for node in nodes]
    in_tree = np.array([all(v is not None for v in row) for row in values], dtype=bool)
    root = TreeLevel("", "", (ROOT_ID,), np.where(in_tree, 0, -1).astype(np.int64), np.array([-1], dtype=np.int64))
    levels = [root]
    for depth, spec in enumerate(topology.levels, start=1):
        index: dict[str, int] = {}
        parent_of: list[int] = []
        of_node = np.full(n, -1, dtype=np.int64)
        upper = levels[-1]
        for row in np.flatnonzero(in_tree).tolist():
            domain = ".".join(str(v) for v in values[row][:depth])
            found = index.get(domain)
            if found is None:
                found = index[domain] = len(index)
                parent_of.append(int(upper.of_node[row]))
            of_node[row] = found
        levels.append(
            TreeLevel(spec.node_label, spec.alias, tuple(index), of_node, np.array(parent_of, dtype=np.int64))
        )
    return DomainTree(topology.meta.name, tuple(levels), in_tree)
