"""Preferred-level node scores: floor(10 × (i + 1) / N) × 100000 for the i-th of N domains (§7.3 step 5)."""

from __future__ import annotations

import numpy as np

from kai_scheduler.api.topology import Topology
from kai_scheduler.plugins.topology import scores, tree
from tests import builders as b
from tests.plugins.topology import builders as t


def test_the_last_domain_of_the_order_scores_highest() -> None:
    snap = b.snapshot(t.nodes())
    domains = tree.build(Topology.from_dict(t.topology()), snap.nodes)
    everyone = np.ones(8, dtype=bool)
    got = scores.preferred_scores(domains, 2, [3, 1, 0, 2], everyone)
    # racks in order r4, r2, r1, r3 → 2, 5, 7, 10 (× 100000); each node gets its rack's score
    assert got.tolist() == [7e5, 7e5, 5e5, 5e5, 10e5, 10e5, 2e5, 2e5]


def test_nodes_outside_the_candidates_score_nothing() -> None:
    snap = b.snapshot(t.nodes())
    domains = tree.build(Topology.from_dict(t.topology()), snap.nodes)
    some = np.array([True, True, False, False, False, False, False, False])
    assert scores.preferred_scores(domains, 2, [0], some).tolist() == [10e5, 10e5, 0, 0, 0, 0, 0, 0]
