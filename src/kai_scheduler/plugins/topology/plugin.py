"""topology: place a PodGroup or subgroup inside one topology domain (§7.3; KAI `plugins/topology/`).

`on_session_open` registers three callbacks:
- SUBSET_NODES: for a member (the PodGroup root or a subgroup) with a `topologyConstraint`, the candidate
  node sets, one per fitting domain in bin-pack order (`subsets.select`); none, with a fit error, when no
  domain fits or the constraint names a topology or level that does not exist;
- NODE_ORDER: the preferred-level scores of the task's nearest constrained member (`scores`);
- PRE_JOB_ALLOCATION: forget the cached scores.

Trees are built lazily, once per Topology per session (`tree.build`). Arithmetic lives in the sibling modules.
"""

from __future__ import annotations

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.api.podgroup import TopologyConstraint
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import DEFAULT_POD_SET, JobInfo, Member
from kai_scheduler.cluster.node_info import GroupState
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU, describe
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase
from kai_scheduler.plugins.topology import scores, subsets, tree
from kai_scheduler.plugins.topology.subsets import Floats


class TopologyError(Exception):
    """A constraint that cannot be honoured as written (unknown topology or level); the message says why."""


class Topology(PluginBase):
    name = "topology"
    _ssn: Session
    _trees: dict[str, tree.DomainTree | TopologyError]
    _scores: dict[int, Floats]  # id(member) → preferred-level node scores of its last selection

    def on_session_open(self, ssn: Session) -> None:
        self._ssn, self._trees, self._scores = ssn, {}, {}
        ssn.add(points.SUBSET_NODES, self.subset_nodes)
        ssn.add(points.NODE_ORDER, self.node_order)
        ssn.add(points.PRE_JOB_ALLOCATION, self.pre_job_allocation)

    def on_session_close(self, ssn: Session) -> None:
        self._trees.clear()
        self._scores.clear()

    # --- registered callbacks -----------------------------------------------------------------------------

    def subset_nodes(
        self, job: JobInfo, member: Member, tasks: list[PodInfo], candidates: points.Mask
    ) -> list[points.Mask] | None:
        """SUBSET_NODES: one node set per domain that can take all of `tasks`, in the order to try them."""
        constraint = self._constraint(job, member)
        if constraint is None:
            return None
        try:
            domains, required, preferred = self._levels(constraint)
        except TopologyError as err:
            self._reject(job, str(err))
            return []
        arrays = self._ssn.snapshot.arrays
        nodes = candidates & domains.in_tree & arrays.schedulable
        if not nodes.any():
            self._reject(
                job,
                f"topology {domains.topology!r}: no candidate node carries every level label "
                f"({', '.join(domains.level_names())})",
            )
            return []
        free, demand = self._demand(tasks, nodes)
        selection = subsets.select(
            domains,
            required=required,
            preferred=preferred,
            nodes=nodes,
            free=free,
            demand=demand,
            pinned=_running_rows(self._ssn, member),
        )
        if preferred is not None:
            self._scores[id(member)] = scores.preferred_scores(domains, preferred, selection.preferred, nodes)
        if not selection.choices:
            self._reject(job, self._shortfall(domains, selection, job, member, demand))
            return []
        return [candidates & (domains.levels[c.level].of_node == c.domain) for c in selection.choices]

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        """NODE_ORDER: the scores of the task's nearest member (its leaf, then ancestors) that has them."""
        if not self._scores:
            return None
        job = self._ssn.snapshot.jobs.get(task.job_uid)
        if job is None:
            return None
        member: Member | None = job.pod_sets.get(task.subgroup or DEFAULT_POD_SET)
        while member is not None:
            found = self._scores.get(id(member))
            if found is not None:
                return found
            member = member.parent
        return None

    def pre_job_allocation(self, job: JobInfo) -> None:
        """PRE_JOB_ALLOCATION: scores are per allocation attempt; start each job without any."""
        self._scores.clear()

    # --- steps ----------------------------------------------------------------------------------------------

    def _constraint(self, job: JobInfo, member: Member) -> TopologyConstraint | None:
        """The member's own constraint; the PodGroup's for the root. None when it sets no level."""
        constraint = job.podgroup.topology_constraint if member is job.root else member.topology_constraint
        return constraint if constraint is not None and constraint.is_set else None

    def _levels(self, constraint: TopologyConstraint) -> tuple[tree.DomainTree, int | None, int | None]:
        """The tree and the required and preferred level indices; TopologyError for names that do not exist."""
        domains = self._tree(constraint.topology)
        required = _level(domains, constraint.required_level, "required")
        preferred = _level(domains, constraint.preferred_level, "preferred")
        if required is not None and preferred is not None and preferred < required:
            raise TopologyError(
                f"topology {domains.topology!r}: preferred level {constraint.preferred_level!r} "
                f"is wider than required level {constraint.required_level!r}"
            )
        return domains, required, preferred

    def _tree(self, name: str) -> tree.DomainTree:
        found = self._trees.get(name)
        if found is None:
            snapshot = self._ssn.snapshot
            topology = snapshot.topologies.get(name)
            if topology is None:
                bad = next((p for p in snapshot.problems if p.kind == "Topology" and p.key == name), None)
                why = f" (it is invalid: {bad.message})" if bad is not None else ""
                found = TopologyError(f"topology {name!r} does not exist{why}")
            else:
                found = tree.build(topology, snapshot.nodes)
            self._trees[name] = found
        if isinstance(found, TopologyError):
            raise found
        return found

    def _demand(self, tasks: list[PodInfo], nodes: points.Mask) -> tuple[subsets.Matrix, subsets.Demand]:
        """Free resources per node (shared-GPU tasks also see free room in GPU groups) and the demand."""
        arrays = self._ssn.snapshot.arrays
        free: subsets.Matrix = arrays.free
        total = np.sum([t.request for t in tasks], axis=0)
        shared = [t for t in tasks if t.gpu.is_shared]
        if shared:
            total[GPU] += sum(t.gpu.num_devices * (t.gpu.fraction or t.memory_portion or 1.0) for t in shared)
            free = free.copy()
            free[:, GPU] += self._group_room(nodes)
        first = tasks[0]
        homogeneous = all(t.gpu == first.gpu and np.array_equal(t.request, first.request) for t in tasks)
        if not homogeneous:
            return free, subsets.Demand(len(tasks), total)
        slots = self._gpu_slots(first, nodes) if first.gpu.is_shared else None
        copies = subsets.copies_per_node(arrays.free, first.request, slots, GPU)
        return free, subsets.Demand(len(tasks), total, copies)

    def _group_room(self, nodes: points.Mask) -> Floats:
        """Per node: the free portions of its usable GPU groups, summed (a fraction of a device each)."""
        room = np.zeros(len(nodes))
        for node in self._ssn.snapshot.nodes:
            if node.gpu_groups and nodes[node.row]:
                total = node.gpu_memory_mib
                room[node.row] = sum(
                    max(0.0, total - g.used_memory() + g.releasing_memory()) / total
                    for g in node.gpu_groups.values()
                    if g.state() is not GroupState.RELEASING
                )
        return room

    def _gpu_slots(self, task: PodInfo, nodes: points.Mask) -> Floats:
        """Per node: copies of a shared-GPU task its whole free GPUs and its GPU groups can take."""
        snapshot = self._ssn.snapshot
        arrays = snapshot.arrays
        labelled = arrays.gpu_memory > 0
        memory = np.where(labelled, arrays.gpu_memory, float(constants.DEFAULT_NODE_GPU_MEMORY_MIB))
        need = np.full(len(nodes), float(task.gpu.memory_mib)) if task.gpu.memory_mib else task.gpu.fraction * memory
        per_gpu = np.floor(memory / need + tolerance.RESOURCE)
        if task.gpu.memory_mib:
            per_gpu = np.where(labelled, per_gpu, 0.0)
        slots: Floats = np.floor(arrays.free[:, GPU] + tolerance.RESOURCE) * per_gpu
        for node in snapshot.nodes:
            if node.gpu_groups and nodes[node.row] and per_gpu[node.row] > 0:
                need_here = node.task_gpu_memory(task)
                slots[node.row] += sum(
                    np.floor(
                        max(0.0, node.gpu_memory_mib - g.used_memory() + g.releasing_memory()) / need_here
                        + tolerance.RESOURCE
                    )
                    for g in node.gpu_groups.values()
                    if g.state() is not GroupState.RELEASING
                )
        out: Floats = np.floor(slots / task.gpu.num_devices)
        return out

    # --- fit errors -------------------------------------------------------------------------------------------

    def _reject(self, job: JobInfo, message: str) -> None:
        self._ssn.record_fit_error(job, points.Reject(self.name, constants.REASON_UNSCHEDULABLE, message))

    def _shortfall(
        self,
        domains: tree.DomainTree,
        selection: subsets.Selection,
        job: JobInfo,
        member: Member,
        demand: subsets.Demand,
    ) -> str:
        """Which level and domain lacked what: "not enough resources in rack z1.r2 for subgroup x …"."""
        level = domains.levels[selection.widest]
        who = f"job {job.name}" if member is job.root else f"subgroup {member.name}"
        head = (
            f"topology {domains.topology!r}: not enough resources in any {level.name} for {who} "
            f"({demand.count} pod{'s' if demand.count != 1 else ''})"
        )
        if selection.roomiest is None:
            return head
        domain = level.ids[selection.roomiest]
        if demand.copies is not None:
            return f"{head}; the roomiest, {domain}, has room for {selection.roomiest_copies:g} of them"
        column = selection.roomiest_short
        if column is None:
            return head
        name = self._ssn.snapshot.axis.names[column]
        return f"{head}; the roomiest, {domain}, lacks {name}: needs {describe(name, demand.total[column])}"


def _level(domains: tree.DomainTree, name: str, kind: str) -> int | None:
    if not name:
        return None
    index = domains.level_index(name)
    if index is None:
        raise TopologyError(
            f"topology {domains.topology!r} has no {kind} level {name!r}; "
            f"its levels are {', '.join(domains.level_names())}"
        )
    return index


def _running_rows(ssn: Session, member: Member) -> tree.Ints:
    """Rows of the nodes where the member's pods already hold resources (running, bound, allocated)."""
    rows = {
        ssn.snapshot.node_by_name[t.node].row
        for ps in member.pod_sets()
        for t in ps.tasks
        if t.is_active_allocated and t.node in ssn.snapshot.node_by_name
    }
    return np.array(sorted(rows), dtype=np.int64)
