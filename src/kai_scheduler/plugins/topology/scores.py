"""Preferred-level node scores (§7.3 step 5): keep a subgroup's pods together inside the chosen domain.

The preferred-level domains, enumerated in sorted-tree order (fullest first), score their nodes
`floor(10 × (i + 1) / N) × scores.TOPOLOGY` for the i-th (0-based) of N: the emptiest scores highest, so the
pods of a subgroup that spans several preferred-level domains pile into the roomiest one first, then the next.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kai_scheduler.plugins import scores
from kai_scheduler.plugins.topology.subsets import Floats
from kai_scheduler.plugins.topology.tree import DomainTree, Mask


def preferred_scores(tree: DomainTree, level: int, order: Sequence[int], nodes: Mask) -> Floats:
    """Per node row: the score of its preferred-level domain among `order`; 0 outside `nodes` or the order."""
    n_domains = len(tree.levels[level].ids)
    by_domain = np.zeros(n_domains + 1)  # the extra slot scores nodes outside the tree (-1)
    total = len(order)
    for i, domain in enumerate(order):
        by_domain[domain] = (10 * (i + 1) // total) * scores.TOPOLOGY
    out: Floats = np.where(nodes, by_domain[tree.levels[level].of_node], 0.0)
    return out
