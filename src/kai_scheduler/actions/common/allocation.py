"""Place one job inside a statement (KAI `actions/common/allocate.go`, §3.5–§3.6).

Shared by allocate and, in pipeline-only mode, by the victim actions' simulations. The job's tasks to
allocate (gang minimum, or one elastic task) are placed member by member down the subgroup tree; each member
may be offered several candidate node sets (topology), tried in order with checkpoint and rollback. Each task
goes to the best-scoring feasible node (greedy, no per-task backtracking): on idle resources it is Allocated,
on resources still being released it is Pipelined. A gang that needed any pipelining is pipelined whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.actions.common import gpu_sharing
from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo, Member, PodSet
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.resources import GPU, describe
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Statement


@dataclass(frozen=True, slots=True)
class Outcome:
    placed: bool
    pipelined: bool = False


def allocate_job(
    ssn: Session, stmt: Statement, job: JobInfo, *, pipeline_only: bool = False, tasks: list[PodInfo] | None = None
) -> Outcome:
    """Try to place the job's next tasks (default: `ssn.tasks_to_allocate`); on failure the statement is rolled
    back to where it was. The gang check applies to whatever `tasks` are given."""
    if tasks is None:
        tasks = ssn.tasks_to_allocate(job)
    if not tasks:
        return Outcome(False)
    ssn.pre_job_allocation(job)
    checkpoint = stmt.checkpoint()
    if not place_tasks(ssn, stmt, job, tasks, pipeline_only=pipeline_only):
        return Outcome(False)
    if not job.is_gang_satisfied():
        stmt.rollback(checkpoint)
        ssn.record_fit_error(
            job, points.Reject("allocate", constants.REASON_UNSCHEDULABLE, "the gang's minimum could not be met")
        )
        return Outcome(False)
    pipelined = any(op.task.status == PodStatus.PIPELINED for op in stmt.operations[checkpoint:])
    if pipelined:
        stmt.convert_allocated_to_pipelined(job.uid)
    return Outcome(True, pipelined)


def place_tasks(
    ssn: Session,
    stmt: Statement,
    job: JobInfo,
    tasks: list[PodInfo],
    *,
    pipeline_only: bool = False,
    candidates: points.Mask | None = None,
) -> bool:
    """Place exactly `tasks` of `job` (capacity check, then member by member) on `candidates` (default: all
    nodes); all or nothing: on failure the statement is rolled back to where it was. No gang check: the
    victim actions place partial jobs and re-land evicted victims with it."""
    if reject := ssn.job_over_capacity(job, tasks):
        ssn.record_fit_error(job, reject)
        return False
    checkpoint = stmt.checkpoint()
    wanted = {str(t.uid) for t in tasks}
    nodes = ssn.all_nodes() if candidates is None else candidates
    if not _place_member(ssn, stmt, job, job.root, wanted, nodes, pipeline_only):
        stmt.rollback(checkpoint)
        return False
    return True


def _place_member(
    ssn: Session,
    stmt: Statement,
    job: JobInfo,
    member: Member,
    wanted: set[str],
    candidates: points.Mask,
    pipeline_only: bool,
) -> bool:
    """Place the wanted tasks under `member`, trying each candidate node set the plugins offer."""
    tasks = [t for ps in member.pod_sets() for t in ps.tasks if str(t.uid) in wanted]
    if not tasks:
        return True
    for node_set in ssn.subset_nodes(job, member, tasks, candidates):
        checkpoint = stmt.checkpoint()
        if _place_within(ssn, stmt, job, member, wanted, node_set, pipeline_only):
            return True
        stmt.rollback(checkpoint)
    return False


def _place_within(
    ssn: Session,
    stmt: Statement,
    job: JobInfo,
    member: Member,
    wanted: set[str],
    node_set: points.Mask,
    pipeline_only: bool,
) -> bool:
    if isinstance(member, PodSet):
        tasks = sorted((t for t in member.tasks if str(t.uid) in wanted), key=ssn.task_key)
        return all(_place_task(ssn, stmt, job, task, node_set, pipeline_only) for task in tasks)
    return all(
        _place_member(ssn, stmt, job, child, wanted, node_set, pipeline_only)
        for child in sorted(member.children, key=ssn.member_key)
    )


def _place_task(
    ssn: Session, stmt: Statement, job: JobInfo, task: PodInfo, candidates: points.Mask, pipeline_only: bool
) -> bool:
    if reject := ssn.pre_predicate(task, job):
        ssn.record_fit_error(job, reject)
        return False
    feasible, report = ssn.feasible_nodes(task, candidates)
    if not feasible.any():
        message = f"task {task.name}: {report.message()}"
        ssn.record_fit_error(
            job, points.Reject(", ".join(report.plugins) or "allocate", constants.REASON_UNSCHEDULABLE, message)
        )
        return False
    node = ssn.snapshot.nodes[ssn.best_node(task, feasible)]
    groups, groups_on_releasing = _gpu_groups(ssn, task, node.row)
    fits_idle = bool((ssn.snapshot.arrays.free_now[node.row] >= task.request - tolerance.RESOURCE).all())
    if fits_idle and not groups_on_releasing and not pipeline_only:
        stmt.allocate(task, node.name, groups)
    else:
        stmt.pipeline(task, node.name, groups)
    return True


def _gpu_groups(ssn: Session, task: PodInfo, row: int) -> tuple[tuple[str, ...], bool]:
    """GPU groups for a shared-GPU task on the chosen node and whether any depends on releasing capacity
    (§6, ordered by GPU_ORDER: see `gpu_sharing`). Whole-GPU tasks need none."""
    return gpu_sharing.choose(ssn, task, row)


HOSTNAME = "kubernetes.io/hostname"


def gang_summary(ssn: Session, job: JobInfo) -> str:
    """Plain words for a job of alike pods that did not fit, when the free room cannot hold the pods it needs:
    how many pods the room holds against how many are required (KAI's words), then what each pod asks and
    whether pods may share a node. Room is counted per node (how many pods each node's free resources hold, one
    when the pods repel each other there), so pods that can share a node are never said to need a node each.
    Empty when the room holds them (what stopped the job is in the other reasons)."""
    pending = job.pending_tasks()
    if not pending:
        return ""
    first = pending[0]
    if any(not np.array_equal(t.request, first.request) for t in pending):
        return ""
    need = min(len(pending), max(job.min_available() - job.active_allocated(), 1))
    room = _room(ssn, first)
    schedulable = ssn.snapshot.arrays.schedulable
    apart = _repels_itself(first, ssn.snapshot.namespace_labels())
    have = _pods_held(ssn, apart, np.where(schedulable, room, 0))
    if have >= need:
        return ""
    summary = _requirement(first, need, have, apart)
    # Room on nodes not Ready or cordoned: said, or "room for 0" reads as a full cluster when its nodes are down
    # (the kubelets stopped, a network partition) and their GPUs idle.
    idle = _pods_held(ssn, apart, np.where(schedulable, 0, room))
    if idle:
        summary += f" (room for {idle} more on nodes not ready or cordoned)"
    return summary


def _room(ssn: Session, task: PodInfo) -> npt.NDArray[np.int64]:
    """Per node: how many pods of `task`'s request its free (not allocated) resources hold."""
    free = ssn.snapshot.arrays.non_allocated()
    asked = task.request > tolerance.RESOURCE
    if not asked.any():
        return np.full(len(free), len(ssn.snapshot.nodes), dtype=np.int64)
    whole = np.floor((free[:, asked] + tolerance.RESOURCE) / task.request[asked])
    room: npt.NDArray[np.int64] = np.maximum(whole.min(axis=1), 0).astype(np.int64)
    return room


def _pods_held(ssn: Session, key: str | None, room: npt.NDArray[np.int64]) -> int:
    """How many of the pods the room holds; pods that repel each other within topology key `key` (None: they
    do not): one per domain."""
    if key is None:
        return int(room.sum())
    if key == HOSTNAME:
        return int(np.minimum(room, 1).sum())
    domains: set[str] = set()
    held = 0
    for node in ssn.snapshot.nodes:
        value = node.labels.get(key)
        if room[node.row] <= 0:
            continue
        if value is None:  # no domain there: the term does not keep pods apart on it
            held += int(room[node.row])
        elif value not in domains:
            domains.add(value)
            held += 1
    return held


def _repels_itself(task: PodInfo, namespace_labels: Mapping[str, Mapping[str, str]]) -> str | None:
    """The topology key of a required anti-affinity term that selects the pod's own labels in its namespace
    (the job's alike pods must then each run in a domain of their own), else None."""
    pod = task.pod
    for term in pod.pod_anti_affinity:
        scope = term.scope(pod.namespace, namespace_labels)
        if (scope is None or pod.namespace in scope) and term.selector.matches(pod.meta.labels):
            return term.topology_key
    return None


def _requirement(task: PodInfo, need: int, have: int, key: str | None) -> str:
    """ "Resources were found for 2 pods while 3 are required for gang scheduling: each pod needs 1 GPU, 3 GPUs
    in all", or that each pod needs a node (or domain) of its own; for one pod: "no node has room for a pod of
    2 GPUs"."""
    each, total = _asks(task, need)
    own = "" if key is None else " on a node of its own" if key == HOSTNAME else f" in a {key} of its own"
    if need == 1:
        return f"no node has room for a pod of {each}{own}"
    pods = "pod" if have == 1 else "pods"
    found = f"Resources were found for {have} {pods} while {need} are required for gang scheduling"
    return f"{found}: each pod needs {each}{own}" if own else f"{found}: each pod needs {each}, {total} in all"


def _asks(task: PodInfo, count: int) -> tuple[str, str]:
    """What one pod asks of the resource that matters most (GPUs, MIG instances, else CPU), and `count` times it."""
    gpus = task.request[GPU]
    if gpus:
        return describe("gpu", gpus), describe("gpu", gpus * count)
    if task.gpu.mig:  # MIG instances: what the gang lacks is those, not CPU
        return _mig(task, 1), _mig(task, count)
    return describe("cpu", task.request[0]), describe("cpu", task.request[0] * count)


def _mig(task: PodInfo, times: int) -> str:
    return " and ".join(f"{count * times} MIG {profile}" for profile, count in task.gpu.mig)
