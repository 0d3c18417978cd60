"""What the proportion plugin's session opening made, kept for the next opening with what it was made from.

An opening is a pure function of the queue tree, each leaf's sums (the snapshot's `queue_charges`), the cluster
total and `kValue`; with thousands of queues it costs most of a cycle in which nothing changed. A snapshot
carried from the last cycle hands over the same QueueInfo and QueueCharge objects for what did not change, so
comparing identities tells whether the last opening still holds; a copy of it then serves (a session changes its
shares and states in place). Openings with time-based usage or self-charging DRA claims are never kept.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.cluster.resources import Vector
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.shares import QueueShare
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

    def matches(self, snapshot: Snapshot, total: Vector, k_value: float) -> bool:
        charges = snapshot.queue_charges
        return (
            k_value == self.k_value
            and tuple(snapshot.queues) == self.names
            and all(map(operator.is_, snapshot.queues.values(), self.queues))
            and tuple(charges) == self.charged
            and all(map(operator.is_, charges.values(), self.charges))
            and bool(np.array_equal(total, self.total))
        )


def keepable(snapshot: Snapshot, usage_by_queue: Mapping[str, Vector]) -> bool:
    """Whether an opening on this snapshot may be kept or reused: no usage, no charging claims."""
    return not usage_by_queue and not snapshot.queue_usage and not snapshot.dra_charges()


def kept(snapshot: Snapshot, total: Vector, k_value: float) -> Opening | None:
    found = snapshot.plugin_memo.get(MEMO_KEY)
    return found if isinstance(found, Opening) and found.matches(snapshot, total, k_value) else None


def keep(
    snapshot: Snapshot, total: Vector, k_value: float, shares: dict[str, QueueShare], states: dict[str, QueueState]
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
    )


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
