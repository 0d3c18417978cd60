"""Turn a session's committed decisions into store writes (KAI `Statement.Commit` + `CloseSession`, §3.3).

Order: stale BindRequests deleted; evictions; pipelines (the pod stays Pending, with an event, as KAI's; with
`--pipelined-claims` also the node as its `status.nominatedNodeName`, and claims that lapsed cleared); binds (one
BindRequest per pod, §1.3); then status: PodGroup annotations (last start / eviction / stale timestamp, one
patch per PodGroup and cycle), the `UnschedulableOnNodePool` condition with the fit reasons, pod
`PodScheduled=False` conditions and events, and events on bad objects. Writes that already hold (same condition,
same message) are skipped: every API write per pod counts. A failed write (the API server refused it: RBAC, a
conflict, an invalid field, throttling) is one warning line naming the object and the server's reason, and the
rest go on; a pod whose BindRequest was refused gets neither its `Scheduled` event nor its node-pool label (KAI's
`Bind`). An event that cannot be created is said once per reason for the process (events are best effort; one
that exists already is not a failure).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from kai_scheduler.api import bindrequest, constants, mig
from kai_scheduler.api.bindrequest import ClaimAllocation
from kai_scheduler.api.clock import Clock, SystemClock
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import format_time, parse_time
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import SchedulingCondition, fit_message
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework.points import Reject
from kai_scheduler.framework.statement import Op, Operation
from kai_scheduler.store import events
from kai_scheduler.store.interface import (
    JSON,
    AlreadyExists,
    ClusterStore,
    StoreError,
    may_have_been_done,
    replaced,
)
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)
T = TypeVar("T")

BACKLOG = 2000  # background writes (start annotations, events) waiting at most, with writer threads


class Committer:
    """`writers` > 1: the BindRequests of a cycle are written by that many threads at once, after the evictions
    and pipelines; against an API server each write is one round trip, and they do not depend on one another.
    The PodGroups' start annotations and the events then go out in the background, by as many threads again:
    the next cycle reads neither (its snapshot has the BindRequests, so a started job is not started again),
    and waiting for them made the commit three round trips per pod instead of one. At most `BACKLOG` of them
    wait at a time; beyond that a commit waits for the oldest."""

    def __init__(
        self,
        store: ClusterStore,
        *,
        node_pool: str = "",
        node_pool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY,
        update_eviction_condition: bool = False,
        nominate: bool = False,
        writers: int = 1,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()  # the time events are stamped with (virtual in kai schedule/simulate)
        self.nominate = nominate  # --pipelined-claims: write a pipelined pod's node as its nominatedNodeName
        self.node_pool = node_pool
        self.node_pool_label_key = node_pool_label_key
        self.update_eviction_condition = update_eviction_condition
        self.errors: list[str] = []
        self.created_bind_requests: list[JSON] = []  # each BindRequest written, as the server answered
        # A BindRequest create failed so that the server may hold requests the cache does not: one made though its
        # answer was lost, or one already there (AlreadyExists) that the watch has not brought yet.
        self.bind_requests_unsure = False
        self.bind_seconds: list[float] = []  # how long each bind took to write (the task_bind_latency metric)
        self._writers = Writers(writers, "kai-commit")
        self._later = ThreadPoolExecutor(writers, thread_name_prefix="kai-later") if writers > 1 else None
        self._backlog: deque[Future[None]] = deque()
        self._backlog_lock = threading.Lock()  # the writer threads hand over events too

    def each(self, write: Callable[[T], object], items: Sequence[T]) -> None:
        """`write` for every item: by the writer threads when there are several of both, else in order."""
        self._writers.map(write, items)

    def _try(self, what: str, write: Callable[[], object]) -> bool:
        """Whether the write was made; a refused one is a warning line and one of the cycle's `errors`, except
        one refused because it named its object by uid and the object was deleted and made again under its
        name: the write was for the one gone, and the new one is left alone (an info line)."""
        try:
            write()
        except StoreError as err:
            if replaced(err):
                log.info("not written: its object was deleted and made again under its name", extra={"what": what})
                return False
            self.errors.append(f"{what}: {err.reason}: {err}")
            log.warning(f"write failed: {err}", extra={"what": what, "reason": err.reason})
            return False
        return True

    def delete_bind_request(self, namespace: str, name: str) -> None:
        self._try(f"delete BindRequest {namespace}/{name}", lambda: self.store.delete("bindrequests", name, namespace))

    def apply(
        self,
        operations: list[Operation],
        jobs: dict[str, JobInfo],
        now: float,
        *,
        pending: Sequence[JobInfo] | None = None,
        stale: Sequence[JobInfo] | None = None,
        started: Sequence[str] = (),
        claims: Callable[[PodInfo, str], tuple[ClaimAllocation, ...]] | None = None,
        fit_errors: Mapping[str, Sequence[Reject]] | None = None,
    ) -> None:
        """Write what the session committed. `pending`: the jobs that may have pending tasks, `stale`: those
        whose stale timestamp may change, in `jobs` order (the snapshot knows them; None = every job);
        `started`: the uids of the jobs it started (their PodGroups get `last-start-timestamp`, written with
        the BindRequests); `claims`: the DRA devices chosen for a task on a node (its BindRequest's
        `resourceClaimAllocations`); `fit_errors`: why jobs were not placed, by uid (said when a claim is cleared)."""
        evicted_jobs: set[str] = set()
        evicted = {op.task.uid for op in operations if op.op is Op.EVICT}
        binds: list[Callable[[], None]] = []
        for op in operations:
            if op.op is Op.EVICT:
                self._evict(op)
                evicted_jobs.add(op.task.job_uid)
            elif op.op is Op.PIPELINE:
                if op.task.uid not in evicted:
                    if self.nominate:
                        self._nominate(op.task, op.after.node)
                    self._event(
                        _pod_ref(op.task),
                        "Normal",
                        "Pipelined",
                        f"pod will run on node {op.after.node} once resources there are released",
                    )
            elif op.op is Op.ALLOCATE:
                made = claims(op.task, op.after.node) if claims is not None and op.task.pod.resource_claims else ()
                binds.append(functools.partial(self._bind, op, made))
        self.each(_call, binds)
        # Each PodGroup's annotations of the cycle in one patch, as KAI's status updater sends them: the start and
        # eviction times and the stale timestamp (a gang that was stale and starts gets both of its changes at once).
        notes: dict[str, tuple[JobInfo, dict[str, str | None]]] = {}
        stamp = format_time(now)
        for uid in started:
            if uid in jobs:
                notes.setdefault(uid, (jobs[uid], {}))[1][constants.ANNOTATION_LAST_START_TIMESTAMP] = stamp
        if self.nominate:  # KAI writes no nomination, so it clears none
            self._clear_lapsed(operations, jobs.values() if pending is None else pending, fit_errors or {})
        for uid in sorted(evicted_jobs):
            if uid in jobs:
                notes.setdefault(uid, (jobs[uid], {}))[1][constants.ANNOTATION_LAST_EVICTION_TIMESTAMP] = stamp
        for job in jobs.values() if stale is None else stale:
            if _stale_changed(job):
                wanted = None if job.stale_since is None else format_time(job.stale_since)
                notes.setdefault(job.uid, (job, {}))[1][constants.ANNOTATION_STALE_TIMESTAMP] = wanted
        for job, said in notes.values():
            if set(said) == {constants.ANNOTATION_LAST_START_TIMESTAMP}:
                self._background(self._annotate, job, said)  # the next cycle does not read it
            else:
                self._annotate(job, said)

    def _nominate(self, task: PodInfo, node: str | None) -> None:
        """Write the pipelined claim as `status.nominatedNodeName` (None clears it): the next cycle's snapshot
        reads it back, allocate serves claimed jobs first and nominatednode scores the node, so the GPUs freed for
        a reclaimer go to it and not to whichever job comes first in queue order (the victims' own, often)."""
        if task.pod.nominated_node_name == (node or ""):
            return
        if node is not None:
            log.debug("claim written", extra={"pod": task.key, "node": node})
        self._try(
            f"nominate node on pod {task.key}",
            lambda: self.store.patch(
                "pods", task.name, task.namespace, _of(task.pod.meta, {"status": {"nominatedNodeName": node}}), "status"
            ),
        )

    def _clear_lapsed(
        self, operations: Sequence[Operation], pending: Iterable[JobInfo], fit_errors: Mapping[str, Sequence[Reject]]
    ) -> None:
        """Clear the claims of the pending pods this cycle did not place again."""
        placed = {op.task.uid for op in operations if op.op in (Op.PIPELINE, Op.ALLOCATE)}
        for job in pending:
            for task in job.pending_tasks():
                if task.pod.nominated_node_name and task.uid not in placed:
                    self._lapsed(task, job, fit_errors.get(job.uid, ()))

    def _lapsed(self, task: PodInfo, job: JobInfo, reasons: Sequence[Reject]) -> None:
        """Clear the claim of a pending pod this cycle did not place again (pipelined or bound): it no longer
        fits on the node it claimed, nor anywhere; said at info level with the job's fit errors."""
        why = "; ".join(dict.fromkeys(r.message for r in reasons)) or "not placed this cycle"
        log.info(
            "claim cleared: the pod was not placed again",
            extra={"pod": task.key, "node": task.pod.nominated_node_name, "job": job.key, "reason": why},
        )
        self._nominate(task, None)

    def _evict(self, op: Operation) -> None:
        task, why = op.task, op.eviction
        if self.update_eviction_condition:
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": why.message if why else "",
            }
            self._try(
                f"condition on pod {task.key}",
                lambda: self.store.patch(
                    "pods",
                    task.name,
                    task.namespace,
                    _of(task.pod.meta, {"status": {"conditions": [condition]}}),
                    "status",
                    strategic=True,
                ),
            )
        self._try(f"evict pod {task.key}", lambda: self.store.evict(task.namespace, task.name, task.pod.meta.uid))
        if why is not None:
            self._event(_pod_ref(task), "Normal", "Evict", why.message)

    def _bind(self, op: Operation, claims: tuple[ClaimAllocation, ...] = ()) -> None:
        started = time.perf_counter()
        self._write_bind(op, claims)
        self.bind_seconds.append(time.perf_counter() - started)

    def _write_bind(self, op: Operation, claims: tuple[ClaimAllocation, ...]) -> None:
        task = op.task
        shared = task.gpu.is_shared
        portion = task.gpu.fraction or task.memory_portion
        br = bindrequest.for_pod(
            task.pod.meta,
            op.after.node,
            gpu_count=task.gpu.whole if not shared else task.gpu.num_devices,
            portion=portion if shared else 0.0,
            groups=op.after.gpu_groups,
            resource_type="Fraction" if shared else "MigInstance" if task.gpu.is_mig else "Regular",
            claims=claims,
        )
        if self.node_pool:
            br.meta.labels[self.node_pool_label_key] = self.node_pool
        if task.mig_held:
            br.meta.annotations[mig.ANNOTATION_INSTANCES] = mig.format_instances(task.mig_held)

        def create() -> None:
            body = br.to_dict()
            try:
                try:
                    made = self.store.create(body)
                except AlreadyExists:
                    if not self._delete_earlier_pods(task, br.meta.name):
                        raise
                    made = self.store.create(body)
            except StoreError as err:
                if isinstance(err, AlreadyExists) or may_have_been_done(err):
                    self.bind_requests_unsure = True
                raise
            self.created_bind_requests.append(made)

        if not self._try(f"create BindRequest {task.key}", create):
            return  # as KAI's Bind: neither the label nor the `Scheduled` event for a pod its request did not reach
        if self.node_pool and task.pod.meta.labels.get(self.node_pool_label_key) != self.node_pool:
            self._background(self._label_pod, task)  # nothing of the next cycle reads it
        self._event(_pod_ref(task), "Normal", "Scheduled", f"assigned {task.key} to {op.after.node}")

    def _delete_earlier_pods(self, task: PodInfo, name: str) -> bool:
        """Delete the BindRequest `name` when it was made for an earlier pod of the task's name (deleted and made
        again before the garbage collector took the request); whether it was. The request is named after its pod,
        so the new pod's cannot be created beside it."""
        try:
            found = bindrequest.BindRequest.from_dict(self.store.get("bindrequests", name, task.namespace))
        except ObjectError:
            return False
        if found.is_for(task.pod.meta.uid):
            return False
        self.store.delete("bindrequests", name, task.namespace)
        log.info(
            "BindRequest of an earlier pod of the same name replaced",
            extra={"pod": task.key, "earlier_pod_uid": found.pod_uid},
        )
        return True

    def _label_pod(self, task: PodInfo) -> None:
        """Put the node-pool label on a pod this shard placed (KAI's commit does, §8.1): who placed it stays
        readable on the pod, and other shards leave it alone."""
        patch = _of(task.pod.meta, {"metadata": {"labels": {self.node_pool_label_key: self.node_pool}}})
        self._try(f"label pod {task.key}", lambda: self.store.patch("pods", task.name, task.namespace, patch))

    def _annotate(self, job: JobInfo, said: dict[str, str | None]) -> None:
        patch = _of(job.podgroup.meta, {"metadata": {"annotations": said}})
        self._try(f"annotate PodGroup {job.key}", lambda: self.store.patch("podgroups", job.name, job.namespace, patch))

    @property
    def pool_name(self) -> str:
        """The node pool's name in what the scheduler writes: the unlabelled pool is `default`, as KAI names it."""
        return self.node_pool or constants.DEFAULT_NODE_POOL_NAME

    def unschedulable(self, job: JobInfo, reasons: list[Reject], now: float) -> None:
        """Set the PodGroup condition (with a `Normal Unschedulable` event on the PodGroup, as KAI records one) and
        the pods' PodScheduled=False (with an event), each unless it already says the same. The pods are compared
        one by one, not through the PodGroup: a pod that joined a job already told (a Job's replacement pod), or
        whose writes were lost when the scheduler stopped after the PodGroup's, is told too."""
        pairs = _dedupe([(r.reason, r.message) for r in reasons])
        message = fit_message(pairs)
        if job.podgroup.scheduling_backoff == 1:  # KAI names the pool where the job will not be tried again
            message = f"Node-Pool '{self.pool_name}': {message}"
        current = next((c for c in job.podgroup.scheduling_conditions if c.of_pool(self.node_pool)), None)
        said = current is not None and (current.node_pool, current.reasons, current.message) == (
            self.pool_name,
            pairs,
            message,
        )
        # KAI leaves the condition as it is while pods of the job run (an elastic job's extras waiting); it
        # records the event all the same.
        if not said and job.active_allocated() == 0:
            self._condition(job, pairs, message, now)
        if not said:
            self._event(_podgroup_ref(job), "Normal", constants.REASON_UNSCHEDULABLE, message)
        if job.podgroup.mark_unschedulable:
            told = "; ".join(m for _, m in pairs)
            for task in job.pending_tasks():
                if task.pod.unschedulable_message != told:
                    self._pod_unschedulable(task.pod, told)

    def _condition(self, job: JobInfo, pairs: list[tuple[str, str]], message: str, now: float) -> None:
        """Write this pool's `UnschedulableOnNodePool` condition last (KAI's order: the newest at the end), its
        transition the one after the PodGroup's last condition."""
        conditions = job.podgroup.scheduling_conditions
        last = conditions[-1].transition_id if conditions else "0"
        transition = str(int(last) + 1) if last.isdigit() else "1"
        others = [c.to_dict() for c in conditions if not c.of_pool(self.node_pool)]
        condition = SchedulingCondition(
            self.pool_name, pairs, transition, now, constants.REASON_UNSCHEDULABLE, message
        ).to_dict()
        patch = {"status": {"schedulingConditions": [*others, condition]}}
        self._try(
            f"condition on PodGroup {job.key}",
            lambda: self.store.patch("podgroups", job.name, job.namespace, patch, "status"),
        )

    def schedulable(self, job: JobInfo) -> None:
        """Clear this node pool's unschedulable condition from a job that got placed."""
        conditions = job.podgroup.scheduling_conditions
        if any(c.of_pool(self.node_pool) for c in conditions):
            other_pools = [c.to_dict() for c in conditions if not c.of_pool(self.node_pool)]
            self._try(
                f"condition on PodGroup {job.key}",
                lambda: self.store.patch(
                    "podgroups", job.name, job.namespace, {"status": {"schedulingConditions": other_pools}}, "status"
                ),
            )

    def refused_podgroup(self, pods: Sequence[Pod], message: str) -> None:
        """Tell the pending pods of a PodGroup the scheduler refused (it is not a job, so `unschedulable` never
        sees them) why they wait: a `PodScheduled=False` condition and a `Warning Unschedulable` event with
        `message`, each pod once per message (the condition it carries is compared, as for any pod told)."""
        for pod in pods:
            if pod.unschedulable_message != message:
                self._pod_unschedulable(pod, message)

    def _pod_unschedulable(self, pod: Pod, message: str) -> None:
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        self._try(
            f"condition on pod {pod.meta.key}",
            lambda: self.store.patch(
                "pods",
                pod.name,
                pod.namespace,
                _of(pod.meta, {"status": {"conditions": [condition]}}),
                "status",
                strategic=True,
            ),
        )
        ref = events.pod_ref(pod.namespace, pod.name, pod.meta.uid or pod.meta.key)
        self._event(ref, "Warning", constants.REASON_UNSCHEDULABLE, message)

    def problem(self, kind: str, key: str, reason: str, message: str) -> None:
        namespace, _, name = key.rpartition("/")
        self._event({"kind": kind, "namespace": namespace, "name": name}, "Warning", reason, message)

    def _event(self, ref: JSON, kind: str, reason: str, message: str) -> None:
        body = events.event(
            ref, kind, reason, message, component=constants.DEFAULT_SCHEDULER_NAME, now=self.clock.now()
        )
        self._background(events.record, self.store, body)

    def _background(self, write: Callable[..., None], *args: Any) -> None:
        """`write(*args)` by the background threads (at once without them)."""
        if self._later is None:
            write(*args)
            return
        with self._backlog_lock:
            while len(self._backlog) >= BACKLOG or (self._backlog and self._backlog[0].done()):
                error = self._backlog.popleft().exception()
                if error is not None:
                    log.error(f"background write failed: {type(error).__name__}: {error}")
            self._backlog.append(self._later.submit(write, *args))


