"""The job solver: find victims that let one job run (§3.7; KAI `actions/common/solvers/job_solver.go`,
`pod_accumulated_scenario_builder.go`, `by_pod_solver.go`).

1. Probe prefixes of the job's tasks to allocate: sizes 1, 2, 4 … up to all n, then a binary search below the
   first size that fails; each probe runs in the statement and is rolled back, but the victims a successful
   probe needed are *recorded* and start every later probe. If some size worked, solve the whole job (unless
   that was the last probe), and keep that statement.
2. A probe evicts the recorded victims, then pops victim batches one at a time (`victims.VictimQueue`); after
   each, the cheap filters and the generators (`scenario`) propose sub-scenarios to simulate.
3. A simulation puts back the accumulated victims outside the sub-scenario, then pops the preemptor and the
   victim jobs in allocate's queue order (KAI `GetJobsToAllocate`: every job with a pending pod is in the
   order and skipped when popped), each job ranked by what it is about to place. A victim job popped before the
   preemptor is placed pipeline-only by node score, as allocate would place it; the preemptor's probe tasks are
   pipelined on the feasible nodes, and the scenario fails if they do not fit; a victim popped after it lands in
   place if its node still has room (it was not needed), else elsewhere, all of a batch or none. A victim left
   Releasing is evicted; one pipelined elsewhere is moved. The action's validator then accepts or rejects the
   scenario. With the flag `preemptor-placed-first` the probe's tasks are placed first and every victim lands
   after them (victim jobs in the order they were chosen).

What the search does is counted in the session's `SearchStats` (`framework.search_stats`), with KAI's states:
each scenario a generator gives is *emitted*; one already failed for this job is a *duplicate*; else it is
*simulated*, and *validator_rejected* when the action's validator refuses it; an accumulated victim set the cheap
filters reject is *filtered*. Each attempt is timed on the budget's timer, from asking the generator for it to
its result (`solved`, `unsolved`, `validator_rejected`, `duplicate`); when the victims run out, each generator
still within its budget gets one `generators_exhausted` attempt, timed over the last, empty, look for victims.
The recorded victims tried again at the start of a probe are a scenario of the generator that found them.

A job whose tasks all fit as things are (on idle or releasing resources, as after an earlier eviction of the
cycle) is not searched: no victim is evicted or moved for it.

Differences from KAI, on purpose: a victim that lands after the preemptor lands in place first, so an unneeded
victim is never moved, and every evicted pod of a victim tries to land again (KAI: the job's next tasks to
allocate only). Failed scenarios are remembered per job (tasks placed, victims) and not simulated twice. Fit
errors the simulations record are dropped: the job keeps what allocate said about it.
"""

from __future__ import annotations

import bisect
import enum
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from kai_scheduler.actions.common import allocation, gpu_sharing, scenario, victims
from kai_scheduler.actions.common.budget import JobBudget
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.actions.common.scenario import Generators, ScenarioOutcome
from kai_scheduler.actions.common.victims import Batch, VictimQueue
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.node_info import GroupState, NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.framework import points
from kai_scheduler.framework import search_stats as stats
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction, Statement

log = logging.getLogger(__name__)
Validator = Callable[[JobInfo, list[PodInfo], ScenarioOutcome], points.Reject | None]


class Result(enum.Enum):
    SOLVED = "solved"
    UNSOLVED = "unsolved"
    EXHAUSTED = "deadline_exhausted"
    NOT_ATTEMPTED = "not_attempted"  # no task to allocate


@dataclass(frozen=True, slots=True)
class VictimSearch:
    """What an action asks of the solver for one preemptor.

    `victims`: the jobs it may take from, in victim order (victims.victim_order); `eviction`: the record each
    victim's eviction carries; `validate`: the action's scenario validator; `max_victim_jobs`: a cap on the
    jobs that may give victims (consolidation)."""

    action: str
    victims: Sequence[JobInfo]
    eviction: Callable[[JobInfo], Eviction]
    validate: Validator
    max_victim_jobs: int | None = None


@dataclass(slots=True)
class Solution:
    result: Result
    outcome: ScenarioOutcome | None = None
    simulations: int = 0


def solve(ssn: Session, stmt: Statement, job: JobInfo, search: VictimSearch, budget: JobBudget) -> Solution:
    """Find and apply (in `stmt`) victims that let `job`'s next tasks run; on failure `stmt` is as it was."""
    with ssn.provisional_fit_errors():
        ssn.job_solution_start(job)
        return _JobSolver(ssn, stmt, job, search, budget).solve()


