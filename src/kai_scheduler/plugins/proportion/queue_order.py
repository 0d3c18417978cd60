"""Queue order: which queue's best job is tried next (BEHAVIOR.md §3.4; KAI
`plugins/proportion/queue_order/queue_order.go`).

A pure comparison over two `QueueState`s and the requests of the two candidate jobs; the first rule that tells
the queues apart decides:

1. a queue not over its fair share (over = allocated > fair share in *every* resource) first;
2. a starved queue first (allocated + job request ≤ deserved in every resource; -1 = unlimited);
3. higher queue priority first;
4. a queue that would hold > 0 of a resource whose allocatable share is 0 last;
5. smaller dominant resource share with the job (`max_r held_r / allocatable_r`, `held_r x 1000` when the
   allocatable share is 0);
6. smaller dominant resource share without the job;
7. Pareto-smaller allocatable share first (≤ in every resource, < in one);
8. older queue first, then the smaller name (so the answer never depends on input order).

Victim mode (reclaim) reverses every answer and judges each queue as it would be once the victims already
chosen from it are gone.

Rules 1-6 each read one queue only, so they fold into a per-queue `Rank` tuple compared lexicographically:
a caller may compute a queue's rank once per (allocation, best job) and compare ranks many times
(`compare_ranked`); only rule 7 is pairwise. Vectors are plain floats on the queue axis (cpu, memory, gpu):
on three elements Python floats beat numpy several times over (a numpy dominant share alone costs ~10 us).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from kai_scheduler.plugins.proportion.division import UNLIMITED, allocatable_share

Triple = Sequence[float]
_Ordered = TypeVar("_Ordered", float, str)
# (over fair share, not starved, -priority, holds unallocatable, DRF with job, DRF without): smaller first.
Rank = tuple[bool, bool, int, bool, float, float]
ZERO_ALLOCATABLE_PENALTY = 1000.0


@dataclass(slots=True, eq=False)
class QueueState:
    """What the comparison reads of one queue; only `allocated` changes during a session.

    `allocatable` is derived once from deserved, fair share, limit and the cluster total
    (`division.allocatable_share`)."""

    name: str
    priority: int
    creation: float
    deserved: tuple[float, ...]
    fair_share: tuple[float, ...]
    allocatable: tuple[float, ...]
    allocated: list[float]

    @classmethod
    def of(
        cls,
        *,
        name: str,
        priority: int,
        creation: float,
        deserved: Triple,
        fair_share: Triple,
        limit: Triple,
        total: Triple,
        allocated: Triple,
    ) -> QueueState:
        allocatable = tuple(
            allocatable_share(float(d), float(f), float(lim), float(t))
            for d, f, lim, t in zip(deserved, fair_share, limit, total, strict=True)
        )
        return cls(
            name,
            priority,
            creation,
            tuple(float(x) for x in deserved),
            tuple(float(x) for x in fair_share),
            allocatable,
            [float(x) for x in allocated],
        )


def compare(
    left: QueueState,
    right: QueueState,
    left_request: Triple | None,
    right_request: Triple | None,
    *,
    victim: bool = False,
    left_victims: Triple | None = None,
    right_victims: Triple | None = None,
) -> int:
    """Negative if `left`'s job goes first, positive if `right`'s, by rules 1-8 of the module docstring.

    A missing request counts as nothing. With `victim`, each queue's allocation is first reduced by its
    `*_victims` (resources of victims already taken from it) and the result, tie-breaks included, is
    reversed; a request given in victim mode is still added (reclaim passes None: a running victim's
    resources are already in `allocated`)."""
    result = compare_ranked(
        left,
        rank(left, left_request, left_victims if victim else None),
        right,
        rank(right, right_request, right_victims if victim else None),
    )
    return -result if victim else result


def rank(state: QueueState, request: Triple | None, victims: Triple | None = None) -> Rank:
    """Rules 1-6 for one queue holding `allocated - victims` and about to take `request`.

    One pass over the resources with the arithmetic of the rules' helpers below (`is_over_fair_share`,
    `is_starved`, `holds_unallocatable`, `dominant_share`), which define them: a victim search ranks queues
    tens of thousands of times, and a call per rule was most of a rank."""
    held = _minus(state.allocated, victims)
    with_job = _plus(held, request)
    over, starved, unallocatable = True, True, False
    share_with, share_without = 0.0, 0.0
    for h, w, f, d, a in zip(held, with_job, state.fair_share, state.deserved, state.allocatable, strict=True):
        if h <= f:
            over = False
        if w > d and d != UNLIMITED:
            starved = False
        if w > 0 and a == 0:
            unallocatable = True
        share = w / a if a > 0 else w * ZERO_ALLOCATABLE_PENALTY
        if share > share_with:
            share_with = share
        share = h / a if a > 0 else h * ZERO_ALLOCATABLE_PENALTY
        if share > share_without:
            share_without = share
    return (over, not starved, -state.priority, unallocatable, share_with, share_without)


def compare_ranked(left: QueueState, left_rank: Rank, right: QueueState, right_rank: Rank) -> int:
    """Rules 1-6 by rank, then 7 (Pareto allocatable share) and 8 (age, name); -1, 0 or 1."""
    if left_rank != right_rank:
        return -1 if left_rank < right_rank else 1
    return compare_unranked(left, right)


def compare_unranked(left: QueueState, right: QueueState) -> int:
    """Rules 7 and 8 alone: they read what does not change in a session (allocatable share, age, name), so a
    caller may keep the answer per pair of queues."""
    return (
        _pareto(left.allocatable, right.allocatable)
        or _cmp(left.creation, right.creation)
        or _cmp(left.name, right.name)
    )


# The helpers below loop instead of all()/any() over generators: about 4x faster on three elements, and the
# queue order is the hottest comparison of a cycle. Vectors are the same length by construction.


def dominant_share(held: Triple, allocatable: Triple) -> float:
    """`max_r held_r / allocatable_r`; a resource with no allocatable share weighs `held_r x 1000`."""
    worst = 0.0
    for h, a in zip(held, allocatable, strict=True):
        share = h / a if a > 0 else h * ZERO_ALLOCATABLE_PENALTY
        if share > worst:
            worst = share
    return worst


def is_over_fair_share(allocated: Triple, fair_share: Triple) -> bool:
    """Over = above the fair share in every resource (rule 1)."""
    for a, f in zip(allocated, fair_share, strict=True):  # noqa: SIM110
        if a <= f:
            return False
    return True


def is_starved(held: Triple, deserved: Triple) -> bool:
    """Within the deserved quota in every resource (rule 2); -1 deserved is never exceeded."""
    for h, d in zip(held, deserved, strict=True):  # noqa: SIM110
        if h > d and d != UNLIMITED:
            return False
    return True


def holds_unallocatable(held: Triple, allocatable: Triple) -> bool:
    """Holds some of a resource it has no allocatable share of (rule 4)."""
    for h, a in zip(held, allocatable, strict=True):  # noqa: SIM110
        if h > 0 and a == 0:
            return True
    return False


def _pareto(la: Triple, ra: Triple) -> int:
    """-1 if `la` <= `ra` everywhere and < somewhere, +1 for the mirror case, else 0."""
    smaller = larger = False
    for x, y in zip(la, ra, strict=True):
        if x < y:
            smaller = True
        elif x > y:
            larger = True
    return 0 if smaller == larger else (-1 if smaller else 1)


def _cmp(left: _Ordered, right: _Ordered) -> int:
    return -1 if left < right else (1 if left > right else 0)


def _plus(held: Triple, extra: Triple | None) -> Triple:
    if extra is None:
        return held
    return [h + e for h, e in zip(held, extra, strict=True)]


def _minus(held: Triple, extra: Triple | None) -> Triple:
    if extra is None:
        return held
    return [h - e for h, e in zip(held, extra, strict=True)]
