"""Domain trees from node labels (§1.4, §7.3): ids are dot-joined label values; unlabelled nodes are outside."""

from __future__ import annotations

from kai_scheduler.api.topology import Topology
from kai_scheduler.plugins.topology import tree
from tests import builders as b
from tests.plugins.topology import builders as t


def _tree(extra: list[t.JSON] | None = None) -> tree.DomainTree:
    snap = b.snapshot([*t.nodes(), *(extra or [])])
    return tree.build(Topology.from_dict(t.topology()), snap.nodes)


def test_levels_widest_first_under_one_root() -> None:
    domains = _tree()
    assert [lv.name for lv in domains.levels] == ["root", "zone", "rack", "kubernetes.io/hostname"]
    assert domains.levels[0].ids == ("root",)
    assert domains.levels[1].ids == ("z1", "z2")
    assert domains.levels[2].ids == ("z1.r1", "z1.r2", "z2.r3", "z2.r4")
    assert domains.levels[3].ids[0] == "z1.r1.z1-r1-0"


def test_each_domain_knows_its_parent_and_each_node_its_domain() -> None:
    domains = _tree()
    assert domains.levels[2].parent.tolist() == [0, 0, 1, 1]
    assert domains.levels[2].of_node.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert domains.ancestors(3, 1).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_a_node_missing_a_level_label_is_outside_the_tree() -> None:
    domains = _tree([b.node("loose", labels={t.RACK: "r9"})])
    row = 0  # "loose" sorts first
    assert not domains.in_tree[row]
    assert all(lv.of_node[row] == -1 for lv in domains.levels)


def test_same_rack_name_in_two_zones_is_two_domains() -> None:
    snap = b.snapshot(
        [b.node("a", labels={t.ZONE: "z1", t.RACK: "r"}), b.node("c", labels={t.ZONE: "z2", t.RACK: "r"})]
    )
    domains = tree.build(
        Topology.from_dict(t.topology(levels=[{"nodeLabel": t.ZONE}, {"nodeLabel": t.RACK}])), snap.nodes
    )
    assert domains.levels[2].ids == ("z1.r", "z2.r")


def test_levels_are_found_by_label_or_alias() -> None:
    domains = _tree()
    assert domains.level_index("rack") == domains.level_index(t.RACK) == 2
    assert domains.level_index("row") is None
