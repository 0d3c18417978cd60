"""dynamicresources: a pod goes only where every one of its DRA claims can be allocated (§4; KAI
`plugins/dynamicresources/`).

- PrePredicate: each claim exists (a template's claim has been made for this pod), is not being deleted, is
  not another pod's, names known DeviceClasses whose CEL selectors compile and evaluate; a shared (not
  per-pod) claim of a GPU class carries the job's queue label. One line naming the claim says what is wrong.
- Predicate: the nodes where the claims' requests find enough free matching devices (the node's own or in
  network-attached pools it reaches); an allocated claim keeps its devices and so its nodes.
- Allocate / deallocate: the task's claims take devices on its node, and give them back when the placement is
  undone or the task is evicted (`cluster.dra.DraState`), so gangs and victim searches see them as the
  statement leaves them. The commit writes the chosen devices into the BindRequest.
- Charges: a claim that comes to hold GPUs no pod was charged for (a shared claim, an `All` request) charges
  the queue of the task that made it hold them, and refunds it when its last user leaves (CHARGE_QUEUE; the
  proportion plugin keeps the queues).
"""

from __future__ import annotations

from functools import partial

from kai_scheduler.cluster.dra import DraState
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.base import PluginBase

REASON = "UnschedulableClaims"


class DynamicResources(PluginBase):
    name = "dynamicresources"
    _ssn: Session
    _state: DraState | None
    _nodes: dict[str, NodeInfo]

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._state = None
        self._nodes = ssn.snapshot.node_by_name
        self._queue_label = ssn.config.flags.queue_label_key
        ssn.add(points.PRE_PREDICATE, self.pre_predicate)
        ssn.add(points.PREDICATE, self.predicate)
        ssn.add(points.ON_ALLOCATE, self.on_allocate)
        ssn.add(points.ON_DEALLOCATE, self.on_deallocate)

    @property
    def state(self) -> DraState:
        if self._state is None:
            self._state = self._ssn.snapshot.dra_state()
        return self._state

    def pre_predicate(self, task: PodInfo, job: JobInfo) -> points.Reject | None:
        if not task.pod.resource_claims:
            return None
        problem = self.state.problem(task, job.queue, self._queue_label)
        if problem is None:
            return None
        return points.Reject(self.name, REASON, f"pod {task.key}: {problem}")

    def predicate(self, task: PodInfo, candidates: points.Mask) -> points.NodeFilter | None:
        if not task.pod.resource_claims:
            return None
        state = self.state
        return points.NodeFilter(
            state.feasible(task, candidates),
            "node(s) cannot allocate the pod's resource claims",
            partial(state.explain, task),
        )

    def on_allocate(self, task: PodInfo) -> None:
        if task.pod.resource_claims and task.node in self._nodes:
            state = self.state
            state.take(task, self._nodes[task.node].row, self._ssn.snapshot.claim_owner(task))
            self._pass_on(state)

    def on_deallocate(self, task: PodInfo) -> None:
        if task.pod.resource_claims:
            state = self.state
            state.release(task)
            self._pass_on(state)

    def _pass_on(self, state: DraState) -> None:
        """Hand the claims' own charges and refunds to the queues."""
        if state.charges:
            charge = self._ssn.call(points.CHARGE_QUEUE)
            for c in state.drain_charges():
                charge(c.owner.queue, c.gpus, c.owner.non_preemptible)
