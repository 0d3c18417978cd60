"""Domain selection (§7.3 steps 1-4), driven on the pure `subsets.select` over a 2-zone, 4-rack, 8-node tree.

Free resources are given per node directly (cpu, memory, gpu, pods columns); demands are 1-GPU pods."""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.api.topology import Topology
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.plugins.topology import subsets, tree
from tests import builders as b
from tests.plugins.topology import builders as t

ALL = np.ones(8, dtype=bool)
RACK, ZONE, HOST = 2, 1, 3


def _tree() -> tree.DomainTree:
    return tree.build(Topology.from_dict(t.topology()), b.snapshot(t.nodes()).nodes)


def _free(gpus: list[float]) -> subsets.Matrix:
    free = np.zeros((8, 4))
    free[:, 0], free[:, 1], free[:, 3] = 64000, 2**39, 110
    free[:, GPU] = gpus
    return free


def _gpu_pods(count: int, free: subsets.Matrix) -> subsets.Demand:
    request = np.array([0.0, 0.0, 1.0, 1.0])
    return subsets.Demand(count, request * count, subsets.copies_per_node(free, request, None, GPU))


def _ids(domains: tree.DomainTree, selection: subsets.Selection) -> list[str]:
    return [domains.levels[c.level].ids[c.domain] for c in selection.choices]


@pytest.mark.parametrize(
    "gpus, count, required, preferred, want",
    [
        pytest.param(
            [4] * 8, 8, RACK, None, ["z1.r1", "z1.r2", "z2.r3", "z2.r4"], id="every rack that fits, ties by id"
        ),
        pytest.param(
            [4, 4, 4, 4, 4, 2, 4, 4],
            6,
            RACK,
            None,
            ["z2.r3", "z2.r4", "z1.r1", "z1.r2"],
            id="fuller zone first, then fuller rack inside it",
        ),
        pytest.param(
            [4, 4, 1, 4, 4, 4, 4, 4],
            6,
            RACK,
            None,
            ["z1.r1", "z2.r3", "z2.r4"],
            id="a rack without room for all pods is left out; its fuller zone still goes first",
        ),
        pytest.param([4] * 8, 12, RACK, None, [], id="nothing when no rack fits"),
        pytest.param(
            [4] * 8,
            8,
            ZONE,
            RACK,
            ["z1.r1", "z1.r2", "z2.r3", "z2.r4", "z1", "z2"],
            id="preferred level first, then up to the required level",
        ),
        pytest.param([4] * 8, 12, None, RACK, ["z1", "z2", "root"], id="a preferred level alone goes up to the root"),
        pytest.param([4] * 8, 40, None, RACK, [], id="not even the root fits"),
    ],
)
def test_order_of_candidate_domains(
    gpus: list[float], count: int, required: int | None, preferred: int | None, want: list[str]
) -> None:
    domains, free = _tree(), _free(gpus)
    got = subsets.select(
        domains, required=required, preferred=preferred, nodes=ALL, free=free, demand=_gpu_pods(count, free)
    )
    assert _ids(domains, got) == want


def test_the_incoming_node_set_bounds_the_search() -> None:
    """A nested subgroup inside z2 never sees z1's racks, and the zone level is z2 itself."""
    domains, free = _tree(), _free([4] * 8)
    inside_z2 = np.array([False] * 4 + [True] * 4)
    got = subsets.select(domains, required=ZONE, preferred=RACK, nodes=inside_z2, free=free, demand=_gpu_pods(4, free))
    assert _ids(domains, got) == ["z2.r3", "z2.r4", "z2"]
    assert subsets.lowest_common_level(domains, inside_z2) == ZONE


def test_running_pods_pin_the_required_domain() -> None:
    domains, free = _tree(), _free([4] * 8)
    got = subsets.select(
        domains, required=RACK, preferred=HOST, nodes=ALL, free=free, demand=_gpu_pods(2, free), pinned=np.array([7])
    )
    assert _ids(domains, got) == ["z2.r4.z2-r4-0", "z2.r4.z2-r4-1", "z2.r4"]


def test_mixed_tasks_compare_the_summed_request() -> None:
    domains, free = _tree(), _free([4] * 8)
    total = np.array([0.0, 0.0, 9.0, 3.0])
    got = subsets.select(domains, required=RACK, preferred=None, nodes=ALL, free=free, demand=subsets.Demand(3, total))
    assert got.choices == ()
    assert got.roomiest is not None and got.roomiest_short == GPU


def test_a_resource_no_domain_has_counts_as_a_ratio_of_1000() -> None:
    domains, free = _tree(), _free([0] * 8)
    got = subsets.select(
        domains,
        required=ZONE,
        preferred=None,
        nodes=ALL,
        free=free,
        demand=subsets.Demand(2, np.array([0.0, 0.0, 1.0, 2.0])),
    )
    assert got.choices == () and got.roomiest_short == GPU


def test_the_shortfall_names_the_roomiest_domain_of_the_widest_level() -> None:
    domains, free = _tree(), _free([3, 4, 4, 4, 4, 4, 4, 4])
    got = subsets.select(domains, required=RACK, preferred=None, nodes=ALL, free=free, demand=_gpu_pods(9, free))
    assert got.choices == () and domains.levels[got.widest].ids[got.roomiest or 0] == "z1.r2"
    assert got.roomiest_copies == 8


def test_preferred_domains_are_in_sorted_tree_order() -> None:
    domains, free = _tree(), _free([4, 4, 4, 4, 3, 4, 4, 4])
    got = subsets.select(domains, required=None, preferred=RACK, nodes=ALL, free=free, demand=_gpu_pods(20, free))
    assert [domains.levels[RACK].ids[d] for d in got.preferred] == ["z2.r3", "z2.r4", "z1.r1", "z1.r2"]
