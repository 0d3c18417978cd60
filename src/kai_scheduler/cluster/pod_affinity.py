"""Inter-pod (anti-)affinity lookups: the session's pods, indexed by label, and which of them a term selects.
Read by the predicates' pod (anti-)affinity filters and by podaffinity's preferred-term score.

Only pods that declare (anti-)affinity pay for these: the index is built on first use.
"""

from __future__ import annotations

from collections.abc import Sequence

from kai_scheduler.api.selectors import LabelSelector, PodAffinityTerm
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import ON_NODE, PodStatus
from kai_scheduler.cluster.snapshot import Snapshot

ON_NODE_STATUSES = frozenset(s for s in PodStatus if s & ON_NODE)  # set lookup: IntFlag `&` is slow


def session_pods(snapshot: Snapshot) -> list[PodInfo]:
    """Every pod that can be on a node during the session (on a node now, or ours and pending), by uid.

    Labels do not change in a session and placements are read live, so statement moves need no bookkeeping."""
    pods: dict[str, PodInfo] = {}
    for node in snapshot.nodes:
        pods.update(node.tasks)
    pods.update(snapshot.tasks)
    return [pods[uid] for uid in sorted(pods)]


def anti_affine_pods(snapshot: Snapshot) -> list[PodInfo]:
    """The pods of `session_pods` that declare pod anti-affinity, in no particular order: one pass over the
    pods without building or sorting the whole set (most clusters have none)."""
    if snapshot.anti_affine is not None:  # kept with the snapshot's model
        return list(snapshot.anti_affine)
    found: dict[str, PodInfo] = {}
    for node in snapshot.nodes:
        for uid, pod in node.tasks.items():
            if pod.pod.pod_anti_affinity:
                found[uid] = pod
    for uid, pod in snapshot.tasks.items():
        if pod.pod.pod_anti_affinity:
            found[uid] = pod
    return list(found.values())


def soft_affine_pods(snapshot: Snapshot) -> list[PodInfo]:
    """The pods of `session_pods` that declare preferred pod (anti-)affinity, in no particular order."""
    if snapshot.soft_affine is not None:  # kept with the snapshot's model
        return list(snapshot.soft_affine)
    found: dict[str, PodInfo] = {}
    for node in snapshot.nodes:
        for uid, pod in node.tasks.items():
            if pod.pod.preferred_pod_affinity or pod.pod.preferred_pod_anti_affinity:
                found[uid] = pod
    for uid, pod in snapshot.tasks.items():
        if pod.pod.preferred_pod_affinity or pod.pod.preferred_pod_anti_affinity:
            found[uid] = pod
    return list(found.values())


def namespaces_of(term: PodAffinityTerm, owner: PodInfo) -> tuple[str, ...]:
    return term.namespaces or (owner.namespace,)


def matches(term: PodAffinityTerm, pod: PodInfo, owner_namespace: str) -> bool:
    """Whether `pod` is one of the pods selected by `term` of a pod in `owner_namespace`."""
    namespaces = term.namespaces or (owner_namespace,)
    return pod.namespace in namespaces and term.selector.matches(pod.pod.meta.labels)


def is_on_node(pod: PodInfo) -> bool:
    placement = pod.placement
    return bool(placement.node) and placement.status in ON_NODE_STATUSES


class PodIndex:
    """The session's pods by label, so a selector walks only the pods it can match."""

    def __init__(self, pods: Sequence[PodInfo]) -> None:
        self._all = list(pods)
        self._by_label: dict[tuple[str, str], list[PodInfo]] = {}
        for pod in self._all:
            for item in pod.pod.meta.labels.items():
                self._by_label.setdefault(item, []).append(pod)
        self._values: dict[str, list[str]] = {}
        for key, value in sorted(self._by_label):
            self._values.setdefault(key, []).append(value)

    def on_node(self, selector: LabelSelector, namespaces: tuple[str, ...]) -> list[PodInfo]:
        """Pods on a node now (including ones placed this session) in `namespaces` that `selector` matches."""
        pods, exact = self._candidates(selector)
        return [
            p
            for p in pods
            if is_on_node(p) and p.namespace in namespaces and (exact or selector.matches(p.pod.meta.labels))
        ]

    def _candidates(self, selector: LabelSelector) -> tuple[list[PodInfo], bool]:
        """A superset of the selector's pods (the smallest matchLabels list, else an In or Exists, else all
        pods), and whether it is exactly the selector's pods."""
        exact = len(selector.match_labels) + len(selector.requirements) == 1
        if selector.match_labels:
            return min((self._by_label.get(item, []) for item in selector.match_labels), key=len), exact
        for req in selector.requirements:
            values = (
                req.values
                if req.operator == "In"
                else self._values.get(req.key, [])
                if req.operator == "Exists"
                else None
            )
            if values is not None:
                pods = [p for v in dict.fromkeys(values) for p in self._by_label.get((req.key, v), [])]
                return pods, exact
        return self._all, not selector.match_labels and not selector.requirements
