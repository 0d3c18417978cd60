"""What the proportion plugin's session opening made, kept for the next opening with what it was made from.

An opening is a pure function of the queue tree, each leaf's sums (the snapshot's `queue_charges`), the cluster
total and `kValue`; with thousands of queues it costs most of a cycle in which nothing changed. A snapshot
carried from the last cycle hands over the same QueueInfo and QueueCharge objects for what did not change, so
comparing identities tells whether the last opening still holds; a copy of it then serves (a session changes its
shares and states in place). When only some queues' sums are new objects, the last opening is brought up to date
queue by queue (`update`): those leaves and their ancestors are summed again and the division is made again only
for the sibling sets they moved (`division.redivide`), so the cost follows the queues that changed, not all of them.
Openings with time-based usage or self-charging DRA claims are never kept.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from kai_scheduler.cluster import queue_charge
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import Vector
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins.proportion import division
from kai_scheduler.plugins.proportion.division import allocatable_share
from kai_scheduler.plugins.proportion.queue_order import QueueState

MEMO_KEY = "proportion/opening"


@dataclass(frozen=True, slots=True)
class Opening:
    """The shares and states right after an opening, and its inputs (identities, in the snapshot's order)."""

    names: tuple[str, ...]
    queues: tuple[QueueInfo, ...]
    charged: tuple[str, ...]
    charges: tuple[object, ...]
    total: Vector
    k_value: float
    shares: dict[str, QueueShare]
    states: dict[str, QueueState]
    inputs: dict[str, division.ShareInput]  # what the division read of each queue
    leaves: dict[str, tuple[str, ...]]  # each queue with children: the leaves below it, in name order

    def changed(self, snapshot: Snapshot, total: Vector, k_value: float) -> set[str] | None:
        """The names whose sums are other objects than this opening's (none: it still holds as it is), or None when
        more than sums differ: the queues (compared by identity), the total or `kValue`."""
        if not (
            k_value == self.k_value
            and tuple(snapshot.queues) == self.names
            and all(map(operator.is_, snapshot.queues.values(), self.queues))
            and bool(np.array_equal(total, self.total))
        ):
            return None
        last = dict(zip(self.charged, self.charges, strict=True))
        now = snapshot.queue_charges
        changed = {name for name, sums in now.items() if last.get(name) is not sums}
        changed.update(name for name in last if name not in now)
        return changed


def keepable(snapshot: Snapshot, usage_by_queue: Mapping[str, Vector]) -> bool:
    """Whether an opening on this snapshot may be kept or reused: no usage, no charging claims."""
    return not usage_by_queue and not snapshot.queue_usage and not snapshot.dra_charges()


def kept(snapshot: Snapshot) -> Opening | None:
    found = snapshot.plugin_memo.get(MEMO_KEY)
    return found if isinstance(found, Opening) else None


def keep(
    snapshot: Snapshot,
    total: Vector,
    k_value: float,
    shares: dict[str, QueueShare],
    states: dict[str, QueueState],
    inputs: Iterable[division.ShareInput],
) -> None:
    charges = snapshot.queue_charges
    snapshot.plugin_memo[MEMO_KEY] = Opening(
        names=tuple(snapshot.queues),
        queues=tuple(snapshot.queues.values()),
        charged=tuple(charges),
        charges=tuple(charges.values()),
        total=total.copy(),
        k_value=k_value,
        shares=copy_shares(shares),
        states=copy_states(states),
        inputs={q.name: q for q in inputs},
        leaves=_leaves(snapshot.queues),
    )


def update(last: Opening, snapshot: Snapshot, changed: Iterable[str]) -> Opening:
    """`last` made true for `snapshot` whose queue tree, total and `kValue` are last's and whose sums differ only
    for the names in `changed` (`Opening.changed`); kept in the memo and returned.

    The same floats as an opening from nothing (`Proportion.charge_running_jobs`, `divide_fair_shares`,
    `open_queue_states` with no usage and no charging claims): a leaf's sums as it does them, an ancestor's summed
    again from zeros over its leaves in name order, the division through `division.redivide`. Only the shares and
    states of queues whose numbers moved are new objects; the others are last's (an opening's are never changed:
    sessions work on copies)."""
    queues, charges = snapshot.queues, snapshot.queue_charges
    shares, states, inputs = dict(last.shares), dict(last.states), dict(last.inputs)
    none = queue_charge.charge(())
    summed: set[str] = set()
    for name in changed:
        q = queues.get(name)
        if q is None or not q.is_leaf:
            continue  # the sums of a missing or inner queue count nowhere
        sums, share = charges.get(name, none), shares[name]
        allocated = sums.allocated.copy()
        shares[name] = _with(share, allocated, sums.non_preemptible.copy(), allocated + sums.pending, share.fair_share)
        summed.add(name)
        name = q.parent
        while name:
            summed.add(name)
            name = queues[name].parent
    for name in summed:
        if not queues[name].is_leaf:
            shares[name] = _summed(shares[name], [shares[leaf] for leaf in last.leaves[name]])
    requested = {name for name in summed if not _same(shares[name].request, last.shares[name].request)}
    for name in requested:
        inputs[name] = dataclasses.replace(inputs[name], request=shares[name].request)
    divided = division.redivide(
        last.total, inputs.values(), last.k_value, {n: s.fair_share for n, s in last.shares.items()}, requested
    )
    total = last.total.tolist()
    for name, fair_share in divided.items():
        moved = fair_share is not last.shares[name].fair_share
        if moved:
            s = shares[name]
            shares[name] = _with(s, s.allocated, s.allocated_non_preemptible, s.request, fair_share)
        if moved or name in summed:
            states[name] = state_of(queues[name], shares[name], total)
    made = dataclasses.replace(
        last,
        charged=tuple(charges),
        charges=tuple(charges.values()),
        shares=shares,
        states=states,
        inputs=inputs,
    )
    snapshot.plugin_memo[MEMO_KEY] = made
    return made


def state_of(q: QueueInfo, share: QueueShare, total: list[float]) -> QueueState:
    """The plain-float mirror of a queue's share that the queue order reads: `QueueState.of`'s, its conversions
    mapped rather than generated (an opening makes one per queue whose numbers moved, thousands a cycle)."""
    deserved, fair_share = tuple(map(float, share.deserved.tolist())), tuple(map(float, share.fair_share.tolist()))
    limit, totals = map(float, share.limit.tolist()), map(float, total)
    allocatable = tuple(map(allocatable_share, deserved, fair_share, limit, totals))
    allocated = list(map(float, share.allocated.tolist()))
    return QueueState(q.name, q.priority, q.creation, deserved, fair_share, allocatable, allocated)


def _summed(share: QueueShare, leaves: Iterable[QueueShare]) -> QueueShare:
    allocated, non_preemptible, request = (np.zeros(len(share.allocated)) for _ in range(3))
    for leaf in leaves:
        allocated += leaf.allocated
        non_preemptible += leaf.allocated_non_preemptible
        request += leaf.request
    return _with(share, allocated, non_preemptible, request, share.fair_share)


def _with(
    share: QueueShare, allocated: Vector, non_preemptible: Vector, request: Vector, fair_share: Vector
) -> QueueShare:
    """`share` with these vectors: `dataclasses.replace` costs several times a construction, and an update of
    thousands of queues makes one for each queue whose numbers moved."""
    return QueueShare(
        name=share.name,
        deserved=share.deserved,
        limit=share.limit,
        over_quota_weight=share.over_quota_weight,
        allocated=allocated,
        allocated_non_preemptible=non_preemptible,
        request=request,
        fair_share=fair_share,
        usage=share.usage,
    )


def _same(a: Vector, b: Vector) -> bool:
    return a.tobytes() == b.tobytes()


def _leaves(queues: Mapping[str, QueueInfo]) -> dict[str, tuple[str, ...]]:
    below: dict[str, list[str]] = {}
    for name in sorted(queues):
        if queues[name].is_leaf:
            parent = queues[name].parent
            while parent:
                below.setdefault(parent, []).append(name)
                parent = queues[parent].parent
    return {name: tuple(leaves) for name, leaves in below.items()}


def copy_shares(shares: Mapping[str, QueueShare]) -> dict[str, QueueShare]:
    """New shares; a session changes only their allocations (`Proportion._account`, `charge_claim`), so those are
    copied and the vectors the opening set and nothing changes after it are shared."""
    return {
        name: QueueShare(
            name=s.name,
            deserved=s.deserved,
            limit=s.limit,
            over_quota_weight=s.over_quota_weight,
            allocated=s.allocated.copy(),
            allocated_non_preemptible=s.allocated_non_preemptible.copy(),
            request=s.request,
            fair_share=s.fair_share,
            usage=s.usage,
        )
        for name, s in shares.items()
    }


def copy_states(states: Mapping[str, QueueState]) -> dict[str, QueueState]:
    return {
        name: QueueState(s.name, s.priority, s.creation, s.deserved, s.fair_share, s.allocatable, list(s.allocated))
        for name, s in states.items()
    }
