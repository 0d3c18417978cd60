"""Victims: which running tasks a victim action may take, in which order (§3.4, §3.7, §7.1).

KAI `actions/utils/job_order_by_queue.go` (victim mode) and `podgroup_info` `GetTasksToEvict`.

- A victim job is taken a *batch* at a time (`tasks_to_evict`): one elastic surplus pod (the deepest surplus
  first, the last pod in task order first, so workers go before a master or head), else one whole surplus
  member of a SubGroupSet, else the whole gang. A job that keeps running tasks goes back into the queue.
- The victim queue is the job order through the queue tree with every comparison reversed: the most
  over-served queue, and in it the lowest-priority, most-elastic, newest job first.
- Popping a batch evicts it in the search statement at once. The queue order then judges each queue as it is
  once its popped victims are gone (KAI subtracts popped victims from the queue), because the proportion
  plugin's accounting follows every eviction; the search rolls the statement back as it needs.

Only tasks committed to the cluster (Binding, Bound, Running) are victims: a job placed earlier in this cycle
is never one (evicting a task whose BindRequest is still to be written would undo this cycle's own work).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.cluster.job_info import JobInfo, Member, PodSet
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import BITS, PodStatus
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction, Statement

# As the flags' plain ints: `can_be_victim` reads every task of every running job when a victim pool is made.
_EVICTABLE = (PodStatus.BINDING | PodStatus.BOUND | PodStatus.RUNNING).value
_PLACED_THIS_CYCLE = (PodStatus.ALLOCATED | PodStatus.PIPELINED).value


@dataclass(frozen=True, slots=True)
class Batch:
    """Tasks of one victim job evicted together, with where each was before (to put it back)."""

    job: JobInfo
    tasks: tuple[PodInfo, ...]
    origins: tuple[Placement, ...]
    nodes: frozenset[str] = frozenset()
    uids: frozenset[str] = frozenset()

    @classmethod
    def of(cls, job: JobInfo, tasks: Sequence[PodInfo]) -> Batch:
        """The batch of `tasks` where they are now (before they are evicted)."""
        origins = tuple([t.placement for t in tasks])
        return cls(
            job, tuple(tasks), origins, frozenset([p.node for p in origins]), frozenset([str(t.uid) for t in tasks])
        )


def is_evictable(task: PodInfo) -> bool:
    return bool(BITS[task.placement.status] & _EVICTABLE)


def _any_evictable(tasks: Iterable[PodInfo]) -> bool:
    """`any(is_evictable(t) for t in tasks)` as a loop on the flags' ints (asked after every pop)."""
    for task in tasks:  # noqa: SIM110
        if BITS[task.placement.status] & _EVICTABLE:
            return True
    return False


def can_be_victim(job: JobInfo) -> bool:
    """Preemptible, running at least one committed task, and nothing placed for it in this cycle."""
    if not job.preemptible:
        return False
    has_running = False
    for task in job.tasks:
        bits = BITS[task.placement.status]
        if bits & _PLACED_THIS_CYCLE:
            return False
        if bits & _EVICTABLE:
            has_running = True
    return has_running


def tasks_to_evict(ssn: Session, job: JobInfo) -> list[PodInfo]:
    """The job's next batch: one surplus pod, one surplus member, or every evictable task (the gang)."""
    surplus = _surplus(ssn, job.root)
    if surplus is not None:
        return surplus
    return sorted([t for t in job.tasks if BITS[t.placement.status] & _EVICTABLE], key=ssn.task_key)


def _surplus(ssn: Session, member: Member) -> list[PodInfo] | None:
    """Deepest surplus first: a pod beyond a PodSet's minimum, else a satisfied member beyond the required."""
    if isinstance(member, PodSet):
        active = [t for t in member.tasks if t.is_active_allocated]
        if len(active) <= member.min_available:
            return None
        evictable = sorted((t for t in active if is_evictable(t)), key=ssn.task_key)
        return evictable[-1:] or None
    ordered = sorted(member.children, key=ssn.member_key)
    for child in reversed(ordered):
        found = _surplus(ssn, child)
        if found:
            return found
    satisfied = [c for c in ordered if c.is_satisfied()]
    if len(satisfied) <= member.required():
        return None
    for child in reversed(satisfied):
        tasks = sorted((t for ps in child.pod_sets() for t in ps.tasks if is_evictable(t)), key=ssn.task_key)
        if tasks:
            return tasks
    return None


