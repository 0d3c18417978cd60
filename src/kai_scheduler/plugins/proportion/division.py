"""Fair-share division: split the cluster among queues, level by level (BEHAVIOR.md §5.2).

Mirrors KAI `plugins/proportion/resource_division/resource_division.go` (`SetResourcesShare` →
`setDeservedResource` → `divideOverQuotaResource` → `divideUpToFairShare` → `divideRemainingResource`), as
pure arithmetic over plain data so that each step can be driven on tiny hand-built queues.

The total is divided among the top-level queues; each queue's resulting fair share is then divided among its
children, to any depth. Every resource of the queue axis (cpu millicores, memory bytes, gpu devices) is
divided independently. Unlike KAI, nothing depends on map iteration order: within a round every share is
computed from the amount at the start of the round, siblings are visited in name order, and the rounding
leftovers go out by (larger remainder, older creation, UID, name).
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.resources import Vector

UNLIMITED = -1.0

Amounts = Sequence[float] | Vector


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareInput:
    """One queue as the division sees it; vectors are on the queue axis, `-1` means unlimited.

    `request` is what the queue's jobs hold plus what they wait for (§5.1); `usage` is the normalised
    time-based usage (0 when time-based fair share is off)."""

    name: str
    uid: str = ""
    parent: str = ""
    priority: int = 100
    creation: float = 0.0
    deserved: Amounts
    limit: Amounts
    weight: Amounts
    request: Amounts
    usage: Amounts = (0.0, 0.0, 0.0)


@dataclass(slots=True, eq=False)
class Slot:
    """One queue's standing in one resource while its sibling set is divided; `fair_share` grows."""

    name: str
    uid: str
    priority: int
    creation: float
    deserved: float
    limit: float
    weight: float
    request: float
    usage: float = 0.0
    fair_share: float = 0.0

    @property
    def requestable(self) -> float:
        """`min(limit, request)`, or the request when the limit is unlimited (KAI `GetRequestableShare`)."""
        return self.request if self.limit == UNLIMITED else min(self.limit, self.request)

    def remaining_requested(self) -> float:
        return max(0.0, self.requestable - self.fair_share)

    def is_satisfied(self) -> bool:
        return self.request <= self.fair_share or (self.limit != UNLIMITED and self.limit <= self.fair_share)


def divide(total: Amounts, queues: Iterable[ShareInput], k_value: float = 1.0) -> dict[str, Vector]:
    """Fair share of every queue: the total split among top-level queues, then each share among children.

    `k_value` ≤ 0 counts as 0 (usage then has no effect). A queue whose parent is not among `queues`, or
    that sits in a parent cycle, is a broken invariant (the snapshot drops those) and raises ValueError."""
    return _divide(total, queues, k_value, {}, None)


def redivide(
    total: Amounts, queues: Iterable[ShareInput], k_value: float, last: Mapping[str, Vector], changed: Container[str]
) -> dict[str, Vector]:
    """`divide` again after only the inputs of the queues named in `changed` moved.

    `last` is `divide`'s answer for the same total and queue tree when every other queue's input was what it is
    now. A sibling set's division reads only its parent's share and the siblings' inputs, so a set none of whose
    members changed and whose parent's share came out bit for bit the same keeps its last shares (the same
    vectors); every other set is divided again as `divide` would. The answer equals `divide`'s."""
    return _divide(total, queues, k_value, last, changed)


def _divide(
    total: Amounts,
    queues: Iterable[ShareInput],
    k_value: float,
    last: Mapping[str, Vector],
    changed: Container[str] | None,
) -> dict[str, Vector]:
    k = max(0.0, k_value)
    by_name = {q.name: q for q in queues}
    children = _children(by_name)
    amounts = [float(x) for x in total]
    shares: dict[str, list[float] | Vector] = {}
    # (parent, its share, whether that share differs from the last division's)
    todo: list[tuple[str, list[float], bool]] = [("", amounts, True)]
    reached = 0
    while todo:
        parent, budget, moved = todo.pop()
        siblings = children.get(parent)
        if not siblings:
            continue
        reached += len(siblings)
        if changed is not None and not moved and not any(q.name in changed for q in siblings):
            for q in siblings:
                kept = shares[q.name] = last[q.name]
                todo.append((q.name, kept.tolist(), False))
            continue
        divided = [[0.0] * len(budget) for _ in siblings]
        for r, amount in enumerate(budget):
            slots = [slot(q, r) for q in siblings]
            divide_resource(amount, slots, k)
            for share, s in zip(divided, slots, strict=True):
                share[r] = s.fair_share
        for q, share in zip(siblings, divided, strict=True):
            shares[q.name] = share
            before = last.get(q.name)
            todo.append((q.name, share, before is None or before.tolist() != share))
    if reached != len(by_name):
        cycle = sorted(set(by_name) - _reachable(children))
        raise ValueError("queues in a parent cycle: " + ", ".join(cycle))
    return {name: _vector(shares[name]) for name in by_name}


def _vector(share: list[float] | Vector) -> Vector:
    return np.array(share, dtype=np.float64) if isinstance(share, list) else share


def _children(by_name: Mapping[str, ShareInput]) -> dict[str, list[ShareInput]]:
    children: dict[str, list[ShareInput]] = {}
    for name in sorted(by_name):
        q = by_name[name]
        if q.parent and q.parent not in by_name:
            raise ValueError(f"queue {name!r}: parent queue {q.parent!r} is not among the queues divided")
        children.setdefault(q.parent, []).append(q)
    return children


