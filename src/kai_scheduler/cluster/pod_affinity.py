"""Inter-pod (anti-)affinity lookups: the session's pods, indexed by label, and which of them a term selects.
Read by the predicates' pod (anti-)affinity filters and by podaffinity's preferred-term score.

Only pods that declare (anti-)affinity pay for these: the index is built on first use.
"""

from __future__ import annotations

from collections.abc import Sequence

from kai_scheduler.api.selectors import LabelSelector, NamespaceScope, PodAffinityTerm
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
    """The pods of `session_pods` that declare pod anti-affinity, in no particular order (listed by the build:
    most clusters have none, and no reader walks every pod for them)."""
    return list(snapshot.anti_affine)


def soft_affine_pods(snapshot: Snapshot) -> list[PodInfo]:
    """The pods of `session_pods` that declare preferred pod (anti-)affinity, in no particular order (listed by
    the build)."""
    return list(snapshot.soft_affine)


def scope_of(term: PodAffinityTerm, task: PodInfo, snapshot: Snapshot) -> NamespaceScope:
    """The namespaces a term of the task being placed covers: its namespaceSelector matched against the
    snapshot's namespaces once per term, as kube-scheduler's PreFilter merges it into the term's namespaces."""
    if term.namespace_selector is None:  # most terms: no namespace labels needed
        return frozenset(term.namespaces or (task.namespace,))
    return term.scope(task.namespace, snapshot.namespace_labels())


def selects(term: PodAffinityTerm, scope: NamespaceScope, pod: PodInfo) -> bool:
    """Whether the term of the task being placed, covering `scope`, selects `pod`."""
    return (scope is None or pod.namespace in scope) and term.selector.matches(pod.pod.meta.labels)


def selects_task(term: PodAffinityTerm, owner_namespace: str, task: PodInfo, snapshot: Snapshot) -> bool:
    """Whether a term of a pod in `owner_namespace` selects the task being placed; a namespaceSelector is
    matched against the labels of the task's namespace (none when it does not exist), as kube-scheduler matches
    an existing pod's terms."""
    labels = None if term.namespace_selector is None else snapshot.namespace_labels().get(task.namespace)
    return term.covers(owner_namespace, task.namespace, labels) and term.selector.matches(task.pod.meta.labels)


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

    def on_node(self, selector: LabelSelector, scope: NamespaceScope) -> list[PodInfo]:
        """Pods on a node now (including ones placed this session) in `scope` (None: any namespace) that
        `selector` matches."""
        pods, exact = self._candidates(selector)
        return [
            p
            for p in pods
            if is_on_node(p)
            and (scope is None or p.namespace in scope)
            and (exact or selector.matches(p.pod.meta.labels))
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
