"""podaffinity: score nodes by preferred inter-pod (anti-)affinity (§4; KAI `plugins/podaffinity/`).

KAI runs kube-scheduler's InterPodAffinity PreScore at NODE_PRE_ORDER and its Score at NODE_ORDER, and scales
the raw score by `scores.K8S_PLUGINS`. It never calls the plugin's NormalizeScore, so the score is the raw sum
of weights (positive or negative, not squeezed into 0-100), and one matching pod outweighs every lower decade.

The raw score of a node is the sum, over its topology domains, of what each pod already on a node adds to the
domain of that node (kube-scheduler's `processExistingPod`):

- the task's preferred affinity terms: +weight for each on-node pod the term selects (anti-affinity: -weight);
- each on-node pod's preferred affinity terms that select the task: +weight (anti-affinity: -weight).

A domain is the value of the term's `topologyKey` label on the pod's node; nodes without the label are in no
domain. A term selects pods of the namespaces it covers (`PodAffinityTerm`: `namespaces`, `namespaceSelector`),
the task's terms over the namespaces that exist, a placed pod's terms by the labels of the task's namespace.
Required terms of existing pods add nothing: KAI builds the plugin with `hardPodAffinityWeight` 0.
When no pod adds anything (PreScore's Skip), the task gets no score from this plugin for the rest of the
session, as KAI remembers the skip by pod.

Cost: a task without preferred terms in a cluster where no pod declares any returns at once; otherwise one walk
over the pods each term can select (the label index) and one vector lookup per topology key.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kai_scheduler.api.selectors import WeightedPodAffinityTerm
from kai_scheduler.cluster.node_labels import LabelColumns
from kai_scheduler.cluster.pod_affinity import (
    PodIndex,
    is_on_node,
    scope_of,
    selects_task,
    session_pods,
    soft_affine_pods,
)
from kai_scheduler.cluster.pod_info import PodInfo, PodUID
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase

# topology key → domain value → raw score (kube-scheduler's scoreMap)
TopologyScores = dict[str, dict[str, int]]
# (term, owner namespace, +1 affinity / -1 anti-affinity) → the pods that declare it
SoftTerms = dict[tuple[WeightedPodAffinityTerm, str, int], list[PodInfo]]


class PodAffinity(PluginBase):
    name = "podaffinity"
    _snapshot: Snapshot
    _labels: LabelColumns
    _index: PodIndex | None  # built on the first task with preferred terms
    _soft: SoftTerms | None  # built on the first task scored
    _skipped: set[PodUID]
    _pending: tuple[PodUID, points.Scores] | None  # NODE_PRE_ORDER's scores, read by the NODE_ORDER after it

    def on_session_open(self, ssn: Session) -> None:
        snapshot = self._snapshot = ssn.snapshot
        self._labels = snapshot.node_labels()
        self._index = self._soft = self._pending = None
        self._skipped = set()
        ssn.add(points.NODE_PRE_ORDER, self.node_pre_order)
        ssn.add(points.NODE_ORDER, self.node_order)

    def on_session_close(self, ssn: Session) -> None:
        self._index = self._soft = self._pending = None

    def node_pre_order(self, task: PodInfo, candidates: points.Mask) -> None:
        """kube-scheduler's PreScore: the task's topology scores now; none at all marks the task skipped."""
        self._pending = None
        if task.uid in self._skipped:
            return
        topology = self.topology_scores(task)
        if not topology:
            self._skipped.add(task.uid)
            return
        self._pending = (task.uid, self._node_scores(topology))

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        """K8S_PLUGINS × the raw score of each node (its domains' scores summed over topology keys)."""
        pending, self._pending = self._pending, None
        if pending is None or pending[0] != task.uid:
            if task.uid in self._skipped:
                return None
            self.node_pre_order(task, candidates)  # called without its pre-order: compute it now
            pending, self._pending = self._pending, None
        return None if pending is None else pending[1]

    def topology_scores(self, task: PodInfo) -> TopologyScores:
        """What the pods on nodes add to each topology domain for `task` (only domains something was added to)."""
        found: TopologyScores = {}
        pod = task.pod
        if pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity:
            index = self._pod_index()
            for sign, terms in ((1, pod.preferred_pod_affinity), (-1, pod.preferred_pod_anti_affinity)):
                for weighted in terms:
                    term = weighted.term
                    selected = index.on_node(term.selector, scope_of(term, task, self._snapshot))
                    self._add(found, term.topology_key, sign * weighted.weight, selected)
        for (weighted, owner_namespace, sign), owners in self._soft_terms().items():
            if selects_task(weighted.term, owner_namespace, task, self._snapshot):
                on_node = [p for p in owners if is_on_node(p)]
                self._add(found, weighted.term.topology_key, sign * weighted.weight, on_node)
        return found

    def _add(self, found: TopologyScores, key: str, weight: int, pods: Iterable[PodInfo]) -> None:
        """Add `weight` to the domain of each pod's node, once per pod."""
        nodes = self._snapshot.node_by_name
        for p in pods:
            node = nodes.get(p.placement.node)
            value = None if node is None else node.labels.get(key)
            if value is not None:
                domain = found.setdefault(key, {})
                domain[value] = domain.get(value, 0) + weight

    def _node_scores(self, topology: TopologyScores) -> points.Scores:
        total = np.zeros(len(self._snapshot.nodes))
        for key, domains in sorted(topology.items()):
            column = self._labels.column(key)
            by_code = np.zeros(len(column.index) + 1)  # the last entry is for nodes without the label (-1)
            for value, score in domains.items():
                code = column.index.get(value)
                if code is not None:
                    by_code[code] = score
            total += by_code[column.codes]
        scaled: points.Scores = total * scores.K8S_PLUGINS
        return scaled

    def _pod_index(self) -> PodIndex:
        if self._index is None:
            self._index = PodIndex(session_pods(self._snapshot))
        return self._index

    def _soft_terms(self) -> SoftTerms:
        """The preferred terms of the session's pods, grouped so that a term is matched once per task."""
        if self._soft is None:
            self._soft = {}
            for owner in soft_affine_pods(self._snapshot):  # domain scores are sums: order is free
                for sign, terms in ((1, owner.pod.preferred_pod_affinity), (-1, owner.pod.preferred_pod_anti_affinity)):
                    for weighted in terms:
                        self._soft.setdefault((weighted, owner.namespace, sign), []).append(owner)
        return self._soft
