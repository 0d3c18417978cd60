"""The proportion plugin: queue fair shares, queue order and the queue capacity policy (BEHAVIOR.md §4, §5).

Mirrors KAI `plugins/proportion/proportion.go`. `on_session_open` reads as a table of contents; the arithmetic
lives in the sibling modules `division` (fair shares), `queue_order` (rules 1-8) and `capacity` (limits and
non-preemptible quota), which take plain data.

Per session it keeps one `QueueShare` per queue (what other code reads through `points.QUEUE_SHARE`) and a
`QueueState` mirror of it in plain floats for the hot comparison. The allocate/deallocate handlers add to the
mirror's `allocated` (the same float additions in the same order as on the share's vector, so it holds the
same bits) and copy it onto the shares they touched only when something reads a share (`sync_shares`): a
victim search moves tens of thousands of tasks between two reads, and three numpy additions per queue level
were most of a move's accounting. Statement rollbacks restore both exactly.

Not supported yet: `--full-hierarchy-fairness=false` (KAI re-parents every queue under a synthetic `default`
root, §3.1 step 4). Time-based fair share (§5.5): each queue's usage comes from `snapshot.queue_usage`, which
the scheduler fills from its usage source, unless `usage_by_queue` is given (tests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from kai_scheduler.cluster import queue_charge
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import GPU, QUEUE_AXIS, Vector, gpu_portion
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework import points
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins.base import PluginBase
from kai_scheduler.plugins.proportion import capacity, division, opening, queue_order, reclaim
from kai_scheduler.plugins.proportion.queue_order import QueueState, Rank


class Proportion(PluginBase):
    """Per-session plugin state. States: built (arguments only) → opened (`on_session_open`: shares computed,
    callbacks registered; `allocated` then follows every allocate/deallocate of the session). Closing writes
    nothing back (queue status is the queue controller's job) and the shares stay readable."""

    name = "proportion"

    def __init__(
        self,
        *,
        k_value: float = 1.0,
        saturation_multiplier: float = 1.0,
        usage_by_queue: Mapping[str, Vector] | None = None,
    ) -> None:
        self.k_value = max(0.0, k_value)
        self.saturation_multiplier = max(1.0, saturation_multiplier)
        self.usage_by_queue: Mapping[str, Vector] = usage_by_queue or {}  # time-based fair share hook (§5.5)
        self._ssn: Session | None = None
        self._total: Vector = np.zeros(len(QUEUE_AXIS))
        self._shares: dict[str, QueueShare] = {}
        self._states: dict[str, QueueState] = {}
        self._parents: dict[str, str] = {}
        self._leaf_chains: dict[str, list[tuple[QueueShare, QueueState]]] = {}
        self._charged: dict[str, Vector] = {}  # task uid → what its queues were charged
        self._unsynced: dict[str, tuple[QueueShare, QueueState]] = {}  # shares behind their state's `allocated`
        self._job_requests: dict[str, tuple[float, ...]] = {}  # job uid → request of its tasks to allocate
        self._ranks: dict[str, tuple[JobInfo | None, Rank]] = {}  # queue → (best job, rank)
        self._ranking_version = 0  # the session's, when the two caches above were filled
        # (left queue, right queue) → rules 7-8 of the queue order, which read only what a session keeps: queues
        # of equal rank compare often in a victim search (a third of its comparisons at 4,000 nodes)
        self._unranked: dict[tuple[str, str], int] = {}

    @classmethod
    def from_args(cls, arguments: Mapping[str, str]) -> Proportion:
        """`kValue` (default 1, ≤ 0 → 0) and `relcaimerSaturationMultiplier` (default 1, < 1 → 1).

        The multiplier keeps KAI's misspelling: it is the only key KAI parses. Other keys are ignored, as in
        KAI; a value that is not a finite number is a ConfigError."""
        return cls(
            k_value=_number(arguments, "kValue", 1.0),
            saturation_multiplier=_number(arguments, "relcaimerSaturationMultiplier", 1.0),
        )

    # --- session ------------------------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._unranked = {}
        self._unsynced = {}
        snapshot = ssn.snapshot
        keepable = opening.keepable(snapshot, self.usage_by_queue)
        total = snapshot.total_capacity()[list(QUEUE_AXIS)]
        last = opening.kept(snapshot) if keepable else None
        changed = None if last is None else last.changed(snapshot, total, self.k_value)
        if last is not None and changed is not None:
            self.reopen(opening.update(last, snapshot, changed) if changed else last)
        else:
            self.open_queue_shares(snapshot)
            self.charge_running_jobs(snapshot)
            inputs = self.divide_fair_shares(snapshot)
            self.open_queue_states()
            if keepable:
                opening.keep(snapshot, self._total, self.k_value, self._shares, self._states, inputs)
        ssn.add(points.QUEUE_ORDER, self.queue_order)
        ssn.add(points.JOB_OVER_CAPACITY, self.job_over_capacity)
        ssn.add(points.PREDICATE, self.gpu_memory_over_capacity)
        ssn.add(points.ON_ALLOCATE, self.charge_queue)
        ssn.add(points.ON_DEALLOCATE, self.refund_queue)
        ssn.add(points.QUEUE_SHARE, self.queue_share)
        ssn.add(points.CHARGE_QUEUE, self.charge_claim)
        rules = reclaim.ReclaimRules(
            ssn, self._shares, self._parents, self._total, self.saturation_multiplier, sync=self.sync_shares
        )
        ssn.add(points.CAN_RECLAIM, rules.can_reclaim)
        ssn.add(points.RECLAIM_VICTIM_FILTER, rules.is_victim)
        ssn.add(points.RECLAIM_VALIDATOR, rules.reclaimable)
        ssn.add(points.ON_JOB_SOLUTION_START, rules.job_solution_start)

    # --- opening steps ----------------------------------------------------------------------------------

    def open_queue_shares(self, snapshot: Snapshot) -> None:
        """One empty QueueShare per queue with its quota vectors; the cluster total on the queue axis (§5.1).

        Deserved and limit are copies: nothing this plugin does may change the QueueInfo."""
        self._total = snapshot.total_capacity()[list(QUEUE_AXIS)]
        zeros = np.zeros(len(QUEUE_AXIS))
        for name in sorted(snapshot.queues):
            q = snapshot.queues[name]
            usage = (self.usage_by_queue or snapshot.queue_usage).get(name)
            self._shares[name] = QueueShare(
                name=name,
                deserved=q.deserved.copy(),
                limit=q.limit.copy(),
                over_quota_weight=q.over_quota_weight.copy(),
                allocated=zeros.copy(),
                allocated_non_preemptible=zeros.copy(),
                request=zeros.copy(),
                fair_share=zeros.copy(),
                usage=zeros.copy() if usage is None else np.array(usage, dtype=np.float64),
            )
            self._parents[name] = q.parent

    def charge_running_jobs(self, snapshot: Snapshot) -> None:
        """`allocated`, `allocated_non_preemptible` and `request` of each leaf from its jobs, then ancestors.

        Allocated = tasks in allocated statuses, and the GPUs DRA claims charge themselves (shared claims, `All`
        requests: `Snapshot.dra_charges`); request = allocated + Pending tasks (`queue_charge`) + what Pending
        tasks' shared claims ask. Jobs of missing or non-leaf queues count nowhere (the snapshot reports them). The
        sums come with the snapshot (`Snapshot.queue_charges`). A task deallocated later is refunded its
        `queue_request()`, what it was charged here."""
        leaves = sorted(name for name in self._shares if snapshot.queues[name].is_leaf)
        charges = snapshot.queue_charges
        none = queue_charge.charge(())
        claims = snapshot.dra_charges()
        for name in leaves:
            leaf, sums = self._shares[name], charges.get(name, none)
            leaf.allocated = sums.allocated.copy()
            leaf.allocated_non_preemptible = sums.non_preemptible.copy()
            leaf.request = leaf.allocated + sums.pending
            if name in claims:
                held, non_preemptible, pending = claims[name]
                leaf.allocated[GPU] += held
                leaf.allocated_non_preemptible[GPU] += non_preemptible
                leaf.request[GPU] += held + pending
            for ancestor in self.queue_chain(name)[1:]:
                ancestor.allocated += leaf.allocated
                ancestor.allocated_non_preemptible += leaf.allocated_non_preemptible
                ancestor.request += leaf.request

    def divide_fair_shares(self, snapshot: Snapshot) -> list[division.ShareInput]:
        """Fair share of every queue by hierarchical division of the cluster total (§5.2).

        The division is a pure function of the queues' settings and sums, which most cycles leave as they were:
        the last result is kept in the snapshot's plugin memo with its inputs, and reused when they are equal
        (the whole division costs tens of milliseconds with thousands of queues, its inputs' comparison one)."""
        inputs = [self._share_input(snapshot.queues[name], share) for name, share in self._shares.items()]
        key = _division_key(self._total, inputs, self.k_value)
        kept = snapshot.plugin_memo.get(_DIVISION_MEMO)
        if isinstance(kept, tuple) and _same_key(kept[0], key):
            divided: dict[str, Vector] = kept[1]
        else:
            divided = division.divide(self._total, inputs, self.k_value)
            snapshot.plugin_memo[_DIVISION_MEMO] = (key, divided)
        for name, fair_share in divided.items():
            self._shares[name].fair_share = fair_share.copy()
        return inputs

    def reopen(self, last: opening.Opening) -> None:
        """The shares and states of an earlier opening on the same inputs, as copies (the session changes them)."""
        self._total = last.total.copy()
        self._shares = opening.copy_shares(last.shares)
        self._states = opening.copy_states(last.states)
        self._parents = {q.name: q.parent for q in last.queues}
        self._open_leaf_chains()

    def open_queue_states(self) -> None:
        """The plain-float mirror the queue order reads, and each leaf's chain of (share, state) pairs."""
        total = self._total.tolist()
        for name, share in self._shares.items():
            self._states[name] = opening.state_of(self._queue_info(name), share, total)
        self._open_leaf_chains()

    def _open_leaf_chains(self) -> None:
        """Each leaf's chain is made when a charge first reaches it (`_leaf_chain`): a session charges the queues of
        the jobs it moves, a few hundred of thousands, and the chains of all were made and dropped every cycle."""
        self._leaf_chains = {}

    def _leaf_chain(self, queue: str) -> list[tuple[QueueShare, QueueState]] | None:
        """The (share, state) pairs of a leaf queue and its ancestors, leaf → top-level queue; None for a queue that
        is no leaf of this session's tree."""
        chain = self._leaf_chains.get(queue)
        if chain is None and queue in self._shares and self._queue_info(queue).is_leaf:
            chain = self._leaf_chains[queue] = []
            name = queue
            while name:
                chain.append((self._shares[name], self._states[name]))
                name = self._parents[name]
        return chain

    # --- registered callbacks -----------------------------------------------------------------------------

    @points.breaks_ties  # rule 8 ends on the queue's name
    def queue_order(
        self, left: QueueInfo, right: QueueInfo, left_job: JobInfo | None, right_job: JobInfo | None
    ) -> int:
        """QUEUE_ORDER: rules 1-8 of §3.4 over the queues' current state and their best jobs' requests.

        The hottest comparison of a victim search (each step re-positions queues in the job-order tree): the
        ranks cached for both sides are looked up here, and only a miss calls `_rank`; rules 7-8 are kept per
        pair of queues."""
        assert self._ssn is not None
        if self._ssn.ranking_version != self._ranking_version:
            self._follow_ranking()
        ranks = self._ranks
        kept = ranks.get(left.name)
        left_rank = kept[1] if kept is not None and kept[0] is left_job else self._rank(left.name, left_job)
        kept = ranks.get(right.name)
        right_rank = kept[1] if kept is not None and kept[0] is right_job else self._rank(right.name, right_job)
        if left_rank != right_rank:
            return -1 if left_rank < right_rank else 1
        pair = (left.name, right.name)
        order = self._unranked.get(pair)
        if order is None:
            states = self._states
            order = self._unranked[pair] = queue_order.compare_unranked(states[left.name], states[right.name])
        return order

    def job_over_capacity(self, job: JobInfo, tasks: list[PodInfo]) -> points.Reject | None:
        """JOB_OVER_CAPACITY: the limit check, then (non-preemptible jobs) the quota check, on every level."""
        if job.queue not in self._shares:
            return None
        chain = self.queue_chain(job.queue)
        request = capacity_request(tasks, self._session.snapshot.max_gpu_memory)
        if reject := capacity.over_limit(chain, request, self.name):
            return reject
        return None if job.preemptible else capacity.non_preemptible_over_quota(chain, request, self.name)

    def gpu_memory_over_capacity(self, task: PodInfo, candidates: points.Mask) -> points.NodeFilter | None:
        """PREDICATE (KAI's IsTaskAllocationOnNodeOverCapacity): a gpu-memory task is charged its portion of
        each candidate node's GPU, so the limit and (non-preemptible jobs) quota checks are made per node size;
        the job-level check used the largest GPU, the most lenient portion."""
        if not task.gpu.memory_mib or task.gpu.whole or task.gpu.fraction:
            return None
        job = self._session.snapshot.jobs.get(task.job_uid)
        if job is None or job.queue not in self._shares:
            return None
        chain = self.queue_chain(job.queue)
        memory = self._session.snapshot.arrays.gpu_memory
        fits: points.Mask = np.ones(len(memory), dtype=bool)
        reasons: dict[float, str] = {}
        for size in np.unique(memory[candidates & (memory > 0)]).tolist():
            request = capacity_request([task], size)
            reject = capacity.over_limit(chain, request, self.name)
            if reject is None and not job.preemptible:
                reject = capacity.non_preemptible_over_quota(chain, request, self.name)
            if reject is not None:
                fits[memory == size] = False
                reasons[size] = reject.message
        if not reasons:
            return None
        reason = f"node(s) whose GPU size takes the job over its queue's capacity ({next(iter(reasons.values()))})"
        return points.NodeFilter(fits, reason)

    def charge_queue(self, task: PodInfo) -> None:
        """ON_ALLOCATE: add the task's queue request to its leaf queue and every ancestor."""
        amount = self._charged[task.uid] = task.queue_request()
        self._account(task, amount, refund=False)

    def refund_queue(self, task: PodInfo) -> None:
        """ON_DEALLOCATE: take back exactly what the task was charged (its request as of the charge)."""
        charged = self._charged.pop(task.uid, None)
        self._account(task, task.queue_request() if charged is None else charged, refund=True)

    def charge_claim(self, queue: str, gpus: float, non_preemptible: bool) -> None:
        """CHARGE_QUEUE: add `gpus` (negative: a refund) to the GPUs of a leaf queue and its ancestors, for a DRA
        claim that charges its queue itself (the dynamicresources plugin keeps charges and refunds paired)."""
        chain = self._leaf_chain(queue)
        if chain is None:
            return
        for share, state in chain:
            self._ranks.pop(share.name, None)
            self._unsynced[share.name] = (share, state)
            if non_preemptible:
                share.allocated_non_preemptible[GPU] += gpus
            state.allocated[2] += gpus

    def queue_share(self, queue: str) -> QueueShare | None:
        """QUEUE_SHARE: the proportion view of one queue, or None for an unknown name; only that share is
        brought up to date (reclaim reads the reclaimer's for each victim it pops, as other queues move)."""
        unsynced = self._unsynced.pop(queue, None)
        if unsynced is not None:
            share, state = unsynced
            share.allocated[:] = state.allocated
        return self._shares.get(queue)

    def sync_shares(self) -> None:
        """Bring the shares' `allocated` up to their states' (before any read of a share)."""
        if self._unsynced:
            for share, state in self._unsynced.values():
                share.allocated[:] = state.allocated
            self._unsynced.clear()

    # --- for actions (reclaim) ---------------------------------------------------------------------------

    def queue_chain(self, name: str) -> list[QueueShare]:
        """The queue and its ancestors, leaf → top-level queue."""
        self.sync_shares()
        chain = []
        while name:
            chain.append(self._shares[name])
            name = self._parents[name]
        return chain

    def order_state(self, name: str) -> QueueState:
        """What the queue order reads of a queue (for victim-mode comparisons in reclaim)."""
        return self._states[name]

    def queue_rank(self, name: str, job: JobInfo | None) -> Rank:
        """Rules 1-6 for the queue with `job` as its best job, cached until the queue's allocation changes.

        The job-order tree compares the same (queue, best job) pairs many times between two allocations."""
        self._follow_ranking()
        return self._rank(name, job)

    def _rank(self, name: str, job: JobInfo | None) -> Rank:
        """`queue_rank` once the ranks follow the session's ranking (the queue order checks that once for two)."""
        cached = self._ranks.get(name)
        if cached is not None and cached[0] is job:
            return cached[1]
        rank = queue_order.rank(self._states[name], None if job is None else self._request(job))
        self._ranks[name] = (job, rank)
        return rank

    def job_request(self, job: JobInfo | None) -> tuple[float, ...] | None:
        """(cpu, memory, gpu) of the job's tasks to allocate (§3.5; the session's `ranking_tasks`), cached until
        one of its tasks moves."""
        if job is None:
            return None
        self._follow_ranking()
        return self._request(job)

    def _request(self, job: JobInfo) -> tuple[float, ...]:
        """`job_request` once the requests follow the session's ranking."""
        request = self._job_requests.get(job.uid)
        if request is None:
            # Summed in Python floats from 0.0, task by task: the additions a numpy vector would make, without
            # an array per job (a simulation ranks every victim by the tasks it evicted).
            total = list(_NOTHING)
            for task in self._session.ranking_tasks(job):
                for r, amount in enumerate(task.queue_request().tolist()):
                    total[r] += amount
            request = self._job_requests[job.uid] = tuple(total)
        return request

    # --- internals -----------------------------------------------------------------------------------------

    def _follow_ranking(self) -> None:
        """Forget the requests and ranks computed before the session changed which tasks rank a job."""
        version = self._session.ranking_version
        if version != self._ranking_version:
            self._ranking_version = version
            self._job_requests.clear()
            self._ranks.clear()

    @property
    def _session(self) -> Session:
        if self._ssn is None:
            raise RuntimeError("proportion plugin used before on_session_open")
        return self._ssn

    def _queue_info(self, name: str) -> QueueInfo:
        return self._session.snapshot.queues[name]

    def _share_input(self, q: QueueInfo, share: QueueShare) -> division.ShareInput:
        return division.ShareInput(
            name=q.name,
            uid=q.uid,
            parent=q.parent,
            priority=q.priority,
            creation=q.creation,
            deserved=share.deserved,
            limit=share.limit,
            weight=share.over_quota_weight,
            request=share.request,
            usage=share.usage,
        )

    def _account(self, task: PodInfo, amount: Vector, *, refund: bool) -> None:
        """Add `amount` to the allocation of the task's queue chain (both views), or subtract it for a `refund`
        (x - a is x + (-a) to the bit, without a negated copy per move); forget what depended on it: the job's
        request and the ranks of the queues in the chain."""
        job = self._session.snapshot.jobs[task.job_uid]
        self._job_requests.pop(job.uid, None)
        chain = self._leaf_chain(job.queue)
        if chain is None:
            return
        cpu, memory, gpu = amount.tolist()
        if refund:  # negating a Python float is exact: x + (-a) is x - a
            cpu, memory, gpu = -cpu, -memory, -gpu
        add = np.subtract if refund else np.add
        non_preemptible = not job.preemptible
        unsynced, ranks = self._unsynced, self._ranks
        for entry in chain:
            share, state = entry
            ranks.pop(share.name, None)
            unsynced[share.name] = entry
            if non_preemptible:
                add(share.allocated_non_preemptible, amount, out=share.allocated_non_preemptible)
            held = state.allocated
            held[0] += cpu
            held[1] += memory
            held[2] += gpu


def capacity_request(tasks: Sequence[PodInfo], gpu_memory_mib: float) -> Vector:
    """Sum of the tasks' queue requests, a GPU-memory task counted as its portion of a `gpu_memory_mib` GPU.

    The capacity policy passes the largest node GPU memory: the smallest portion, the most lenient check."""
    total = np.zeros(len(QUEUE_AXIS))
    for task in tasks:
        amount = task.queue_request()
        if task.gpu.memory_mib and not task.gpu.whole and not task.gpu.fraction:
            amount = amount.copy()  # the task's own is read-only
            amount[GPU] = task.gpu.num_devices * gpu_portion(task.gpu.memory_mib, gpu_memory_mib)
        total += amount
    return total


def _number(arguments: Mapping[str, str], key: str, default: float) -> float:
    raw = arguments.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"plugin proportion argument {key}: expected a number, got {raw!r}")
    return value


_DIVISION_MEMO = "proportion/division"
_NOTHING = (0.0,) * len(QUEUE_AXIS)
DivisionKey = tuple[tuple[object, ...], np.ndarray]


def _division_key(total: Vector, inputs: list[division.ShareInput], k_value: float) -> DivisionKey:
    """What `division.divide` reads: the queues' identities and places in the tree, and their amounts."""
    meta = (k_value, *((q.name, q.uid, q.parent, q.priority, q.creation) for q in inputs))
    amounts = [total] + [np.concatenate((q.deserved, q.limit, q.weight, q.request, q.usage)) for q in inputs]
    return meta, np.concatenate(amounts)


def _same_key(kept: DivisionKey, key: DivisionKey) -> bool:
    return kept[0] == key[0] and kept[1].shape == key[1].shape and bool(np.array_equal(kept[1], key[1]))
