"""Grove grouper: a PodCliqueSet's pods grouped by their PodGang (podgroups as subgroups, topology constraint
group configs as their parents, pack constraints as topology levels); pods wait for a PodGang not there yet."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
import yaml

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.retries import Retries
from tests.podgrouper.helpers import NOW, Cluster, controller_pod, reference, spec
from tests.podgrouper.test_grouper import JOB

JSON = dict[str, Any]
NS = "inference"
PCS_UID = "6f1e2d3c-0001-4b5a-9c8d-7e6f5a4b3c2d"
GANG_UID = "6f1e2d3c-0002-4b5a-9c8d-7e6f5a4b3c2d"
# A disaggregated inference service as Grove's operator makes it: a prefill clique of 2 pods (1 needed) and a
# decode clique of 4 (2 needed), packed together in one zone, decode's pods in one rack.
PCS = f"""
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: llm
  namespace: {NS}
  uid: {PCS_UID}
  annotations: {{kai.scheduler/topology: gpu-topology}}
spec:
  replicas: 1
  template:
    cliques:
    - {{name: prefill, spec: {{replicas: 2, minAvailable: 1}}}}
    - {{name: decode, spec: {{replicas: 4, minAvailable: 2}}}}
"""
CLIQUES = {"prefill": 2, "decode": 4}


def podgang(**changes: Any) -> JSON:
    gang: JSON = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {
            "name": "llm-0",
            "namespace": NS,
            "uid": GANG_UID,
            "labels": {"app.kubernetes.io/part-of": "llm", constants.LABEL_QUEUE: "serving"},
            "ownerReferences": [
                {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "llm", "uid": PCS_UID}
            ],
        },
        "spec": {
            "podgroups": [
                {
                    "name": f"llm-0-{clique}",
                    "minReplicas": {"prefill": 1, "decode": 2}[clique],
                    "podReferences": [{"namespace": NS, "name": f"llm-0-{clique}-{i}"} for i in range(count)],
                }
                for clique, count in CLIQUES.items()
            ],
            "topologyConstraint": {"packConstraint": {"required": "topology.kubernetes.io/zone"}},
            "topologyConstraintGroupConfigs": [
                {
                    "name": "llm-0-serve",
                    "podGroupNames": ["llm-0-prefill", "llm-0-decode"],
                    "topologyConstraint": {"packConstraint": {"preferred": "kai.scheduler/rack"}},
                }
            ],
            "priorityClassName": "inference",
        },
    }
    gang["spec"]["podgroups"][1]["topologyConstraint"] = {"packConstraint": {"required": "kai.scheduler/rack"}}
    for path, value in changes.items():
        node = gang
        *keys, last = path.split(".")
        for key in keys:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return gang


def grove_cluster(*, gang: JSON | None = None, pods: bool = True, clock: bool = False) -> Cluster:
    """The PodCliqueSet, its cliques (owned by it), their pods (owned by their clique, labelled with the gang) and,
    unless `gang` is {}, the PodGang."""
    c = Cluster(PCS)
    if clock:
        c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    pcs = c.owner("podcliquesets", "llm", NS)
    for clique, count in CLIQUES.items():
        obj = c.store.create(
            {
                "apiVersion": "grove.io/v1alpha1",
                "kind": "PodClique",
                "metadata": {
                    "name": f"llm-0-{clique}",
                    "namespace": NS,
                    "ownerReferences": [reference(pcs)],
                },
                "spec": {"replicas": count},
            }
        )
        for i in range(count if pods else 0):
            c.add(grove_pod(f"llm-0-{clique}-{i}", obj))
    if gang != {}:
        c.add(gang or podgang())
    return c


def grove_pod(name: str, clique: JSON, gang: str = "llm-0") -> JSON:
    labels = {"grove.io/podgang": gang, "grove.io/podclique": clique["metadata"]["name"]} if gang else {}
    return controller_pod(name, clique, labels=labels)


def _warnings(c: Cluster, pod: str) -> list[str]:
    return [
        e["message"]
        for e in c.store.list("events", NS)[0]
        if e["involvedObject"]["name"] == pod and e["reason"] == "PodGrouperWarning"
    ]


def test_a_disaggregated_gang_is_one_podgroup_with_a_subgroup_per_clique_under_their_group_config() -> None:
    c = grove_cluster()
    outcome = c.group()
    assert outcome.skipped == []
    pg = c.podgroup_of("llm-0-decode-3", NS)
    assert pg["metadata"]["name"] == f"pg-llm-0-{GANG_UID}"
    ref = pg["metadata"]["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == (
        "scheduler.grove.io/v1alpha1",
        "PodGang",
        "llm-0",
        GANG_UID,
    )
    assert pg["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llm"
    s = spec(pg)
    assert s["minMember"] == 3
    assert "minSubGroup" not in s
    assert s["queue"] == "serving"
    assert s["priorityClassName"] == "inference"
    assert s["topologyConstraint"] == {
        "topology": "gpu-topology",
        "requiredTopologyLevel": "topology.kubernetes.io/zone",
    }
    assert s["subGroups"] == [
        {
            "name": "llm-0-serve",
            "topologyConstraint": {"topology": "gpu-topology", "preferredTopologyLevel": "kai.scheduler/rack"},
        },
        {"name": "llm-0-prefill", "minMember": 1, "parent": "llm-0-serve"},
        {
            "name": "llm-0-decode",
            "minMember": 2,
            "parent": "llm-0-serve",
            "topologyConstraint": {"topology": "gpu-topology", "requiredTopologyLevel": "kai.scheduler/rack"},
        },
    ]
    assert {p["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME] for p in c.store.list("pods", NS)[0]} == {
        pg["metadata"]["name"]
    }
    assert [c.subgroup_of(f"llm-0-prefill-{i}", NS) for i in range(2)] == ["llm-0-prefill"] * 2
    assert [c.subgroup_of(f"llm-0-decode-{i}", NS) for i in range(4)] == ["llm-0-decode"] * 4
    assert len(c.podgroups(NS)) == 1


def test_without_group_configs_the_podgroups_are_children_of_the_root() -> None:
    c = grove_cluster(gang=podgang(**{"spec.topologyConstraintGroupConfigs": []}))
    c.group()
    subgroups = spec(c.podgroup_of("llm-0-prefill-0", NS))["subGroups"]
    assert [(sg["name"], sg.get("parent"), sg["minMember"]) for sg in subgroups] == [
        ("llm-0-prefill", None, 1),
        ("llm-0-decode", None, 2),
    ]


def test_the_podgangs_priority_class_wins_over_the_pods() -> None:
    c = grove_cluster(gang=podgang(**{"spec.priorityClassName": "build"}))
    c.store.patch("pods", "llm-0-prefill-0", NS, {"metadata": {"labels": {"priorityClassName": "train"}}})
    c.group()
    assert spec(c.podgroup_of("llm-0-prefill-0", NS))["priorityClassName"] == "build"


def test_without_a_priority_class_on_the_podgang_the_default_grouper_chooses() -> None:
    gang = podgang()
    del gang["spec"]["priorityClassName"]
    c = grove_cluster(gang=gang)
    c.group()
    assert spec(c.podgroup_of("llm-0-prefill-0", NS))["priorityClassName"] == "train"


def test_the_queue_comes_from_the_podgang_else_the_pod() -> None:
    gang = podgang()
    del gang["metadata"]["labels"][constants.LABEL_QUEUE]
    c = grove_cluster(gang=gang)
    for clique, count in CLIQUES.items():
        for i in range(count):
            c.store.patch("pods", f"llm-0-{clique}-{i}", NS, {"metadata": {"labels": {constants.LABEL_QUEUE: "team"}}})
    c.group()
    assert spec(c.podgroup_of("llm-0-prefill-0", NS))["queue"] == "team"


def test_the_topology_name_of_the_podgang_wins_over_the_podcliquesets() -> None:
    gang = podgang()
    gang["metadata"]["annotations"] = {constants.ANNOTATION_TOPOLOGY: "gang-topology"}
    c = grove_cluster(gang=gang)
    c.group()
    s = spec(c.podgroup_of("llm-0-prefill-0", NS))
    assert s["topologyConstraint"]["topology"] == "gang-topology"
    assert {sg.get("topologyConstraint", {}).get("topology") for sg in s["subGroups"]} == {"gang-topology", None}


def test_a_pack_constraint_without_a_topology_name_is_a_warning_and_ignored() -> None:
    c = Cluster(PCS.replace("annotations: {kai.scheduler/topology: gpu-topology}", "annotations: {}"))
    pcs = c.owner("podcliquesets", "llm", NS)
    clique = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": "llm-0-decode", "namespace": NS, "ownerReferences": [reference(pcs)]},
        }
    )
    c.add(grove_pod("llm-0-decode-0", clique))
    c.add(
        podgang(
            **{
                "spec.podgroups": [
                    {
                        "name": "llm-0-decode",
                        "minReplicas": 1,
                        "podReferences": [{"namespace": NS, "name": "llm-0-decode-0"}],
                    }
                ],
                "spec.topologyConstraintGroupConfigs": [],
            }
        )
    )
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    assert c.group().skipped == []
    s = spec(c.podgroup_of("llm-0-decode-0", NS))
    assert "topologyConstraint" not in s
    assert _warnings(c, "llm-0-decode-0") == [
        f"PodGang {NS}/llm-0 spec.topologyConstraint.packConstraint: no kai.scheduler/topology annotation on the "
        "PodGang or its PodCliqueSet names the Topology; ignored"
    ]


def test_annotation_levels_of_the_podgang_stay_where_the_spec_sets_none() -> None:
    gang = podgang()
    gang["metadata"]["annotations"] = {
        constants.ANNOTATION_TOPOLOGY: "gpu-topology",
        constants.ANNOTATION_TOPOLOGY_PREFERRED: "kai.scheduler/rack",
    }
    c = grove_cluster(gang=gang)
    c.group()
    assert spec(c.podgroup_of("llm-0-prefill-0", NS))["topologyConstraint"] == {
        "topology": "gpu-topology",
        "requiredTopologyLevel": "topology.kubernetes.io/zone",
        "preferredTopologyLevel": "kai.scheduler/rack",
    }


@pytest.mark.parametrize("kind", ["PodGangSet", "PodCliqueSet"])
def test_both_names_of_the_set_and_a_dynamo_graph_above_it_get_the_grove_grouper(kind: str) -> None:
    c = Cluster()
    top = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": kind,
            "metadata": {
                "name": "llm",
                "namespace": NS,
                "uid": PCS_UID,
                "ownerReferences": [
                    {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment", "name": "g", "uid": "u-1"}
                ],
            },
        }
    )
    clique = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": "llm-0-prefill", "namespace": NS, "ownerReferences": [reference(top)]},
        }
    )
    c.add(grove_pod("llm-0-prefill-0", clique))
    c.add(
        podgang(
            **{
                "spec.podgroups": [
                    {
                        "name": "llm-0-prefill",
                        "minReplicas": 1,
                        "podReferences": [{"namespace": NS, "name": "llm-0-prefill-0"}],
                    }
                ],
                "spec.topologyConstraintGroupConfigs": [],
            }
        )
    )
    c.group()
    assert c.podgroup_of("llm-0-prefill-0", NS)["metadata"]["name"] == f"pg-llm-0-{GANG_UID}"
    assert c.subgroup_of("llm-0-prefill-0", NS) == "llm-0-prefill"


def test_a_pod_under_a_scaling_group_is_grouped_by_its_podgang() -> None:
    c = Cluster(PCS)
    pcs = c.owner("podcliquesets", "llm", NS)
    pcsg = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueScalingGroup",
            "metadata": {"name": "llm-0-workers", "namespace": NS, "ownerReferences": [reference(pcs)]},
        }
    )
    clique = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": "llm-0-workers-0-decode", "namespace": NS, "ownerReferences": [reference(pcsg)]},
        }
    )
    c.add(grove_pod("llm-0-workers-0-decode-0", clique))
    c.add(
        podgang(
            **{
                "spec.podgroups": [
                    {
                        "name": "llm-0-workers-0-decode",
                        "minReplicas": 1,
                        "podReferences": [{"namespace": NS, "name": "llm-0-workers-0-decode-0"}],
                    }
                ],
                "spec.topologyConstraintGroupConfigs": [],
            }
        )
    )
    c.group()
    assert c.subgroup_of("llm-0-workers-0-decode-0", NS) == "llm-0-workers-0-decode"


def test_a_pod_waits_for_its_podgang_told_once_and_is_grouped_when_it_appears(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    c = grove_cluster(gang={}, clock=True)
    first = c.group()
    assert c.podgroups(NS) == []
    assert len(first.skipped) == 6
    assert not any(
        constants.ANNOTATION_POD_GROUP_NAME in (p["metadata"].get("annotations") or {})
        for p in c.store.list("pods", NS)[0]
    )
    message = (
        f"pod {NS}/llm-0-decode-0: waits for its PodGang {NS}/llm-0 (grove.io/podgang label), which does not exist yet"
    )
    assert _warnings(c, "llm-0-decode-0") == [message]
    for _ in range(3):  # waiting, nothing new is said
        c.group()
    assert _warnings(c, "llm-0-decode-0") == [message]
    assert sum(getattr(r, "reason", "") == message for r in caplog.records) == 1
    c.add(podgang())  # no pod changes: the PodGang's arrival is enough
    outcome = c.group()
    assert outcome.skipped == []
    assert len(c.podgroups(NS)) == 1
    assert c.subgroup_of("llm-0-decode-0", NS) == "llm-0-decode"


def test_a_waiting_pod_the_grouper_no_longer_groups_stops_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod waiting for its PodGang whose clique is then marked skip-podgrouper is not grouped, and not read
    again at every pass once its backoff has passed (it was: one GET per pod per reconcile, for good)."""
    now = [0.0]
    c = grove_cluster(gang={}, clock=True)
    c.grouper._wait_retries = Retries(lambda: now[0])
    c.group()
    patch = {"metadata": {"annotations": {constants.ANNOTATION_SKIP_PODGROUPER: "true"}}}
    c.store.patch("podcliques", "llm-0-decode", NS, patch)
    now[0] = 100.0  # every backoff passed
    reads: list[str] = []
    get = c.store.get

    def counted(plural: str, name: str, namespace: str = "") -> JSON:
        if plural == "pods":
            reads.append(name)
        return get(plural, name, namespace)

    monkeypatch.setattr(c.store, "get", counted)
    c.group()
    assert sorted(reads) == [f"llm-0-{clique}-{i}" for clique, n in sorted(CLIQUES.items()) for i in range(n)]
    reads.clear()
    for _ in range(3):
        c.group()
    assert reads == []  # the prefill pods wait again (1 s further), the decode pods no longer wait
    now[0] = 200.0
    c.group()
    assert sorted(reads) == ["llm-0-prefill-0", "llm-0-prefill-1"]
    assert c.podgroups(NS) == []


