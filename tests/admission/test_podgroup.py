"""PodGroup validating webhook (BEHAVIOR.md §1.2)."""

from __future__ import annotations

import pytest

from kai_scheduler.admission import podgroup as pghook
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.memory import MemoryStore
from tests.admission import builders


def sg(name: str, parent: str | None = None, **fields: object) -> builders.JSON:
    out: builders.JSON = {"name": name, **fields}
    if parent is not None:
        out["parent"] = parent
    return out


@pytest.mark.parametrize(
    "spec, want",
    [
        pytest.param({"minMember": -1}, "spec.minMember: must be at least 0", id="negative minMember"),
        pytest.param(
            {"minMember": 1, "minSubGroup": 1},
            "minMember and minSubGroup are mutually exclusive",
            id="root minMember and minSubGroup",
        ),
        pytest.param(
            {"subGroups": [sg("a", minMember=1), sg("a", minMember=1)]}, "duplicate subgroup 'a'", id="duplicate names"
        ),
        pytest.param({"subGroups": [sg("a", "ghost", minMember=1)]}, "no subgroup named 'ghost'", id="missing parent"),
        pytest.param({"subGroups": [sg("a", "b"), sg("b", "a")]}, "part of a parent cycle", id="cycle"),
        pytest.param({"subGroups": [sg("a", "a", minMember=1)]}, "part of a parent cycle", id="own parent"),
        pytest.param({"subGroups": [{"minMember": 1}]}, "spec.subGroups[0].name: missing subgroup name", id="no name"),
        pytest.param(
            {"subGroups": [sg("a", minMember=1, minSubGroup=1)]},
            "mutually exclusive",
            id="subgroup minMember and minSubGroup",
        ),
        pytest.param(
            {"subGroups": [sg("a", minMember=-2)]},
            "spec.subGroups[0].minMember: must be at least 0",
            id="negative subgroup minMember",
        ),
        pytest.param(
            {"subGroups": [sg("a")]},
            "spec.subGroups[0].minMember: leaf subgroup 'a' must set minMember",
            id="leaf without minMember",
        ),
        pytest.param(
            {"subGroups": [sg("a", minSubGroup=0)]},
            "spec.subGroups[0].minSubGroup: leaf subgroup 'a'",
            id="leaf with minSubGroup",
        ),
        pytest.param(
            {"subGroups": [sg("p", minMember=2), sg("c", "p", minMember=1)]},
            "spec.subGroups[0].minMember: subgroup 'p' has subgroups",
            id="mid-level minMember on create",
        ),
    ],
)
def test_bad_podgroups_are_denied(spec: builders.JSON, want: str) -> None:
    v = pghook.validate(builders.rev(builders.podgroup(**spec)))
    assert not v.allowed
    assert v.message.startswith("PodGroup team-a/pg ")
    assert want in v.message


def test_mid_level_minmember_on_update_is_a_warning() -> None:
    obj = builders.podgroup(subGroups=[sg("p", minMember=2), sg("c", "p", minMember=1)])
    v = pghook.validate(builders.rev(obj, operation="UPDATE", old=obj))
    assert v.allowed
    assert "subgroup 'p' has subgroups" in v.warnings[0]


def test_good_tree_is_allowed() -> None:
    obj = builders.podgroup(
        minSubGroup=2,
        subGroups=[
            sg("prefill", minSubGroup=1),
            sg("p0", "prefill", minMember=2),
            sg("p1", "prefill", minMember=2),
            sg("decode", minMember=3),
        ],
    )
    v = pghook.validate(builders.rev(obj))
    assert (v.allowed, v.warnings) == (True, ())


@pytest.mark.parametrize(
    "spec, want",
    [
        pytest.param(
            {"minSubGroup": 3, "subGroups": [sg("a", minMember=1)]}, "spec.minSubGroup: 3 is more than the 1", id="root"
        ),
        pytest.param(
            {"subGroups": [sg("p", minSubGroup=2), sg("c", "p", minMember=1)]},
            "spec.subGroups[0].minSubGroup: 2 is more than the 1 subgroups of 'p'",
            id="subgroup",
        ),
    ],
)
def test_min_sub_group_above_children_is_a_warning(spec: builders.JSON, want: str) -> None:
    v = pghook.validate(builders.rev(builders.podgroup(**spec)))
    assert v.allowed
    assert want in v.warnings[0]


def test_levels_without_topology_are_a_warning() -> None:
    v = pghook.validate(builders.rev(builders.podgroup(topologyConstraint={"requiredTopologyLevel": "rack"})))
    assert v.allowed
    assert "spec.topologyConstraint.topology: levels are set without a topology" in v.warnings[0]


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(ManualClock(0.0))
    s.create(builders.topology("t"))
    return s


@pytest.mark.parametrize(
    "constraint, want",
    [
        pytest.param(
            {"topology": "t", "requiredTopologyLevel": "row"},
            "requiredTopologyLevel: Topology t has no level 'row'",
            id="unknown required level",
        ),
        pytest.param(
            {"topology": "t", "preferredTopologyLevel": "row"},
            "preferredTopologyLevel: Topology t has no",
            id="unknown preferred level",
        ),
        pytest.param(
            {"topology": "t", "requiredTopologyLevel": "rack", "preferredTopologyLevel": "z"},
            "preferredTopologyLevel: 'z' is wider than the required level 'rack'",
            id="preferred wider",
        ),
    ],
)
def test_bad_topology_levels_are_denied(store: MemoryStore, constraint: builders.JSON, want: str) -> None:
    v = pghook.validate(builders.rev(builders.podgroup(topologyConstraint=constraint)), store)
    assert not v.allowed
    assert want in v.message


def test_subgroup_constraint_is_checked(store: MemoryStore) -> None:
    obj = builders.podgroup(
        subGroups=[sg("a", minMember=1, topologyConstraint={"topology": "t", "requiredTopologyLevel": "x"})]
    )
    v = pghook.validate(builders.rev(obj), store)
    assert not v.allowed
    assert "spec.subGroups[0].topologyConstraint.requiredTopologyLevel" in v.message


def test_good_levels_by_label_or_alias_are_allowed(store: MemoryStore) -> None:
    c = {"topology": "t", "requiredTopologyLevel": "z", "preferredTopologyLevel": "kubernetes.io/hostname"}
    v = pghook.validate(builders.rev(builders.podgroup(topologyConstraint=c)), store)
    assert (v.allowed, v.warnings) == (True, ())


def test_missing_topology_is_a_warning(store: MemoryStore) -> None:
    c = {"topology": "later", "requiredTopologyLevel": "rack"}
    v = pghook.validate(builders.rev(builders.podgroup(topologyConstraint=c)), store)
    assert v.allowed
    assert "no Topology named 'later'" in v.warnings[0]


def test_unreadable_preemption_delay_is_a_warning() -> None:
    v = pghook.validate(builders.rev(builders.podgroup(preemptionDelay="later")))
    assert v.allowed
    assert "spec.preemptionDelay" in v.warnings[0]