def _call(write: Callable[[], None]) -> None:
    write()


def _of(meta: ObjectMeta, patch: JSON) -> JSON:
    """`patch` for the object `meta` was read from and no other: its uid in the patch, which the API server refuses
    when the name has since been given to a new object (`replaced`). The scheduler writes what it decided on the
    object it read; a pod or PodGroup deleted and made again under its name between the snapshot and the write
    gets none of it."""
    if not meta.uid:
        return patch
    return {**patch, "metadata": {**patch.get("metadata", {}), "uid": meta.uid}}


def _pod_ref(task: PodInfo) -> JSON:
    return events.pod_ref(task.namespace, task.name, str(task.uid))


def _podgroup_ref(job: JobInfo) -> JSON:
    meta = job.podgroup.meta
    ref: JSON = {"kind": "PodGroup", "apiVersion": constants.PODGROUP_API_VERSION, "namespace": meta.namespace}
    ref["name"] = meta.name
    if meta.uid:
        ref["uid"] = meta.uid
    return ref


def _stale_changed(job: JobInfo) -> bool:
    """Whether stalegangeviction changed the job's `kai.scheduler/stale-podgroup-timestamp` (set or cleared)."""
    written = job.podgroup.meta.annotations.get(constants.ANNOTATION_STALE_TIMESTAMP)
    wanted = None if job.stale_since is None else format_time(job.stale_since)
    return not (
        written == wanted or (wanted is not None and written is not None and _same_time(written, job.stale_since))
    )


def _same_time(text: str, seconds: float | None) -> bool:
    try:
        return seconds is not None and abs(parse_time(text) - seconds) < 1.0
    except ValueError:
        return False


def _dedupe(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(pairs))