def test_a_pod_the_podgang_does_not_list_yet_waits_until_it_does() -> None:
    gang = podgang()
    gang["spec"]["podgroups"][1]["podReferences"].pop()  # llm-0-decode-3 made, not yet in the PodGang
    c = grove_cluster(gang=gang, clock=True)
    outcome = c.group()
    assert [k for k, _ in outcome.skipped] == [f"{NS}/llm-0-decode-3"]
    assert _warnings(c, "llm-0-decode-3") == [
        f"pod {NS}/llm-0-decode-3: waits until its PodGang {NS}/llm-0 lists it in a podgroup's podReferences"
    ]
    assert constants.ANNOTATION_POD_GROUP_NAME not in (c.pod("llm-0-decode-3", NS)["metadata"].get("annotations") or {})
    c.store.patch("podgangs", "llm-0", NS, {"spec": {"podgroups": podgang()["spec"]["podgroups"]}})
    assert c.group().skipped == []
    assert c.subgroup_of("llm-0-decode-3", NS) == "llm-0-decode"


def test_a_pod_without_the_podgang_label_is_told_and_not_grouped() -> None:
    c = grove_cluster(clock=True)
    clique = c.owner("podcliques", "llm-0-prefill", NS)
    c.add(grove_pod("stray", clique, gang=""))
    outcome = c.group()
    assert [k for k, _ in outcome.skipped] == [f"{NS}/stray"]
    assert _warnings(c, "stray") == [
        f"pod {NS}/stray: no grove.io/podgang label; cannot tell which PodGang of PodCliqueSet {NS}/llm it belongs to"
    ]