class VictimQueue:
    """Victim jobs in reversed order; `pop` evicts the next batch in `stmt` and returns it.

    `jobs` must come in victim order (`victim_order`), or already split by queue in that order (`by_queue`: a
    search makes one victim queue per probe from the same pool). Each leaf queue is fed to the queue tree `chunk`
    jobs at a time, and the next chunk as soon as the last job fed (the frontier, never changed) is popped: every
    job not fed yet orders after the frontier, so the tree pops exactly what it would with every job in it,
    without ordering thousands of victims per probe. `max_jobs` caps how many distinct jobs may give victims
    (consolidation's preemptee cap); None = no cap. `moved`: the jobs moved since `jobs` were put in victim
    order (the job order reads a job's own state alone), so only their queues are sorted again; every other
    queue's jobs are in order still (thousands of comparisons on a large cluster). None: sort every queue."""

    def __init__(
        self,
        ssn: Session,
        jobs: Iterable[JobInfo] | Mapping[str, Sequence[JobInfo]],
        eviction: Callable[[JobInfo], Eviction],
        *,
        max_jobs: int | None = None,
        chunk: int = 32,
        moved: Iterable[JobInfo] | None = None,
    ) -> None:
        self._ssn = ssn
        self._chunk = chunk
        self._eviction = eviction
        self._max_jobs = max_jobs
        self.jobs: dict[str, None] = {}  # uids of the jobs that gave victims, in order (a dict: asked per pop)
        grouped = jobs if isinstance(jobs, Mapping) else by_queue(jobs)
        # reversed: pop() from the end takes the next in order
        self._waiting: dict[str, list[JobInfo]] = {queue: list(reversed(q)) for queue, q in grouped.items() if q}
        self._frontier: dict[str, str] = {}
        first = {queue: self._take(queue) for queue in sorted(self._waiting)}
        if moved is None:
            self._order = JobOrderByQueues(ssn, first, reverse=True)
        else:
            unordered = frozenset(job.queue for job in moved)
            self._order = JobOrderByQueues(ssn, first, reverse=True, ordered=True, unordered=unordered)

    def _take(self, queue: str) -> list[JobInfo]:
        waiting = self._waiting.get(queue, [])
        chunk = [waiting.pop() for _ in range(min(self._chunk, len(waiting)))]
        if chunk:
            self._frontier[queue] = chunk[-1].uid
        return chunk

    def pop(self, stmt: Statement) -> Batch | None:
        while (job := self._order.pop()) is not None:
            if self._frontier.get(job.queue) == job.uid:
                for more in self._take(job.queue):
                    self._order.push(more)
            if self._max_jobs is not None and job.uid not in self.jobs and len(self.jobs) >= self._max_jobs:
                continue
            tasks = tasks_to_evict(self._ssn, job)
            if not tasks:
                continue
            batch = Batch.of(job, tasks)
            why = self._eviction(job)
            for task in tasks:
                stmt.evict(task, why)
            self.jobs.setdefault(job.uid)
            if _any_evictable(job.tasks):
                self._order.push(job)
            return batch
        return None


def by_queue(jobs: Iterable[JobInfo]) -> dict[str, list[JobInfo]]:
    """`jobs` split by queue, each queue's in the order given."""
    out: dict[str, list[JobInfo]] = {}
    for job in jobs:
        out.setdefault(job.queue, []).append(job)
    return out


def victim_order(ssn: Session, jobs: Iterable[JobInfo]) -> list[JobInfo]:
    """Jobs sorted in victim order (reversed job order); building a victim queue from this order is linear."""
    return sorted(jobs, key=ssn.job_key, reverse=True)
