"""Properties of the Grove grouper over random PodGangs: the PodGroup is one the PodGroup webhook admits, its
minMember is the sum of the podgroups' minReplicas, its leaves are the podgroups (under the config that lists each,
else the root), and every referenced pod joins the podgroup that lists it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.admission import podgroup as podgroup_webhook
from kai_scheduler.admission.review import Review
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.cluster.job_info import build_tree
from kai_scheduler.podgrouper import hub
from kai_scheduler.podgrouper.context import Config, Context, Obj
from kai_scheduler.podgrouper.type_defaults import TypeDefaults
from tests.podgrouper.helpers import reference
from tests.podgrouper.test_grove import NS, PCS_UID

JSON = dict[str, Any]
T = TypeVar("T")
PCS: JSON = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueSet",
    "metadata": {"name": "svc", "namespace": NS, "uid": PCS_UID, "annotations": {"kai.scheduler/topology": "t"}},
}
CLIQUE: JSON = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodClique",
    "metadata": {"name": "svc-0-c", "namespace": NS, "uid": "c-1", "ownerReferences": [reference(PCS)]},
}
LEVELS = st.sampled_from(["", "zone", "kai.scheduler/rack", "kubernetes.io/hostname"])


class Lookup:
    def __init__(self, gang: JSON) -> None:
        self.gang = gang

    def priority_class_exists(self, name: str) -> bool:
        return name in {"train", "inference"}

    def podgroup_exists(self, namespace: str, name: str) -> bool:
        return False

    def podgroup(self, namespace: str, name: str) -> JSON | None:
        return None

    def pods(self, namespace: str, labels: Mapping[str, str]) -> list[JSON]:
        return []

    def read(self, plural: str, namespace: str, name: str) -> JSON | None:
        return self.gang if (plural, namespace, name) == ("podgangs", NS, "svc-0") else None

    def type_defaults(self) -> TypeDefaults:
        return {}

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        return make()  # each pod computes it anew: the pods must still agree


def _pack(required: str, preferred: str) -> JSON:
    return {"packConstraint": {k: v for k, v in (("required", required), ("preferred", preferred)) if v}}


@st.composite
def podgangs(draw: st.DrawFn) -> JSON:
    sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=6))
    podgroups = []
    for i, size in enumerate(sizes):
        item: JSON = {
            "name": f"svc-0-pg{i}",
            "minReplicas": draw(st.integers(0, size)),
            "podReferences": [{"namespace": NS, "name": f"svc-0-pg{i}-{j}"} for j in range(size)],
        }
        if draw(st.booleans()):
            item["topologyConstraint"] = _pack(draw(LEVELS), draw(LEVELS))
        podgroups.append(item)
    # A partition of some podgroups into configs (each podgroup in one config at most).
    owners = [draw(st.integers(-1, 2)) for _ in podgroups]
    configs = []
    for c in range(3):
        members = [pg["name"] for pg, owner in zip(podgroups, owners, strict=True) if owner == c]
        if members:
            configs.append(
                {"name": f"svc-0-set{c}", "podGroupNames": members, "topologyConstraint": _pack(draw(LEVELS), "")}
            )
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "svc-0", "namespace": NS, "uid": "g-1"},
        "spec": {
            "podgroups": podgroups,
            "topologyConstraintGroupConfigs": configs,
            "topologyConstraint": _pack(draw(LEVELS), draw(LEVELS)),
        },
    }


def _pod(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"u-{name}",
            "labels": {"grove.io/podgang": "svc-0"},
            "ownerReferences": [reference(CLIQUE)],
        },
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]},
    }


@settings(max_examples=150, deadline=None)
@given(podgangs())
def test_the_podgroup_of_any_podgang_is_admitted_and_mirrors_it(gang: JSON) -> None:
    podgroups = gang["spec"]["podgroups"]
    parent_of = {name: c["name"] for c in gang["spec"]["topologyConstraintGroupConfigs"] for name in c["podGroupNames"]}
    pods = [ref["name"] for pg in podgroups for ref in pg["podReferences"]]
    seen: set[str] = set()
    for pod_name in pods:
        grouping = hub.group(Context((Obj(_pod(pod_name)), Obj(CLIQUE), Obj(PCS)), Config(), Lookup(gang)))
        assert grouping.subgroup == pod_name.rsplit("-", 1)[0]
        body = grouping.podgroup.to_dict()
        seen.add(str(body))
        verdict = podgroup_webhook.validate(Review("u", "v1", "PodGroup", "CREATE", body))
        assert verdict.allowed, verdict.message
        pg = PodGroup.from_dict(body)
        assert pg.min_member == sum(p["minReplicas"] for p in podgroups)
        leaves = {sg.name: sg for sg in pg.sub_groups if sg.min_member is not None}
        assert {name: sg.min_member for name, sg in leaves.items()} == {p["name"]: p["minReplicas"] for p in podgroups}
        assert {name: sg.parent for name, sg in leaves.items()} == {
            p["name"]: parent_of.get(p["name"]) for p in podgroups
        }
        for sg in pg.sub_groups:
            assert sg.topology_constraint is None or sg.topology_constraint.topology == "t"
        root, pod_sets = build_tree(pg)
        assert set(pod_sets) == set(leaves)
        assert sum(ps.min_available for ps in root.pod_sets()) == pg.min_member
    assert len(seen) <= 1, "pods of one PodGang computed different PodGroups"