def _reachable(children: Mapping[str, list[ShareInput]]) -> set[str]:
    seen: set[str] = set()
    todo = [""]
    while todo:
        for q in children.get(todo.pop(), []):
            seen.add(q.name)
            todo.append(q.name)
    return seen


def slot(q: ShareInput, r: int) -> Slot:
    """The scalar view of queue `q` in resource `r`."""
    return Slot(
        q.name,
        q.uid,
        q.priority,
        q.creation,
        float(q.deserved[r]),
        float(q.limit[r]),
        float(q.weight[r]),
        float(q.request[r]),
        float(q.usage[r]),
    )


def divide_resource(amount: float, slots: Sequence[Slot], k_value: float) -> float:
    """Divide `amount` of one resource among one sibling set; return what no queue could use.

    Mutates each slot's `fair_share`. Over-committed quotas (deserved sum ≥ amount) leave no surplus."""
    remaining = set_deserved(amount, slots)
    if remaining <= 0:
        return remaining
    return divide_over_quota(remaining, slots, k_value)


def set_deserved(amount: float, slots: Sequence[Slot]) -> float:
    """Phase 1: give each queue its deserved quota (-1 = all of `amount`), capped by what it can request."""
    remaining = amount
    for s in slots:
        deserved = amount if s.deserved == UNLIMITED else s.deserved
        give = min(deserved, s.requestable)
        s.fair_share += give
        remaining -= give
    return remaining


def divide_over_quota(amount: float, slots: Sequence[Slot], k_value: float) -> float:
    """Phases 2 and 3: strict priority buckets (highest first) by weight, then the rounding leftovers.

    A higher bucket takes all it can use before a lower bucket sees anything; the leftover pass, too, serves
    the buckets from the highest priority down."""
    remaining = amount
    priorities = sorted({s.priority for s in slots}, reverse=True)
    buckets = [[s for s in slots if s.priority == p] for p in priorities]
    leftovers: list[dict[str, float]] = []
    for bucket in buckets:
        left: dict[str, float] = {}
        if remaining > 0:
            remaining = divide_up_to_fair_share(remaining, bucket, k_value, left)
        leftovers.append(left)
    for bucket, left in zip(buckets, leftovers, strict=True):
        remaining = divide_remaining(remaining, bucket, left)
    return remaining


def divide_up_to_fair_share(amount: float, slots: Sequence[Slot], k_value: float, leftovers: dict[str, float]) -> float:
    """Split `amount` among one priority bucket in weighted rounds; return what is left.

    Each round shares the amount left at its start by `P = max(0, w' + k (w' - usage))`, `w'` the queue's
    weight over the weights of queues still wanting more. A queue whose share covers its need takes exactly
    its need (and leaves the leftover pass); otherwise it takes the share rounded down to whole units and the
    fraction is recorded in `leftovers` (by name). Another round runs while some queue needed less than its
    share. Mutates the slots' `fair_share` and `leftovers`."""
    remaining = amount
    while True:
        unsatisfied = [s for s in slots if not s.is_satisfied()]
        total_weight = sum(s.weight for s in slots if s.remaining_requested() > 0)
        portions = [_portion(s, total_weight, k_value) for s in unsatisfied]
        total_portion = sum(portions)
        if total_portion <= 0:
            break
        budget = remaining
        another_round = False
        for s, portion in zip(unsatisfied, portions, strict=True):
            if s.weight <= 0:
                continue
            share = budget * portion / total_portion
            need = s.remaining_requested()
            if need <= share + tolerance.SHARE:
                give = need
                leftovers.pop(s.name, None)
            else:
                give = float(math.floor(share + tolerance.SHARE))
                if share - give > 0:
                    leftovers[s.name] = share - give
            s.fair_share += give
            remaining -= give
            another_round |= need < share
        if not another_round or remaining <= 0:
            break
    return remaining


def _portion(s: Slot, total_weight: float, k_value: float) -> float:
    """KAI's time-based priority: the normalised weight, pushed down by past usage (usage 0 ⇒ w' (1 + k))."""
    normalized = s.weight / total_weight if total_weight > 0 else 0.0
    return max(0.0, normalized + k_value * (normalized - s.usage))


def divide_remaining(amount: float, slots: Sequence[Slot], leftovers: Mapping[str, float]) -> float:
    """Phase 3 for one bucket: one unit at a time to the queues that lost a fraction to rounding.

    Order: larger remainder first; ties go to the older queue (creation), then the smaller UID, then name.
    Each queue gets at most one unit (less if less is left), so a queue may end < 1 unit above its need."""
    remaining = amount
    by_name = {s.name: s for s in slots}
    order = sorted(leftovers, key=lambda n: (-leftovers[n], by_name[n].creation, by_name[n].uid, n))
    for name in order:
        if remaining <= 0:
            break
        give = min(1.0, remaining)
        by_name[name].fair_share += give
        remaining -= give
    return remaining


def allocatable_share(deserved: float, fair_share: float, limit: float, total: float) -> float:
    """What a queue may hold in one resource before it counts as over-served (KAI `GetAllocatableShare`).

    `max(deserved, fair_share)` capped by the limit; an unlimited deserved quota means the limit; an unlimited
    result (both -1) means the cluster total."""
    if deserved == UNLIMITED:
        share = limit
    else:
        share = max(deserved, fair_share)
        if limit != UNLIMITED:
            share = min(share, limit)
    return total if share == UNLIMITED else share
