"""Grove end to end: a disaggregated inference service as Grove's operator makes it (PodCliqueSet → PodCliques →
pods with the `grove.io/podgang` label and a scheduling gate, then the PodGang, then the gates lifted), grouped
by the pod grouper into one PodGroup per PodGang, placed whole or not at all, and collected with its PodGang.

No Grove operator runs: the CRDs are minimal (fixtures/grove-crds.yaml, installed with the suite's) and the test plays
the operator."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.store.interface import JSON
from tests.e2e import harness
from tests.e2e.checks import at_most, hold, never_over_committed
from tests.e2e.harness import NAMESPACE, Cluster, grouper_warnings, owner_reference, pod, rack_of, subgroup_of

pytestmark = pytest.mark.run_in("controllers")  # the garbage collector (tests/e2e/split.py)

QUEUE = "e2e-grove"
TOPOLOGY = "e2e-grove-racks"
GATE = "grove.io/podgang-pending-creation"
RACK = "kai.scheduler/rack"


@pytest.fixture
def grove(clean: Cluster) -> Cluster:
    """A clean cluster with Grove's CRDs, the queue `e2e-grove` (16 GPUs deserved: room for a non-preemptible
    `inference` gang) and a Topology of zones and racks (`kai fake-nodes --rack-size 2`)."""
    clean.create(harness.queue(QUEUE, gpu_quota=16))
    clean.create(
        {
            "apiVersion": "kai.scheduler/v1alpha1",
            "kind": "Topology",
            "metadata": {"name": TOPOLOGY, "labels": {"e2e": "true"}},
            "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": RACK}]},
        }
    )
    return clean


def _grove_object(kind: str, name: str, spec: JSON, owner: JSON | None = None, **meta: Any) -> JSON:
    group = "scheduler.grove.io" if kind == "PodGang" else "grove.io"
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true"}, **meta}
    if owner is not None:
        metadata["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": f"{group}/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


def _service(cluster: Cluster, name: str, cliques: dict[str, tuple[int, int]]) -> list[str]:
    """A PodCliqueSet `name` with one PodClique per clique {clique: (pods, GPUs each)} and their pods, gated and
    labelled with the PodGang `<name>-0` as Grove makes them; the pod names."""
    pcs = cluster.create(_grove_object("PodCliqueSet", name, {"replicas": 1}))
    names = []
    for clique, (count, gpus) in cliques.items():
        owner = cluster.create(
            _grove_object("PodClique", f"{name}-0-{clique}", {"replicas": count, "roleName": clique}, pcs)
        )
        for i in range(count):
            obj = pod(
                f"{name}-0-{clique}-{i}",
                gpus=gpus,
                queue=QUEUE,
                labels={"grove.io/podgang": f"{name}-0", "grove.io/podclique": f"{name}-0-{clique}", "wl": name},
            )
            obj["metadata"]["ownerReferences"] = [owner_reference(owner)]
            obj["spec"]["schedulingGates"] = [{"name": GATE}]
            cluster.create(obj)
            names.append(obj["metadata"]["name"])
    return names


def _podgang(name: str, cliques: dict[str, tuple[int, int]], minimums: dict[str, int], **spec: Any) -> JSON:
    podgroups = [
        {
            "name": f"{name}-0-{clique}",
            "minReplicas": minimums[clique],
            "podReferences": [{"namespace": NAMESPACE, "name": f"{name}-0-{clique}-{i}"} for i in range(count)],
        }
        for clique, (count, _) in cliques.items()
    ]
    return _grove_object(
        "PodGang",
        f"{name}-0",
        {"podgroups": podgroups, **spec},
        annotations={"kai.scheduler/topology": TOPOLOGY},
    )


def _lift_gates(cluster: Cluster, names: list[str]) -> None:
    for name in names:
        cluster.store.patch("pods", name, NAMESPACE, {"spec": {"schedulingGates": None}})


def _annotation(cluster: Cluster, pod_name: str) -> str:
    annotations = cluster.store.get("pods", pod_name, NAMESPACE)["metadata"].get("annotations") or {}
    return str(annotations.get("pod-group-name", ""))


DISAGG = {"prefill": (2, 1), "decode": (4, 2)}  # pods, GPUs each


def test_a_grove_podgang_is_one_gang_placed_whole_and_collected_with_its_podgang(grove: Cluster) -> None:
    """A prefill clique of 2 pods (1 GPU, 1 needed) and a decode clique of 4 (2 GPUs, 2 needed, packed in one rack),
    grouped by a topology constraint group config: the pods wait for their PodGang (one warning each, no more), are
    grouped into one PodGroup when it comes (minMember 3, a parent subgroup over the two cliques' subgroups), and
    placed once Grove lifts the gates, decode in one rack. A second service needing 32 GPUs while 10 are used gets
    none placed. With a garbage collector, deleting the PodGang collects its PodGroup."""
    names = _service(grove, "llm", DISAGG)
    grove.wait("the pods told they wait for their PodGang", lambda: all(grouper_warnings(grove, n) for n in names))
    assert grouper_warnings(grove, "llm-0-decode-0") == [
        f"pod {NAMESPACE}/llm-0-decode-0: waits for its PodGang {NAMESPACE}/llm-0 (grove.io/podgang label), which "
        "does not exist yet"
    ]

    def waiting_quietly() -> None:
        assert all(not _annotation(grove, n) for n in names), "a pod was grouped without its PodGang"
        assert all(len(grouper_warnings(grove, n)) == 1 for n in names), {n: grouper_warnings(grove, n) for n in names}

    hold(2, waiting_quietly)

    gang = _podgang(
        "llm",
        DISAGG,
        {"prefill": 1, "decode": 2},
        priorityClassName="inference",
        topologyConstraintGroupConfigs=[
            {
                "name": "llm-0-serve",
                "podGroupNames": ["llm-0-prefill", "llm-0-decode"],
                "topologyConstraint": {"packConstraint": {"preferred": "topology.kubernetes.io/zone"}},
            }
        ],
    )
    gang["spec"]["podgroups"][1]["topologyConstraint"] = {"packConstraint": {"required": RACK}}
    gang = grove.create(gang)
    # No pod changes here: the PodGang's arrival alone gets them grouped.
    grove.wait("the pods grouped", lambda: all(_annotation(grove, n) for n in names))
    podgroup_name = f"pg-llm-0-{gang['metadata']['uid']}"
    assert {_annotation(grove, n) for n in names} == {podgroup_name}
    group = grove.store.get("podgroups", podgroup_name, NAMESPACE)
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("PodGang", "llm-0", gang["metadata"]["uid"])
    spec = group["spec"]
    assert (spec["minMember"], spec["queue"], spec["priorityClassName"]) == (3, QUEUE, "inference")
    assert spec["subGroups"] == [
        {
            "name": "llm-0-serve",
            "topologyConstraint": {"topology": TOPOLOGY, "preferredTopologyLevel": "topology.kubernetes.io/zone"},
        },
        {"name": "llm-0-prefill", "minMember": 1, "parent": "llm-0-serve"},
        {
            "name": "llm-0-decode",
            "minMember": 2,
            "parent": "llm-0-serve",
            "topologyConstraint": {"topology": TOPOLOGY, "requiredTopologyLevel": RACK},
        },
    ]
    grove.wait(
        "each pod in its clique's subgroup",
        lambda: all(subgroup_of(grove, n) == n.rsplit("-", 1)[0] for n in names),
    )
    hold(1, lambda: at_most(grove, "wl=llm", 0))  # gated: Grove has not let them go yet
    _lift_gates(grove, names)
    grove.wait("the whole gang bound", lambda: len(grove.bound("wl=llm")) == 6)
    decode_racks = {
        rack_of(grove, p["spec"]["nodeName"]) for p in grove.bound("wl=llm") if "-decode-" in p["metadata"]["name"]
    }
    assert len(decode_racks) == 1, decode_racks

    big = {"workers": (4, 8)}  # 32 GPUs, all needed; 10 of 32 are taken
    big_names = _service(grove, "big", big)
    grove.create(_podgang("big", big, {"workers": 4}, priorityClassName="train"))
    grove.wait("the big gang grouped", lambda: all(_annotation(grove, n) for n in big_names))
    _lift_gates(grove, big_names)
    hold(3, lambda: at_most(grove, "wl=big", 0))
    never_over_committed(grove)

    if not harness.controllers_running():
        return  # no garbage collector: the PodGroup's owner reference is what the collector would follow
    grove.delete_background("podgangs", "llm-0", NAMESPACE)
    grove.wait(
        "the PodGroup collected with its PodGang",
        lambda: podgroup_name not in {g["metadata"]["name"] for g in grove.store.list("podgroups", NAMESPACE)[0]},
        timeout=30,
    )


def test_a_malformed_podgang_is_one_line_on_each_pod_and_grouped_once_fixed(grove: Cluster) -> None:
    """A PodGang whose podgroup has `minReplicas: -1`: each pod gets one event naming the PodGang and the field,
    nothing is grouped; the PodGang fixed, its pods are grouped and placed."""
    cliques = {"decode": (2, 1)}
    names = _service(grove, "bad", cliques)
    grove.create(_podgang("bad", cliques, {"decode": -1}))
    told = f"PodGang {NAMESPACE}/bad-0 spec.podgroups[0].minReplicas: must be at least 0, got -1"
    grove.wait("the pods told", lambda: all(told in grouper_warnings(grove, n) for n in names))
    assert all(not _annotation(grove, n) for n in names)
    grove.store.patch("podgangs", "bad-0", NAMESPACE, {"spec": _podgang("bad", cliques, {"decode": 2})["spec"]})
    grove.wait("the pods grouped once the PodGang is fixed", lambda: all(_annotation(grove, n) for n in names))
    _lift_gates(grove, names)
    grove.wait("both bound", lambda: len(grove.bound("wl=bad")) == 2)