def test_a_scaled_podgang_regroups_its_podgroup_and_the_new_pod_joins() -> None:
    c = grove_cluster()
    c.group()
    gang = c.owner("podgangs", "llm-0", NS)
    podgroups = copy.deepcopy(gang["spec"]["podgroups"])
    podgroups[1]["minReplicas"] = 3
    podgroups[1]["podReferences"].append({"namespace": NS, "name": "llm-0-decode-4"})
    podgroups.append(
        {"name": "llm-0-router", "minReplicas": 1, "podReferences": [{"namespace": NS, "name": "llm-0-router-0"}]}
    )
    c.store.patch("podgangs", "llm-0", NS, {"spec": {"podgroups": podgroups}})
    c.group()  # no pod changed: the PodGang's change alone regroups
    s = spec(c.podgroup_of("llm-0-prefill-0", NS))
    assert s["minMember"] == 1 + 3 + 1
    assert [(sg["name"], sg.get("minMember"), sg.get("parent")) for sg in s["subGroups"]] == [
        ("llm-0-serve", None, None),
        ("llm-0-prefill", 1, "llm-0-serve"),
        ("llm-0-decode", 3, "llm-0-serve"),
        ("llm-0-router", 1, None),
    ]
    clique = c.owner("podcliques", "llm-0-decode", NS)
    c.add(grove_pod("llm-0-decode-4", clique))
    c.group()
    assert c.subgroup_of("llm-0-decode-4", NS) == "llm-0-decode"


