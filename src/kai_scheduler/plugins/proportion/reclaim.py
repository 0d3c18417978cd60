"""Reclaim rules of the proportion plugin (BEHAVIOR.md §5.3, exactly; KAI `plugins/proportion/reclaimable/`
`reclaimable.go`, `strategies/maintain_fair_share.go`, `strategies/guarantee_deserved_quota.go`).

Vectors are on the queue axis (cpu millicores, memory bytes, gpu devices); -1 deserved or limit is unlimited.
R_J is what the reclaimer's tasks ask for (a gpu-memory task counted as its portion of the smallest GPU).
"Leveled" queues (Lr, Lv) are the ancestors-or-selves of the reclaimer's and the victim's queue at the first
level where their paths from the root differ: the two siblings the rules compare.

1. `can_reclaim` (CAN_RECLAIM): the reclaimer's leaf stays within its fair share with R_J (every resource); a
   non-preemptible job also within deserved for its non-preemptible use.
2. `is_victim` (RECLAIM_VICTIM_FILTER): if Lr + R_J is over Lr's deserved in some resource, Lv must be above
   its allocatable share in some resource (MaintainFairShare); else, among the resources J asks for where
   Lv's deserved is limited, Lv must be above deserved in one of them, or under deserved in none.
3. `reclaimable` (RECLAIM_VALIDATOR), against the queue state cloned by `job_solution_start`:
   - each victim job gives one vector per elastic task (beyond the first minAvailable of its PodSet, in task
     order) and one for its core tasks; before each is taken from Lv's remaining allocation `rem`, either
     MaintainFairShare (rem above Lv's allocatable share in some resource) or GuaranteeDeservedQuota (Lr +
     R_J within Lr's deserved everywhere, and rem above Lv's deserved in some resource) must hold; then the
     vector leaves Qv and all its ancestors. Tasks only moved elsewhere do not count when
     `--allow-consolidating-reclaim` is on (the default);
   - with `--reclaim-protects-deserved` (off by default; not KAI's rule), taking the vector must also not take
     Lv below its deserved quota in a resource the vector holds. KAI checks the strategies only before each
     vector, so a whole gang may cut into the quota: a team over its fair share by 2 loses an 8-GPU gang to
     give 2. With the old simulation (`--preemptor-placed-first`) and no pipelined claims the team then took
     the rest straight back and the two ping-ponged; KAI's simulation, in allocate's queue order, refuses such
     a reclaim itself, so KAI's rule is the default (docs/configuration.md, "Departures from KAI");
   - saturation: for each level L from the reclaimer's leaf up, a = remaining(L) + R_J; for every sibling S
     of L that lost resources and every resource S lost or J asks for, reject when
     ratio(a, L.fs) > 1, S.fs > 0 and ratio(a, L.fs) x multiplier >= ratio(rem_S, S.fs) — a reclaimer
     ending above its fair share must still be strictly less saturated than each sibling it took from;
   - a non-preemptible reclaimer stays within deserved at every level.
4. `job_solution_start` (ON_JOB_SOLUTION_START): clone every queue's allocation for the validator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import QUEUE_AXIS, QUEUE_NAMES, Vector, describe
from kai_scheduler.framework import points
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins.proportion import capacity
from kai_scheduler.plugins.proportion.division import UNLIMITED, allocatable_share

PLUGIN = "proportion"


class ReclaimRules:
    """The reclaim callbacks over the plugin's shares. States: opened → (per job) solution started."""

    def __init__(
        self,
        ssn: Session,
        shares: Mapping[str, QueueShare],
        parents: Mapping[str, str],
        total: Vector,
        multiplier: float,
        *,
        sync: Callable[[], None] = lambda: None,
    ) -> None:
        """`sync`: brings `shares`' allocations up to date; called before each callback reads them."""
        self._sync = sync
        self._ssn = ssn
        self._shares = shares
        self._parents = parents
        self._total = total
        self._multiplier = multiplier
        self._children: dict[str, list[str]] = {}
        for name in sorted(parents):
            self._children.setdefault(parents[name], []).append(name)
        self._start: dict[str, tuple[Vector, Vector]] = {}
        self._filtered: dict[tuple[str, str], bool] = {}  # (reclaimer uid, victim queue) → rule 2's answer

    # --- callbacks ---------------------------------------------------------------------------------------------

    def job_solution_start(self, job: JobInfo) -> None:
        """ON_JOB_SOLUTION_START: clone every queue's allocation; the validator judges against it."""
        self._sync()
        self._start = {
            name: (s.allocated.copy(), s.allocated_non_preemptible.copy()) for name, s in self._shares.items()
        }
        self._filtered.clear()

    def can_reclaim(self, job: JobInfo, tasks: list[PodInfo]) -> points.Reject | None:
        """CAN_RECLAIM: the leaf within its fair share with the job; non-preemptible: within deserved too."""
        self._sync()
        leaf = self._shares.get(job.queue)
        if leaf is None:
            return points.Reject(PLUGIN, constants.REASON_QUEUE_DOES_NOT_EXIST, f"queue {job.queue!r} is unknown")
        request = _request(tasks)
        for r, name in enumerate(QUEUE_NAMES):
            held, fair = float(leaf.allocated[r]), float(leaf.fair_share[r])
            if held + request[r] > fair + tolerance.SHARE:
                return points.Reject(
                    PLUGIN,
                    constants.REASON_UNSCHEDULABLE,
                    f"queue {leaf.name} may not reclaim: {describe(name, held)} allocated + "
                    f"{describe(name, float(request[r]))} requested exceeds its fair share of "
                    f"{describe(name, fair)}",
                )
        if not job.preemptible:
            return capacity.non_preemptible_over_quota(self._chain(job.queue), request, PLUGIN)
        return None

    def is_victim(self, reclaimer: JobInfo, victim: JobInfo) -> bool:
        """RECLAIM_VICTIM_FILTER: may `victim`'s queue give resources to `reclaimer`'s (rule 2)?

        The answer depends on the two queues only: it is kept per victim queue while one reclaimer's victims are
        filtered (until its solution starts)."""
        key = (reclaimer.uid, victim.queue)
        answer = self._filtered.get(key)
        if answer is None:
            answer = self._filtered[key] = self._queue_may_give(reclaimer, victim.queue)
        return answer

    def _queue_may_give(self, reclaimer: JobInfo, victim_queue: str) -> bool:
        if victim_queue not in self._shares or reclaimer.queue not in self._shares:
            return False
        self._sync()
        request = _request(self._ssn.tasks_to_allocate(reclaimer))
        lr, lv = self.leveled(reclaimer.queue, victim_queue)
        reclaimer_level, victim_level = self._shares[lr], self._shares[lv]
        if not _within(reclaimer_level.allocated + request, reclaimer_level.deserved):
            return _exceeds(victim_level.allocated, self.allocatable(victim_level))
        considered = [r for r in range(len(QUEUE_AXIS)) if request[r] > 0 and victim_level.deserved[r] != UNLIMITED]
        held, deserved = victim_level.allocated, victim_level.deserved
        over = any(held[r] > deserved[r] + tolerance.SHARE for r in considered)
        under = any(held[r] < deserved[r] - tolerance.SHARE for r in considered)
        return over or not under

    def reclaimable(
        self, reclaimer: JobInfo, tasks: list[PodInfo], scenario: points.VictimScenario
    ) -> points.Reject | None:
        """RECLAIM_VALIDATOR: the strategies per victim vector, the saturation order, non-preemptible quota."""
        self._sync()
        request = _request(tasks)
        taken = list(scenario.victims)
        if not self._ssn.config.flags.allow_consolidating_reclaim:
            taken += list(scenario.moved)
        remaining: dict[str, Vector] = {}
        lost: dict[str, Vector] = {}
        for job, job_tasks in _by_job(self._ssn, taken):
            lr, lv = self.leveled(reclaimer.queue, job.queue)
            for vector in victim_vectors(self._ssn, job, job_tasks):
                rem = remaining.get(lv, self._allocated(lv))
                if not self._strategy_holds(lr, lv, rem, request):
                    return points.Reject(
                        PLUGIN,
                        constants.REASON_UNSCHEDULABLE,
                        f"queue {lv} is not over its share: it cannot give {_amounts(vector)} to {lr}",
                    )
                if self._ssn.config.flags.reclaim_protects_deserved and not self._keeps_deserved(lv, rem, vector):
                    return points.Reject(
                        PLUGIN,
                        constants.REASON_UNSCHEDULABLE,
                        f"queue {lv} would fall below its deserved quota if it gave {_amounts(vector)} to {lr}",
                    )
                for name in self._names(job.queue):
                    remaining[name] = remaining.get(name, self._allocated(name)) - vector
                    lost[name] = lost.get(name, np.zeros(len(QUEUE_AXIS))) + vector
        if reject := self._saturation(reclaimer.queue, request, remaining, lost):
            return reject
        if not reclaimer.preemptible:
            chain = [self._start_share(name) for name in self._names(reclaimer.queue)]
            return capacity.non_preemptible_over_quota(chain, request, PLUGIN)
        return None

    # --- rules -------------------------------------------------------------------------------------------------

    def leveled(self, reclaimer_queue: str, victim_queue: str) -> tuple[str, str]:
        """The ancestors-or-selves of both queues at the first level where their root paths differ."""
        left = list(reversed(self._names(reclaimer_queue)))
        right = list(reversed(self._names(victim_queue)))
        for a, b in zip(left, right, strict=False):
            if a != b:
                return a, b
        return left[min(len(left), len(right)) - 1], right[min(len(left), len(right)) - 1]

    def allocatable(self, share: QueueShare) -> Vector:
        """max(deserved, fair share) capped by the limit, per resource (division.allocatable_share)."""
        return np.array(
            [
                allocatable_share(
                    float(share.deserved[r]), float(share.fair_share[r]), float(share.limit[r]), float(self._total[r])
                )
                for r in range(len(QUEUE_AXIS))
            ]
        )

    def _strategy_holds(self, lr: str, lv: str, rem: Vector, request: Vector) -> bool:
        victim = self._shares[lv]
        if _exceeds(rem, self.allocatable(victim)):  # MaintainFairShare
            return True
        reclaimer = self._shares[lr]
        return (
            _within(self._allocated(lr) + request, reclaimer.deserved)  # GuaranteeDeservedQuota
            and _exceeds(rem, victim.deserved)
        )

    def _keeps_deserved(self, name: str, rem: Vector, vector: Vector) -> bool:
        """Taking `vector` leaves the queue at or above its deserved quota in every resource the vector takes
        where it was at or above it (-1 = unlimited)."""
        deserved = self._shares[name].deserved
        for r in range(len(QUEUE_AXIS)):
            quota = float(deserved[r])
            if (
                vector[r] > tolerance.SHARE
                and quota != UNLIMITED
                and rem[r] >= quota - tolerance.SHARE
                and rem[r] - vector[r] < quota - tolerance.SHARE
            ):
                return False
        return True

    def _saturation(
        self, queue: str, request: Vector, remaining: Mapping[str, Vector], lost: Mapping[str, Vector]
    ) -> points.Reject | None:
        for level in self._names(queue):
            share = self._shares[level]
            after = remaining.get(level, self._allocated(level)) + request
            for sibling in self._children.get(self._parents[level], []):
                if sibling == level or sibling not in lost or not (lost[sibling] > tolerance.SHARE).any():
                    continue
                other = self._shares[sibling]
                rem = remaining[sibling]
                for r in range(len(QUEUE_AXIS)):
                    if not (lost[sibling][r] > tolerance.SHARE or request[r] > 0):
                        continue
                    mine, theirs = float(share.fair_share[r]), float(other.fair_share[r])
                    if mine == UNLIMITED and theirs == UNLIMITED:
                        continue
                    ratio = _ratio(float(after[r]), mine)
                    if ratio > 1 and theirs > 0 and ratio * self._multiplier >= _ratio(float(rem[r]), theirs):
                        return points.Reject(
                            PLUGIN,
                            constants.REASON_UNSCHEDULABLE,
                            f"queue {level} would end more saturated in {QUEUE_NAMES[r]} than {sibling}, "
                            f"which it takes from ({ratio:.3g} x {self._multiplier:g} >= "
                            f"{_ratio(float(rem[r]), theirs):.3g} of fair share)",
                        )
        return None

    # --- state ---------------------------------------------------------------------------------------------

    def _names(self, queue: str) -> list[str]:
        """The queue and its ancestors, leaf → top level."""
        names = []
        while queue:
            names.append(queue)
            queue = self._parents.get(queue, "")
        return names

    def _chain(self, queue: str) -> list[QueueShare]:
        return [self._shares[name] for name in self._names(queue)]

    def _allocated(self, name: str) -> Vector:
        start = self._start.get(name)
        return (start[0] if start is not None else self._shares[name].allocated).copy()

    def _start_share(self, name: str) -> QueueShare:
        """The queue's share with its allocation as cloned at solution start (for the quota check)."""
        share = self._shares[name]
        start = self._start.get(name, (share.allocated, share.allocated_non_preemptible))
        return QueueShare(
            name=name,
            deserved=share.deserved,
            limit=share.limit,
            over_quota_weight=share.over_quota_weight,
            allocated=start[0],
            allocated_non_preemptible=start[1],
            request=share.request,
            fair_share=share.fair_share,
            usage=share.usage,
        )


