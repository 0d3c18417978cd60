"""podaffinity's node scores equal a pod-by-pod reading of kube-scheduler's InterPodAffinity scoring
(`processExistingPod`: every placed pod against every preferred term of the task, and the task against every
preferred term of every placed pod), times KAI's k8s-plugin decade, over random small clusters; and they do not
depend on the order the pods are given in."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api.selectors import WeightedPodAffinityTerm
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.plugins.podaffinity import PodAffinity
from kai_scheduler.plugins.scores import K8S_PLUGINS
from tests.plugins import builders as b

JSON = dict[str, Any]
HOSTNAME, ZONE = b.HOSTNAME, "topology.kubernetes.io/zone"
NAMESPACES = ("ns-a", "ns-b")

terms = st.lists(
    st.builds(
        lambda w, key, app, namespaces: b.weighted(w, b.pod_term(key, namespaces=namespaces, app=app)),
        st.integers(1, 100),
        st.sampled_from([HOSTNAME, ZONE]),
        st.sampled_from(["web", "db"]),
        st.sampled_from([[], ["ns-b"], list(NAMESPACES)]),
    ),
    max_size=2,
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    count = draw(st.integers(1, 5))
    zones = [draw(st.sampled_from(["z1", "z2", None])) for _ in range(count)]
    nodes = [b.node(f"n{i}", labels={ZONE: z} if z else {}) for i, z in enumerate(zones)]
    pods = []
    for i in range(draw(st.integers(0, 8)) + 1):  # the last pod is the task scored, pending
        pods.append(
            b.pod(
                f"p{i}",
                namespace=draw(st.sampled_from(NAMESPACES)),
                node=draw(st.sampled_from(["", *(f"n{j}" for j in range(count))])),
                labels={"app": draw(st.sampled_from(["web", "db", "other"]))},
                preferred_pod_affinity=draw(terms),
                preferred_pod_anti_affinity=draw(terms),
            )
        )
    pods[-1] = b.pod(
        "task",
        namespace=draw(st.sampled_from(NAMESPACES)),
        labels={"app": draw(st.sampled_from(["web", "db"]))},
        preferred_pod_affinity=draw(terms),
        preferred_pod_anti_affinity=draw(terms),
    )
    return nodes, pods


def selects(weighted: WeightedPodAffinityTerm, owner: PodInfo, pod: PodInfo) -> bool:
    term = weighted.term
    return pod.namespace in (term.namespaces or (owner.namespace,)) and term.selector.matches(pod.pod.meta.labels)


def reference(snap: Snapshot, task: PodInfo) -> list[float]:
    added: list[tuple[str, str, int]] = []  # (topology key, domain value, weight)
    for node in snap.nodes:
        for placed in node.tasks.values():
            if not placed.is_on_node:
                continue
            for sign, owner, other, weighted_terms in (
                (1, task, placed, task.pod.preferred_pod_affinity),
                (-1, task, placed, task.pod.preferred_pod_anti_affinity),
                (1, placed, task, placed.pod.preferred_pod_affinity),
                (-1, placed, task, placed.pod.preferred_pod_anti_affinity),
            ):
                for weighted in weighted_terms:
                    key = weighted.term.topology_key
                    if selects(weighted, owner, other) and key in node.labels:
                        added.append((key, node.labels[key], sign * weighted.weight))
    return [K8S_PLUGINS * sum(w for key, value, w in added if node.labels.get(key) == value) for node in snap.nodes]


def scores(nodes: list[Any], pods: list[Any]) -> list[float]:
    ssn = b.session(b.snapshot(nodes=nodes, pods=pods), PodAffinity())
    task = next(t for t in ssn.snapshot.tasks.values() if t.name == "task")
    return [float(s) for s in ssn.node_scores(task, ssn.all_nodes())]


@settings(max_examples=150, deadline=None)
@given(cluster=clusters(), data=st.data())
def test_scores_are_kube_schedulers_raw_interpodaffinity_score(
    cluster: tuple[list[Any], list[Any]], data: st.DataObject
) -> None:
    nodes, pods = cluster
    snap = b.snapshot(nodes=nodes, pods=pods)
    task = next(t for t in snap.tasks.values() if t.name == "task")
    assert scores(nodes, pods) == reference(snap, task)
    assert scores(nodes, data.draw(st.permutations(pods))) == scores(nodes, pods)