BAD = [
    pytest.param(
        "spec.podgroups.1.minReplicas",
        -1,
        "spec.podgroups[1].minReplicas: must be at least 0, got -1",
        id="negative minReplicas",
    ),
    pytest.param(
        "spec.podgroups.0.minReplicas",
        "two",
        "spec.podgroups[0].minReplicas: expected an integer, got 'two'",
        id="minReplicas not a number",
    ),
    pytest.param(
        "spec.podgroups.0.podReferences.0.namespace",
        "other",
        "spec.podgroups[0].podReferences[0].namespace: 'other' is not the PodGang's namespace 'inference'",
        id="a reference to another namespace",
    ),
    pytest.param(
        "spec.podgroups.1.name",
        "llm-0-prefill",
        "spec.podgroups[1].name: podgroup 'llm-0-prefill' is also spec.podgroups[0]",
        id="a name used twice",
    ),
    pytest.param(
        "spec.podgroups.1.podReferences.0.name",
        "llm-0-prefill-1",
        "spec.podgroups[1].podReferences[0].name: pod 'llm-0-prefill-1' is also in podgroup 'llm-0-prefill'",
        id="a pod in two podgroups",
    ),
    pytest.param("spec.podgroups", {"a": 1}, "spec.podgroups: expected a list, got {'a': 1}", id="podgroups a map"),
    pytest.param("spec.podgroups", [], "spec.podgroups: no podgroups", id="no podgroups"),
    pytest.param(
        "spec.podgroups.0.name",
        "Bad Name!",
        "spec.podgroups[0].name: 'Bad Name!' is not a label value",
        id="a name that is no label value",
    ),
    pytest.param(
        "spec.topologyConstraintGroupConfigs.0.podGroupNames",
        ["llm-0-prefill", "nope"],
        "spec.topologyConstraintGroupConfigs[0].podGroupNames[1]: no podgroup 'nope' in spec.podgroups",
        id="a config naming a missing podgroup",
    ),
    pytest.param(
        "spec.topologyConstraintGroupConfigs.0.name",
        "llm-0-decode",
        "spec.topologyConstraintGroupConfigs[0].name: 'llm-0-decode' is already the name of a podgroup",
        id="a config named as a podgroup",
    ),
    pytest.param(
        "spec.topologyConstraint",
        "zone",
        "spec.topologyConstraint: expected a mapping, got 'zone'",
        id="a constraint that is a string",
    ),
    pytest.param(
        "spec.priorityClassName",
        7,
        "spec.priorityClassName: expected a string, got 7",
        id="a priority class that is a number",
    ),
]