def victim_vectors(ssn: Session, job: JobInfo, tasks: Sequence[PodInfo]) -> list[Vector]:
    """One vector per elastic task (beyond the first minAvailable of its PodSet in task order), then one for
    the core tasks together."""
    by_set: dict[str, list[PodInfo]] = {}
    for task in tasks:
        by_set.setdefault(task.subgroup or "", []).append(task)
    elastic: list[Vector] = []
    core = np.zeros(len(QUEUE_AXIS))
    has_core = False
    for name in sorted(by_set):
        members = sorted(by_set[name], key=ssn.task_key)
        pod_set = job.pod_sets.get(name) or job.pod_sets.get("default")
        minimum = pod_set.min_available if pod_set is not None else len(members)
        for i, task in enumerate(members):
            if i < minimum:
                core = core + task.queue_request()
                has_core = True
            else:
                elastic.append(task.queue_request())
    return [*elastic, core] if has_core else elastic


def _by_job(ssn: Session, tasks: Sequence[PodInfo]) -> list[tuple[JobInfo, list[PodInfo]]]:
    """Tasks grouped by job, jobs in the order their first task appears."""
    grouped: dict[str, list[PodInfo]] = {}
    for task in tasks:
        grouped.setdefault(task.job_uid, []).append(task)
    return [(ssn.job(uid), members) for uid, members in grouped.items()]


def _request(tasks: Sequence[PodInfo]) -> Vector:
    total = np.zeros(len(QUEUE_AXIS))
    for task in tasks:
        total += task.queue_request()
    return total


def _within(amount: Vector, limit: Vector) -> bool:
    """amount ≤ limit in every resource; -1 is unlimited."""
    return all(limit[r] == UNLIMITED or amount[r] <= limit[r] + tolerance.SHARE for r in range(len(QUEUE_AXIS)))


def _exceeds(amount: Vector, limit: Vector) -> bool:
    """amount > limit in at least one resource; -1 is never exceeded."""
    return any(limit[r] != UNLIMITED and amount[r] > limit[r] + tolerance.SHARE for r in range(len(QUEUE_AXIS)))


def _ratio(amount: float, fair_share: float) -> float:
    if fair_share == UNLIMITED:
        return 0.0
    if fair_share == 0:
        return math.inf if amount > 0 else 0.0
    return amount / fair_share


def _amounts(vector: Vector) -> str:
    parts = [describe(name, float(vector[r])) for r, name in enumerate(QUEUE_NAMES) if vector[r] > 0]
    return ", ".join(reversed(parts)) or "nothing"
