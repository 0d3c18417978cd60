"""Topology validating webhook (BEHAVIOR.md §1.4)."""

from __future__ import annotations

import pytest

from kai_scheduler.admission import topology as topohook
from tests.admission import builders


@pytest.mark.parametrize(
    "levels, want",
    [
        pytest.param([], "spec.levels: needs 1 to 16 levels, has 0", id="no levels"),
        pytest.param([{"nodeLabel": f"l{i}"} for i in range(17)], "needs 1 to 16 levels, has 17", id="17 levels"),
        pytest.param([{"alias": "a"}], "spec.levels[0].nodeLabel: missing node label", id="no node label"),
        pytest.param(
            [{"nodeLabel": "zone"}, {"nodeLabel": "zone"}],
            "spec.levels[1].nodeLabel: duplicate level",
            id="duplicate node label",
        ),
        pytest.param(
            [{"nodeLabel": "zone", "alias": "a"}, {"nodeLabel": "rack", "alias": "a"}],
            "spec.levels[1].alias: alias 'a' repeats",
            id="duplicate alias",
        ),
        pytest.param(
            [{"nodeLabel": "zone"}, {"nodeLabel": "rack", "alias": "zone"}],
            "spec.levels[1].alias: alias 'zone' repeats",
            id="alias is an earlier node label",
        ),
        pytest.param(
            [{"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}], "rack", id="alias is a later node label"
        ),
        pytest.param(
            [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
            "may only be the last level",
            id="hostname not last",
        ),
    ],
)
def test_bad_topologies_are_denied(levels: list[builders.JSON], want: str) -> None:
    v = topohook.validate(builders.rev(builders.topology(levels=levels)))
    assert not v.allowed
    assert v.message.startswith("Topology t spec.levels")
    assert want in v.message


def test_good_topology_is_allowed() -> None:
    assert topohook.validate(builders.rev(builders.topology())).allowed


def test_aliases_may_change_on_update() -> None:
    old = builders.topology()
    new = builders.topology(
        levels=[
            {"nodeLabel": "zone", "alias": "az"},
            {"nodeLabel": "rack", "alias": "r"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    )
    assert topohook.validate(builders.rev(new, operation="UPDATE", old=old)).allowed


def test_node_labels_are_immutable() -> None:
    old = builders.topology()
    new = builders.topology(levels=[{"nodeLabel": "zone"}, {"nodeLabel": "kubernetes.io/hostname"}])
    v = topohook.validate(builders.rev(new, operation="UPDATE", old=old))
    assert not v.allowed
    assert "the node labels of a Topology cannot change" in v.message