@pytest.mark.parametrize("path, value, told", BAD)
def test_a_malformed_podgang_is_one_line_on_each_pod_naming_it_and_the_field(path: str, value: Any, told: str) -> None:
    c = grove_cluster(gang=podgang(**{path: value}), clock=True)
    outcome = c.group()
    assert c.podgroups(NS) == []
    assert len(outcome.skipped) == 6
    for _, reason in outcome.skipped:
        assert reason.startswith(f"PodGang {NS}/llm-0 ") and told in reason, reason
    assert len(_warnings(c, "llm-0-prefill-0")) == 1


def test_a_podgroup_in_two_configs_is_refused() -> None:
    configs = [
        {"name": "a", "podGroupNames": ["llm-0-prefill"]},
        {"name": "b", "podGroupNames": ["llm-0-decode", "llm-0-prefill"]},
    ]
    c = grove_cluster(gang=podgang(**{"spec.topologyConstraintGroupConfigs": configs}))
    outcome = c.group()
    assert outcome.skipped
    assert all(
        "spec.topologyConstraintGroupConfigs[1].podGroupNames[1]: podgroup 'llm-0-prefill' is already in config 'a'"
        in reason
        for _, reason in outcome.skipped
    )


def test_a_malformed_podgang_fixed_groups_its_pods() -> None:
    c = grove_cluster(gang=podgang(**{"spec.podgroups.1.minReplicas": -1}))
    assert c.group().skipped
    c.store.patch("podgangs", "llm-0", NS, {"spec": {"podgroups": podgang()["spec"]["podgroups"]}})
    assert c.group().skipped == []  # no pod changed: the PodGang's fix is enough
    assert spec(c.podgroup_of("llm-0-prefill-0", NS))["minMember"] == 3


