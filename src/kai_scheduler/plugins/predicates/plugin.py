"""The predicates plugin: which nodes can take a task (§3.6 step 4, §4; KAI `plugins/predicates/predicates.go`).

KAI wraps kube-scheduler filters (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit,
InterPodAffinity) and adds MaxNodePoolResources, node readiness, the GPU-memory label and shared-GPU fit.
Here each check is its own PREDICATE callback with one kube-scheduler-phrased reason, so a fit error counts
nodes per reason; a node is charged to the first check (in registration order, kube-scheduler's filter order)
that removes it. Every check answers for all nodes at once:

- node state: two masks computed at open (cordoned, not Ready);
- taints, nodeSelector and required node affinity are static for a session: one set of masks per
  distinct constraint key (selector, affinity terms, tolerations), evaluated once, shared by all its pods;
- resources: one column comparison per requested resource on idle + releasing (so pipelining is allowed);
- inter-pod (anti-)affinity only costs pods that declare it, by walking the pods its selector can match; a
  term's namespaceSelector is matched against the snapshot's Namespaces (kube-scheduler's InterPodAffinity).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.selectors import NodeSelectorTerm, PodAffinityTerm, Taint, Toleration
from kai_scheduler.cluster import dra, tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeArrays
from kai_scheduler.cluster.node_labels import LabelColumns
from kai_scheduler.cluster.pod_affinity import (
    PodIndex,
    anti_affine_pods,
    is_on_node,
    scope_of,
    selects,
    selects_task,
    session_pods,
)
from kai_scheduler.cluster.pod_info import PodInfo, PodUID
from kai_scheduler.cluster.resources import GPU, PODS, Vector, describe
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import fit, points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase
from kai_scheduler.plugins.predicates.masks import frozen, none_if_all
from kai_scheduler.plugins.predicates.taints import TaintTable

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_NOT_READY = "node(s) were not ready"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_NO_GPU_MEMORY = "node(s) have no GPU memory label for a gpu-memory request"
REASON_TOO_MANY_PODS = "too many pods"
REASON_MIG_NODE = "node(s) expose MIG instances and take no fractional GPU request"
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Mask = points.Mask
ConstraintKey = tuple[tuple[tuple[str, str], ...], tuple[NodeSelectorTerm, ...], tuple[Toleration, ...]]


@dataclass(frozen=True, slots=True)
class StaticMasks:
    """One constraint key's verdicts over all nodes; None means every node passes."""

    affinity: Mask | None
    taints: tuple[Mask | None, ...]  # one per taint check, as `TaintTable.reasons`
    tolerates_unschedulable: bool


@dataclass(frozen=True, slots=True)
class NodeView:
    """What the checks read from the node objects alone: built once per node set and shared by the sessions
    of that set (a node object is replaced when it changes, and a new set gets a new view)."""

    labels: LabelColumns
    taints: TaintTable
    schedulable_ok: Mask | None  # None: no node is cordoned
    ready_ok: Mask | None
    has_gpu_memory: Mask
    max_allocatable: Vector
    max_allocatable_eps: Vector
    largest_gpu_memory: float
    static_by_key: dict[ConstraintKey, StaticMasks]  # filled as constraint keys are met

    @classmethod
    def of(cls, snapshot: Snapshot) -> NodeView:
        nodes, arrays = snapshot.nodes, snapshot.arrays
        max_allocatable = arrays.allocatable.max(axis=0, initial=0.0)
        max_allocatable_eps = max_allocatable + tolerance.RESOURCE
        max_allocatable.flags.writeable = max_allocatable_eps.flags.writeable = False
        return cls(
            labels=snapshot.node_labels(),
            taints=TaintTable.build(nodes),
            schedulable_ok=none_if_all(np.array([not n.node.unschedulable for n in nodes], dtype=bool)),
            ready_ok=none_if_all(np.array([n.node.ready for n in nodes], dtype=bool)),
            has_gpu_memory=frozen(arrays.gpu_memory > 0),
            max_allocatable=max_allocatable,
            max_allocatable_eps=max_allocatable_eps,
            largest_gpu_memory=float(arrays.gpu_memory.max(initial=0.0)),
            static_by_key={},
        )