class _JobSolver:
    def __init__(self, ssn: Session, stmt: Statement, job: JobInfo, search: VictimSearch, budget: JobBudget) -> None:
        self.ssn, self.stmt, self.job, self.search, self.budget = ssn, stmt, job, search, budget
        self.tasks = ssn.tasks_to_allocate(job)
        self.recorded: list[Batch] = []
        self.failed: set[tuple[int, frozenset[str]]] = set()
        self.deadlines = {name: budget.generator(name) for name in scenario.GENERATORS}
        self.base_nodes = self._feasible_nodes()
        self.simulations = 0
        self.outcome: ScenarioOutcome | None = None
        self.stats = ssn.search
        self.timer = budget.action.timer
        self.found_by = scenario.GENERATORS[0]  # the generator whose scenario the recorded victims came from
        self._waiting: dict[str, dict[str, list[JobInfo]]] | None = None
        self._sorted_queues: set[str] = set()
        self._victims_by_queue: dict[str, list[JobInfo]] | None = None  # the pool by queue, for every probe

    def solve(self) -> Solution:
        n = len(self.tasks)
        if n == 0:
            return Solution(Result.NOT_ATTEMPTED)
        if self._fits_without_victims():
            return self._unsolved()
        best, holds_all = self._largest_solvable_prefix(n)
        if best == 0:
            return self._unsolved()
        if not holds_all and not self._probe(n, keep=True):
            return self._unsolved()
        return Solution(Result.SOLVED, self.outcome, self.simulations)

    def _fits_without_victims(self) -> bool:
        """The whole job fits on idle or releasing resources as things are: no scenario may evict or move for it
        (placing it is allocate's business, the next cycle's if the room is still releasing)."""
        checkpoint = self.stmt.checkpoint()
        fits = self._place_preemptor(len(self.tasks), self.tasks, self.base_nodes)
        self.stmt.rollback(checkpoint)
        return fits

    def _unsolved(self) -> Solution:
        result = Result.EXHAUSTED if self.budget.exhausted() else Result.UNSOLVED
        return Solution(result, None, self.simulations)

    def _largest_solvable_prefix(self, n: int) -> tuple[int, bool]:
        """Exponential then binary probing; (largest size that worked, whether the statement holds size n)."""
        solved, size = 0, 1
        failed_at = 0
        while True:
            if self._probe(size, keep=size == n):
                solved = size
                if size == n:
                    return n, True
                size = min(size * 2, n)
            else:
                failed_at = size
                break
            if self.budget.exhausted():
                return 0, False
        while failed_at - solved > 1 and solved > 0 and not self.budget.exhausted():
            middle = (solved + failed_at) // 2
            if self._probe(middle, keep=False):
                solved = middle
            else:
                failed_at = middle
        return solved, False

    # --- one probe ------------------------------------------------------------------------------------------

    def _probe(self, size: int, *, keep: bool) -> bool:
        """Search victims for the first `size` tasks; record them; keep the statement only if `keep`."""
        checkpoint = self.stmt.checkpoint()
        tasks = self.tasks[:size]
        found = self._search(size, tasks)
        if found is not None:
            self.recorded = list(found.batches)
            self.outcome = found
            if keep:
                return True
        self.stmt.rollback(checkpoint)
        return found is not None

    def _search(self, size: int, tasks: list[PodInfo]) -> ScenarioOutcome | None:
        accumulated = [self._evict_again(b) for b in self.recorded]
        recorded = len(accumulated)
        generators = Generators(self.ssn, tasks, scenario.fits_one_node(self.ssn, tasks))
        if accumulated:
            started = self.timer()
            self.stats.scenario(self.search.action, self.found_by, stats.EMITTED)
            if (found := self._try_all(size, tasks, accumulated, accumulated, self.found_by, started)) is not None:
                return found
        if self._victims_by_queue is None:
            self._victims_by_queue = victims.by_queue(self.search.victims)
        queue = VictimQueue(
            self.ssn,
            self._victims_by_queue,
            self.search.eviction,
            max_jobs=self.search.max_victim_jobs,
            moved=[b.job for b in accumulated],  # victims evicted again may have changed place in the job order
        )
        candidates = self._candidates(accumulated)
        worth = False  # the cheap filters only get easier as victims accumulate: once passed, passed
        while not self.budget.exhausted():
            started = self.timer()
            batch = queue.pop(self.stmt)
            if batch is None:
                self._generators_exhausted(started)
                return None
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "victims tried",
                    extra={
                        "job": self.job.key,
                        "victim": batch.job.key,
                        "tasks": [t.name for t in batch.tasks],
                        "nodes": sorted(batch.nodes),
                        "accumulated": len(accumulated) + 1,
                    },
                )
            accumulated.append(batch)
            self._add_nodes(candidates, batch)
            worth = worth or self._worth_simulating(tasks, generators, batch, candidates)
            if not worth:
                self.stats.filtered[self.search.action] += 1
                continue
            for generator, sub, started in self._sub_scenarios(generators, accumulated, recorded, batch):
                if (found := self._try_all(size, tasks, accumulated, sub, generator, started)) is not None:
                    return found
        return None

    def _generators_exhausted(self, started: float) -> None:
        seconds = self.timer() - started
        for name, deadline in self.deadlines.items():
            if not deadline.exhausted():
                self.stats.attempt(self.search.action, name, stats.GENERATORS_EXHAUSTED, seconds)

    def _evict_again(self, batch: Batch) -> Batch:
        why = self.search.eviction(batch.job)
        for task in batch.tasks:
            self.stmt.evict(task, why)
        return batch

    def _worth_simulating(
        self, tasks: list[PodInfo], generators: Generators, latest: Batch, candidates: points.Mask
    ) -> bool:
        """The cheap filters over the accumulated victims, `latest` the one added since the last call."""
        if not generators.accumulated_fit(latest):
            return False
        return scenario.every_task_has_a_node(self.ssn, tasks, candidates)

    def _sub_scenarios(
        self, generators: Generators, accumulated: list[Batch], recorded: int, latest: Batch
    ) -> Iterator[tuple[str, list[Batch], float]]:
        """(generator, sub-scenario, when the generator was asked for it) for each sub-scenario to try."""
        for name, proposals in (
            (scenario.NODE_LOCAL_GREEDY, generators.node_local_greedy(accumulated, recorded, latest)),
            (scenario.MULTI_NODE_GANG, generators.multi_node_gang(accumulated, recorded)),
        ):
            deadline = self.deadlines[name]
            started = self.timer()
            for sub in proposals:
                if deadline.exhausted() or self.budget.exhausted():
                    break
                if generators.gpus_fit(accumulated, sub):
                    self.stats.scenario(self.search.action, name, stats.EMITTED)
                    yield name, sub, started
                    started = self.timer()

    # --- one simulation -------------------------------------------------------------------------------------

    def _try_all(
        self,
        size: int,
        tasks: list[PodInfo],
        accumulated: list[Batch],
        sub: list[Batch],
        generator: str,
        started: float,
    ) -> ScenarioOutcome | None:
        """Simulate `sub` (unless it already failed), counted and timed as `generator`'s attempt."""
        action = self.search.action
        key = (size, frozenset(uid for b in sub for uid in b.uids))
        if key in self.failed:
            self.stats.scenario(action, generator, stats.DUPLICATE)
            self.stats.attempt(action, generator, stats.DUPLICATE, self.timer() - started)
            return None
        self.simulations += 1
        self.stats.simulated[action] += 1
        self.stats.scenario(action, generator, stats.SIMULATED)
        checkpoint = self.stmt.checkpoint()
        outcome, result = self._simulate(size, tasks, accumulated, sub)
        if result == stats.VALIDATOR_REJECTED:
            self.stats.scenario(action, generator, stats.VALIDATOR_REJECTED)
        self.stats.attempt(action, generator, result, self.timer() - started)
        if outcome is None:
            self.stmt.rollback(checkpoint)
            self.failed.add(key)
        else:
            self.found_by = generator
        return outcome

    def _simulate(
        self, size: int, tasks: list[PodInfo], accumulated: list[Batch], sub: list[Batch]
    ) -> tuple[ScenarioOutcome | None, str]:
        """The scenario's outcome if it works, and its result (`search_stats`: solved, unsolved, rejected)."""
        inside = {id(b) for b in sub}
        for batch in accumulated:
            if id(batch) not in inside:
                self._put_back(batch)
        candidates = self._candidates(sub)
        if self.ssn.config.flags.preemptor_placed_first:
            placed = self._place_preemptor_first(size, tasks, sub, candidates)
        else:
            placed = self._place_in_queue_order(size, tasks, sub, candidates)
        if not placed:
            return None, stats.UNSOLVED
        outcome = ScenarioOutcome.of(sub)
        if size == len(self.tasks) and not (outcome.victims or outcome.moved):
            return None, stats.UNSOLVED  # nothing to evict or move: placing the job is allocate's business
        if self.search.validate(self.job, tasks, outcome) is not None:
            return None, stats.VALIDATOR_REJECTED
        return outcome, stats.SOLVED

    def _place_preemptor(self, size: int, tasks: list[PodInfo], candidates: points.Mask) -> bool:
        """The probe's tasks, pipeline-only, on the candidate nodes; the whole job must meet its gang minimum."""
        if not allocation.place_tasks(self.ssn, self.stmt, self.job, tasks, pipeline_only=True, candidates=candidates):
            return False
        return size < len(self.tasks) or self.job.is_gang_satisfied()

    def _place_preemptor_first(
        self, size: int, tasks: list[PodInfo], sub: list[Batch], candidates: points.Mask
    ) -> bool:
        """`preemptor-placed-first`: the probe's tasks first, then every victim lands again, in place if it can."""
        if not self._place_preemptor(size, tasks, candidates):
            return False
        for batch in self._reland_order(sub):
            self._reland(batch, candidates)
        return True

    def _place_in_queue_order(self, size: int, tasks: list[PodInfo], sub: list[Batch], candidates: points.Mask) -> bool:
        """KAI's order: the preemptor and the victim jobs pop from allocate's queue order (with every other job
        that has a pending task: they are skipped, but while first in their queue they speak for it). A victim
        popped before the preemptor is placed as allocate would place it (by node score), so a victim whose
        queue sorts first takes back what it needs and the preemptor may no longer fit; one popped after lands
        in place first. Each job is ranked by what it is about to place."""
        batches: dict[str, list[Batch]] = {}
        for batch in self._reland_order(sub):
            batches.setdefault(batch.job.uid, []).append(batch)
        ranking: dict[str, list[PodInfo]] = {uid: [t for b in bs for t in b.tasks] for uid, bs in batches.items()}
        ranking[self.job.uid] = tasks
        with self.ssn.ranked_as(ranking):
            order = self._allocation_order([bs[0].job for bs in batches.values()])
            waiting = {*batches, self.job.uid}
            preemptor_placed = False
            while waiting and (job := order.pop()) is not None:
                if job.uid not in waiting:
                    continue
                waiting.discard(job.uid)
                if job.uid == self.job.uid:
                    if not self._place_preemptor(size, tasks, candidates):
                        return False
                    preemptor_placed = True
                    continue
                for batch in batches[job.uid]:
                    if preemptor_placed:
                        self._reland(batch, candidates)
                    else:
                        allocation.place_tasks(
                            self.ssn, self.stmt, batch.job, list(batch.tasks), pipeline_only=True, candidates=candidates
                        )
        return preemptor_placed

    def _allocation_order(self, victim_jobs: list[JobInfo]) -> JobOrderByQueues:
        """The preemptor, `victim_jobs` and the jobs with a pending task, in allocate's queue order (KAI
        `GetJobsToAllocate`). Only the top-level queues holding the preemptor or a victim are built: what the
        others pop is skipped and changes no other queue's turn. Within a leaf the pending jobs are sorted once
        per solve (nothing moves them); the victims, whose order the evictions change, are inserted in it."""
        victims = {job.uid for job in victim_jobs}
        by_queue: dict[str, list[JobInfo]] = {}
        for top in {self._top(job.queue) for job in (self.job, *victim_jobs)}:
            for queue in self._waiting_by_top().get(top, ()):
                by_queue[queue] = [j for j in self._waiting_in(queue) if j.uid not in victims]
        for job in victim_jobs:
            bisect.insort(by_queue.setdefault(job.queue, []), job, key=self.ssn.job_key)
        if not any(j is self.job for j in by_queue.get(self.job.queue, ())):
            bisect.insort(by_queue.setdefault(self.job.queue, []), self.job, key=self.ssn.job_key)
        return JobOrderByQueues(self.ssn, (j for jobs in by_queue.values() for j in jobs), ordered=True)

    def _waiting_by_top(self) -> dict[str, dict[str, list[JobInfo]]]:
        """Jobs with a pending task, by top-level queue and leaf queue (computed once per solve)."""
        if self._waiting is None:
            self._waiting = {}
            for job in self.ssn.snapshot.waiting:
                if job.has_pending():
                    self._waiting.setdefault(self._top(job.queue), {}).setdefault(job.queue, []).append(job)
        return self._waiting

    def _waiting_in(self, queue: str) -> list[JobInfo]:
        """The leaf's jobs with a pending task, in job order (sorted on first use)."""
        jobs = self._waiting_by_top()[self._top(queue)][queue]
        if queue not in self._sorted_queues:
            jobs.sort(key=self.ssn.job_key)
            self._sorted_queues.add(queue)
        return jobs

    def _top(self, queue: str) -> str:
        queues = self.ssn.snapshot.queues
        info = queues.get(queue)
        while info is not None and info.parent and info.parent in queues:
            info = queues[info.parent]
        return info.name if info is not None else queue

    def _reland_order(self, sub: list[Batch]) -> list[Batch]:
        """Victim jobs in the order they were chosen; within a job, its tasks in task order (KAI re-allocates a
        victim job as a job: an elastic victim's first pods in task order land again first), not the order
        they were evicted in (the last pods first)."""
        first: dict[str, int] = {}
        for i, batch in enumerate(sub):
            first.setdefault(batch.job.uid, i)
        task_key = self.ssn.task_key
        return sorted(sub, key=lambda b: (first[b.job.uid], min(task_key(t) for t in b.tasks)))

    def _put_back(self, batch: Batch) -> None:
        for task, origin in zip(batch.tasks, batch.origins, strict=True):
            self.stmt.pipeline(task, origin.node, origin.gpu_groups)  # an un-evict

    def _reland(self, batch: Batch, candidates: points.Mask) -> None:
        """In place if the batch's nodes still have room for all of it, else elsewhere, else not at all.

        Either way the victim's queue must have room again (limits: JOB_OVER_CAPACITY)."""
        if self.ssn.job_over_capacity(batch.job, list(batch.tasks)) is not None:
            return
        checkpoint = self.stmt.checkpoint()
        for task, origin in zip(batch.tasks, batch.origins, strict=True):
            if not self._room_in_place(task, origin.node):
                self.stmt.rollback(checkpoint)
                allocation.place_tasks(
                    self.ssn, self.stmt, batch.job, list(batch.tasks), pipeline_only=True, candidates=candidates
                )
                return
            self.stmt.pipeline(task, origin.node, origin.gpu_groups)  # an un-evict

    def _room_in_place(self, task: PodInfo, node_name: str) -> bool:
        node = self.ssn.snapshot.node_by_name[node_name]
        need = task.request
        releasing_devices = sum(
            1
            for g in task.placement.gpu_groups
            if g in node.gpu_groups and node.gpu_groups[g].state() is GroupState.RELEASING
        )
        if releasing_devices:  # else the request as it is (adding 0 changes no value): no copy per task
            need = need.copy()
            need[GPU] += releasing_devices
        if not _shared_room_in_place(task, node):
            return False
        if not (self.ssn.snapshot.arrays.free[node.row] >= need - tolerance.RESOURCE).all():
            return False
        if task.pod.resource_claims:  # its claims' devices may be taken meanwhile, whatever the node's ledger says
            only = np.zeros(len(self.ssn.snapshot.nodes), dtype=bool)
            only[node.row] = True
            return bool(self.ssn.feasible_nodes(task, only)[0][node.row])
        return True

    # --- nodes ---------------------------------------------------------------------------------------------

    def _feasible_nodes(self) -> points.Mask:
        """GPU jobs: only nodes with idle or releasing GPUs or unused room on a shared GPU (victims' nodes join
        as they are chosen)."""
        arrays = self.ssn.snapshot.arrays
        if self.tasks and all(t.request[GPU] > 0 or t.gpu.is_shared for t in self.tasks):
            mask: points.Mask = arrays.schedulable & (arrays.free[:, GPU] > tolerance.RESOURCE)
            for row in gpu_sharing.shared_room(self.ssn):
                mask[row] = True
            return mask
        return self.ssn.all_nodes()

    def _candidates(self, batches: Sequence[Batch]) -> points.Mask:
        """The feasible nodes and the nodes of `batches`' victims."""
        mask = self.base_nodes.copy()
        for batch in batches:
            self._add_nodes(mask, batch)
        return mask

    def _add_nodes(self, mask: points.Mask, batch: Batch) -> None:
        rows = self.ssn.snapshot.node_by_name
        for node in batch.nodes:
            mask[rows[node].row] = True


def _shared_room_in_place(task: PodInfo, node: NodeInfo) -> bool:
    """A releasing sharer goes back into its GPU groups only if what stays there (pipelined newcomers that
    counted on its memory included) still fits the device with it (§6)."""
    uid = str(task.uid)
    for group_id in task.placement.gpu_groups:
        group = node.gpu_groups.get(group_id)
        if group is None or uid not in group.sharers:
            continue
        staying = group.used_memory() - group.releasing_memory() + group.sharers[uid]
        if staying > node.gpu_memory_mib + tolerance.RESOURCE:
            return False
    return True