def test_the_podgang_is_read_once_per_reconcile_not_once_per_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grouping a gang's n pods reads its PodGang once (n reads of n podReferences each was quadratic: a 500-pod
    gang cost 1.5 ms of CPU per pod, against 0.07 for a Job's pods)."""
    from kai_scheduler.podgrouper import grove

    reads: list[str] = []
    real = grove._read

    def counted(gang: Any, topology: str, base: Any) -> Any:
        reads.append(gang.name)
        return real(gang, topology, base)

    monkeypatch.setattr(grove, "_read", counted)
    c = grove_cluster()
    assert len(c.group().labelled) == 6
    assert reads == ["llm-0"]
    c.store.patch("podgangs", "llm-0", NS, {"metadata": {"labels": {"new": "label"}}})
    c.group()  # the PodGang changed: read again, once
    assert reads == ["llm-0", "llm-0"]


class _NoGrove(MemoryStore):
    """A cluster whose API server does not serve PodGangs (Grove's CRDs not installed)."""

    def _refuse(self, resource: str) -> None:
        if resource == "podgangs":
            raise NotFound(f"the server could not find the requested resource ({resource})")

    def get(self, resource: str, name: str, namespace: str = "", *, shared: bool = False) -> JSON:
        self._refuse(resource)
        return super().get(resource, name, namespace, shared=shared)

    def list(
        self, resource: str, namespace: str | None = None, selector: Any = None, *, shared: bool = False, **kw: Any
    ) -> tuple[list[JSON], str]:
        self._refuse(resource)
        return super().list(resource, namespace, selector, shared=shared, **kw)


def test_podgangs_are_not_read_without_grove_pods_nor_an_error_where_they_are_not_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    c = Cluster()
    c.store = _NoGrove(ManualClock(NOW))
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    c.store.add_many(pc.to_dict() for pc in priorityclass.shipped())
    job = c.store.create(yaml.safe_load(JOB))
    c.add(controller_pod("plain-0", job))
    c.group()
    assert "podgangs" not in c.grouper._owners._feeds and "podgangs" not in c.grouper._owners._unwatched
    pcs = c.store.create(yaml.safe_load(PCS))
    clique = c.store.create(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": "llm-0-decode", "namespace": NS, "ownerReferences": [reference(pcs)]},
        }
    )
    c.add(grove_pod("llm-0-decode-0", clique))
    skipped = [k for _ in range(3) for k, _ in c.group().skipped]
    assert skipped == [f"{NS}/llm-0-decode-0"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert sum(r.getMessage() == "owner kind not watched, read by name" for r in caplog.records) == 1
    assert [r.reason for r in caplog.records if r.levelno == logging.WARNING] == [  # type: ignore[attr-defined]
        f"pod {NS}/llm-0-decode-0: waits for its PodGang {NS}/llm-0 (grove.io/podgang label), which does not exist yet"
    ]
