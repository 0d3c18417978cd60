"""podaffinity's node scores equal a pod-by-pod reading of kube-scheduler's InterPodAffinity scoring
(`processExistingPod`: every placed pod against every preferred term of the task, and the task against every
preferred term of every placed pod), times KAI's k8s-plugin decade, over random small clusters whose terms may
choose namespaces by label (`namespaceSelector`, matched against the Namespace objects that exist); and they do
not depend on the order the pods are given in."""

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
NAMESPACES = ("ns-a", "ns-b", "ns-c")  # the pods' namespaces: ns-a and ns-b may exist as Namespace objects, ns-c not
NAMESPACE_SELECTORS = [
    None,  # not set
    {},  # every namespace
    {"matchLabels": {"team": "a"}},
    {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},  # matches a namespace that does not exist
]

terms = st.lists(
    st.builds(
        lambda w, key, app, namespaces, chosen: b.weighted(
            w, b.pod_term(key, namespaces=namespaces, namespace_selector=chosen, app=app)
        ),
        st.integers(1, 100),
        st.sampled_from([HOSTNAME, ZONE]),
        st.sampled_from(["web", "db"]),
        st.sampled_from([[], ["ns-b"], list(NAMESPACES)]),
        st.sampled_from(NAMESPACE_SELECTORS),
    ),
    max_size=2,
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], list[Any], list[Any]]:
    namespaces = [
        b.namespace(name, **({"team": team} if team else {}))
        for name in NAMESPACES[:2]
        if (team := draw(st.sampled_from(["a", "b", "", None]))) is not None
    ]
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
    return nodes, pods, namespaces


def selects(weighted: WeightedPodAffinityTerm, owner: PodInfo, pod: PodInfo, task: PodInfo, snap: Snapshot) -> bool:
    """kube-scheduler's `AffinityTerm.Matches`: the task's own terms had their namespaceSelector merged into
    their namespaces from the namespaces that exist (PreFilter, `mergeAffinityTermNamespacesIfNotEmpty`; the
    empty selector stays and matches all); a placed pod's terms match the selector against the labels of the
    task's namespace (none when it does not exist)."""
    term = weighted.term
    labels = {ns.name: dict(ns.meta.labels) for ns in snap.namespace_objects}
    chosen = term.namespace_selector
    if chosen is None:
        covered = pod.namespace in (term.namespaces or (owner.namespace,))
    elif owner is task:
        merged = set(term.namespaces) | {name for name, have in labels.items() if chosen.matches(have)}
        covered = (not chosen.match_labels and not chosen.requirements) or pod.namespace in merged
    else:
        covered = pod.namespace in term.namespaces or chosen.matches(labels.get(pod.namespace, {}))
    return covered and term.selector.matches(pod.pod.meta.labels)


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
                    if selects(weighted, owner, other, task, snap) and key in node.labels:
                        added.append((key, node.labels[key], sign * weighted.weight))
    return [K8S_PLUGINS * sum(w for key, value, w in added if node.labels.get(key) == value) for node in snap.nodes]


def scores(nodes: list[Any], pods: list[Any], namespaces: list[Any]) -> list[float]:
    ssn = b.session(b.snapshot(nodes=nodes, pods=pods, namespaces=namespaces), PodAffinity())
    task = next(t for t in ssn.snapshot.tasks.values() if t.name == "task")
    return [float(s) for s in ssn.node_scores(task, ssn.all_nodes())]


@settings(max_examples=150, deadline=None)
@given(cluster=clusters(), data=st.data())
def test_scores_are_kube_schedulers_raw_interpodaffinity_score(
    cluster: tuple[list[Any], list[Any], list[Any]], data: st.DataObject
) -> None:
    nodes, pods, namespaces = cluster
    snap = b.snapshot(nodes=nodes, pods=pods, namespaces=namespaces)
    task = next(t for t in snap.tasks.values() if t.name == "task")
    assert scores(nodes, pods, namespaces) == reference(snap, task)
    shuffled = data.draw(st.permutations(pods)), data.draw(st.permutations(namespaces))
    assert scores(nodes, *shuffled) == scores(nodes, pods, namespaces)