class Predicates(PluginBase):
    name = "predicates"
    constraint_evaluations: int  # per session: constraint keys evaluated (misses of the node view)
    _snapshot: Snapshot
    _arrays: NodeArrays
    _labels: LabelColumns
    _taints: TaintTable
    _schedulable_ok: Mask | None  # None: no node is cordoned
    _ready_ok: Mask | None
    _has_gpu_memory: Mask
    _may_share: Mask  # nodes that have (or had, this session) a shared GPU group
    _max_allocatable: Vector
    _max_allocatable_eps: Vector
    _largest_gpu_memory: float
    _static_by_key: dict[ConstraintKey, StaticMasks]
    _static_by_task: dict[PodUID, StaticMasks]
    _pods: PodIndex | None  # built on the first task with pod (anti-)affinity
    _anti_affine: dict[tuple[PodAffinityTerm, str], list[PodInfo]] | None

    def on_session_open(self, ssn: Session) -> None:
        self._open(ssn.snapshot)
        ssn.add(points.PRE_PREDICATE, self.max_node_pool_resources)
        # No eviction makes a node larger: reclaim, preempt and consolidation skip such a job outright.
        ssn.add(points.VICTIM_INVARIANT_PRE_PREDICATE, self.max_node_pool_resources)
        ssn.add(points.PREDICATE, self.node_unschedulable)
        ssn.add(points.PREDICATE, self.node_ready)
        for taint_check in self._taint_checks():
            ssn.add(points.PREDICATE, taint_check)
        ssn.add(points.PREDICATE, self.node_affinity)
        ssn.add(points.PREDICATE, self.gpu_memory_label)
        ssn.add(points.PREDICATE, self.node_resource_type)
        ssn.add(points.PREDICATE, self.resources_fit)
        ssn.add(points.PREDICATE, self.pod_affinity)
        ssn.add(points.PREDICATE, self.pod_anti_affinity)
        ssn.add(points.PREDICATE, self.existing_pods_anti_affinity)

    def on_session_close(self, ssn: Session) -> None:
        self._static_by_task.clear()
        self._pods = self._anti_affine = None

    def _open(self, snapshot: Snapshot) -> None:
        """Per-session state: everything that cannot change while the session runs is computed here, and what
        depends on the node objects alone once per node set (the snapshot's node memo)."""
        self._snapshot, self._arrays = snapshot, snapshot.arrays
        view = snapshot.node_memo.get("predicates.nodes", lambda: NodeView.of(snapshot))
        self._labels, self._taints = view.labels, view.taints
        self._schedulable_ok, self._ready_ok = view.schedulable_ok, view.ready_ok
        self._has_gpu_memory = view.has_gpu_memory
        self._max_allocatable, self._max_allocatable_eps = view.max_allocatable, view.max_allocatable_eps
        self._largest_gpu_memory = view.largest_gpu_memory
        self._static_by_key, self._static_by_task = view.static_by_key, {}
        self._pods = self._anti_affine = None
        self.constraint_evaluations = 0

    # --- pre-predicate ---------------------------------------------------------------------------------

    def max_node_pool_resources(self, task: PodInfo, job: JobInfo) -> points.Reject | None:
        """Reject a task larger than every node's allocatable (KAI MaxNodePoolResources)."""
        need = task.request.copy()
        need[PODS] = 0.0
        if task.gpu.is_shared:
            need[GPU] = task.gpu.num_devices
        over = np.flatnonzero(need > self._max_allocatable_eps)
        if over.size:
            column = int(over[0])
            name = self._snapshot.axis.names[column]
            return self._reject(
                f"the task requests {describe(name, need[column])}; "
                f"the largest node has {describe(name, self._max_allocatable[column])}"
            )
        largest = self._largest_gpu_memory
        if task.gpu.memory_mib and 0 < largest < task.gpu.memory_mib:
            return self._reject(
                f"the task requests {task.gpu.memory_mib} MiB of GPU memory per device; "
                f"the largest GPU has {largest:g} MiB"
            )
        return None

    def _reject(self, message: str) -> points.Reject:
        return points.Reject(self.name, constants.REASON_UNSCHEDULABLE, message)

    # --- node state and static constraints -------------------------------------------------------------

    def node_unschedulable(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """Cordoned nodes, unless the pod tolerates the unschedulable taint (kube NodeUnschedulable)."""
        if self._schedulable_ok is None or self._static(task).tolerates_unschedulable:
            return None
        return points.NodeFilter(self._schedulable_ok, REASON_UNSCHEDULABLE_NODE)

    def node_ready(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        return None if self._ready_ok is None else points.NodeFilter(self._ready_ok, REASON_NOT_READY)

    def node_affinity(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """nodeSelector AND required node affinity (terms ORed, requirements ANDed)."""
        mask = self._static(task).affinity
        return None if mask is None else points.NodeFilter(mask, REASON_NODE_AFFINITY)

    def _taint_checks(self) -> list[points.Predicate]:
        """One check per named taint, so the fit error says which taint kept the pod away."""
        return [self._taint_check(i, reason) for i, reason in enumerate(self._taints.reasons)]

    def _taint_check(self, index: int, reason: str) -> points.Predicate:
        def untolerated_taint(task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
            mask = self._static(task).taints[index]
            return None if mask is None else points.NodeFilter(mask, reason)

        return untolerated_taint

    def _static(self, task: PodInfo) -> StaticMasks:
        """The task's static masks: by task, then by constraint key, evaluated on the first miss only."""
        found = self._static_by_task.get(task.uid)
        if found is None:
            key = constraint_key(task.pod)
            found = self._static_by_key.get(key)
            if found is None:
                found = self._static_by_key[key] = self._evaluate(key)
            self._static_by_task[task.uid] = found
        return found

    def _evaluate(self, key: ConstraintKey) -> StaticMasks:
        self.constraint_evaluations += 1
        selector, terms, tolerations = key
        mask = np.ones(len(self._snapshot.nodes), dtype=bool)
        for label, value in selector:
            mask &= self._labels.column(label).isin((value,))
        if terms:
            mask &= np.logical_or.reduce([self._term_mask(term) for term in terms])
        return StaticMasks(
            affinity=none_if_all(mask),
            taints=self._taints.pass_masks(tolerations),
            tolerates_unschedulable=any(t.tolerates(UNSCHEDULABLE_TAINT) for t in tolerations),
        )

    def _term_mask(self, term: NodeSelectorTerm) -> Mask:
        """All requirements of one term; a term without any matches no node (kube-scheduler)."""
        mask = np.full(len(self._snapshot.nodes), bool(term.requirements or term.field_requirements))
        for req in term.requirements:
            mask &= self._labels.column(req.key).match(req)
        for req in term.field_requirements:
            mask &= self._labels.column(req.key, field=True).match(req)
        return mask

    # --- resources -------------------------------------------------------------------------------------

    def gpu_memory_label(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """A gpu-memory request needs the node's per-GPU memory to size its share."""
        if not task.gpu.memory_mib:
            return None
        return points.NodeFilter(self._has_gpu_memory, REASON_NO_GPU_MEMORY)

    def node_resource_type(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """A MIG node (mixed strategy) serves MIG instances and whole GPUs, never a fraction (§6)."""
        if not task.gpu.is_shared:
            return None
        mig_nodes = self._snapshot.mig_nodes()
        return points.NodeFilter(~mig_nodes, REASON_MIG_NODE) if mig_nodes.any() else None

    def resources_fit(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """The request fits idle + releasing in every requested resource, the pods column included (a
        releasing pod's slot can be pipelined like any resource). One compare over all nodes; the reasons
        ("too many pods", then "insufficient <first missing resource>") are split only for a fit error."""
        fits = fit.resources_fit(self._snapshot, task, candidates)
        return points.NodeFilter(
            fits, "insufficient resources", partial(self._explain_resources, task), fits_resources=True
        )

    def _thresholds(self, task: PodInfo) -> Vector:
        return fit.thresholds(task)

    def _explain_resources(self, task: PodInfo, rejected: Mask) -> list[tuple[str, int]]:
        free, need = self._arrays.free, self._thresholds(task)
        names = self._snapshot.axis.names
        order = [PODS, *(c for c in range(len(names)) if c != PODS)]
        left, parts = rejected.copy(), []
        for column in order:
            if column == GPU and task.gpu.is_shared:
                short = left & ~self._shared_gpu_fit(task, left)
                reason = _shared_gpu_reason(task)
            else:
                short = left & (free[:, column] < need[column])
                reason = REASON_TOO_MANY_PODS if column == PODS else f"insufficient {names[column]}"
                if column == GPU and task.pod.resource_claims:  # its GPUs come through DRA claims: name them
                    reason += f" for resource claim {dra.claim_names(task.pod)}"
            count = int(short.sum())
            if count:
                parts.append((reason, count))
                left &= ~short
        return parts

    def _shared_gpu_fit(self, task: PodInfo, candidates: Mask) -> Mask:
        return fit.shared_gpu_fit(self._snapshot, task, candidates)

    # --- inter-pod affinity ----------------------------------------------------------------------------

    def pod_affinity(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """Every term needs, in the node's topology domain, an on-node pod matching all terms (kube).

        If no such pod runs anywhere and the task matches its own terms, it is the first of a self-affine
        group and may go to any node that has the topology labels."""
        terms = task.pod.pod_affinity
        if not terms:
            return None
        scoped = [(term, scope_of(term, task, self._snapshot)) for term in terms]
        (first, first_scope), rest = scoped[0], scoped[1:]
        found = self._pod_index().on_node(first.selector, first_scope)
        pods = [p for p in found if p is not task]
        if rest:
            pods = [p for p in pods if all(selects(t, scope, p) for t, scope in rest)]
        domains = [self._domains(term.topology_key, pods) for term in terms]
        mask = np.ones(len(self._snapshot.nodes), dtype=bool)
        if any(domains):
            for term, values in zip(terms, domains, strict=True):
                mask &= self._labels.column(term.topology_key).isin(values)
        elif all(selects(t, scope, task) for t, scope in scoped):
            for term in terms:
                mask &= self._labels.column(term.topology_key).codes >= 0
        else:
            mask &= False
        return points.NodeFilter(mask, REASON_POD_AFFINITY)

    def pod_anti_affinity(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """No on-node pod matching a term in the node's topology domain; nodes without the key pass."""
        terms = task.pod.pod_anti_affinity
        if not terms:
            return None
        mask = np.ones(len(self._snapshot.nodes), dtype=bool)
        for term in terms:
            found = self._pod_index().on_node(term.selector, scope_of(term, task, self._snapshot))
            pods = [p for p in found if p is not task]
            if values := self._domains(term.topology_key, pods):
                mask &= ~self._labels.column(term.topology_key).isin(values)
        return points.NodeFilter(mask, REASON_POD_ANTI_AFFINITY)

    def existing_pods_anti_affinity(self, task: PodInfo, candidates: Mask) -> points.NodeFilter | None:
        """Symmetry: keep out of the domains of on-node pods whose anti-affinity terms match this task."""
        forbidden: dict[str, set[str]] = {}
        for (term, owner_namespace), owners in self._anti_affine_pods().items():
            if not selects_task(term, owner_namespace, task, self._snapshot):
                continue
            on_node = [p for p in owners if p is not task and is_on_node(p)]
            forbidden.setdefault(term.topology_key, set()).update(self._domains(term.topology_key, on_node))
        if not any(forbidden.values()):
            return None
        mask = np.ones(len(self._snapshot.nodes), dtype=bool)
        for key, values in sorted(forbidden.items()):
            mask &= ~self._labels.column(key).isin(values)
        return points.NodeFilter(mask, REASON_EXISTING_ANTI_AFFINITY)

    def _domains(self, topology_key: str, pods: Iterable[PodInfo]) -> set[str]:
        """The topology values (node label `topology_key`) of the nodes the pods are on."""
        nodes = self._snapshot.node_by_name
        values = (nodes[name].labels.get(topology_key) for name in {p.placement.node for p in pods} if name in nodes)
        return {v for v in values if v is not None}

    def _pod_index(self) -> PodIndex:
        if self._pods is None:
            self._pods = PodIndex(session_pods(self._snapshot))
        return self._pods

    def _anti_affine_pods(self) -> dict[tuple[PodAffinityTerm, str], list[PodInfo]]:
        """Pods with anti-affinity, grouped by (term, owner namespace): a term is matched once per task."""
        if self._anti_affine is None:
            self._anti_affine = {}
            for pod in anti_affine_pods(self._snapshot):  # the domains found are sets: order is free
                for term in pod.pod.pod_anti_affinity:
                    self._anti_affine.setdefault((term, pod.namespace), []).append(pod)
        return self._anti_affine


def constraint_key(pod: Pod) -> ConstraintKey:
    """What decides a pod's static masks; pods with equal keys share them."""
    return tuple(sorted(pod.node_selector.items())), pod.node_affinity, pod.tolerations


def _shared_gpu_reason(task: PodInfo) -> str:
    """What a fractional task lacks, in its own terms: GPU memory or a fraction of a GPU, per device."""
    gpu = task.gpu
    of = f"of each of {gpu.num_devices} GPUs" if gpu.num_devices > 1 else "of one GPU"
    if gpu.memory_mib:
        return f"insufficient GPU memory (needs {gpu.memory_mib} MiB {of})"
    return f"insufficient GPU share (needs {gpu.fraction:g} {of})"
