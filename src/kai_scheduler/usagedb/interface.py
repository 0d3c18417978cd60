"""What every usage source offers the scheduler: each queue's normalised usage at an instant (§5.5).

Usage of queue q in resource r = its (decayed) allocation summed over the window divided by the (decayed)
cluster capacity summed over the same window: 24 GPU-hours in a 10-GPU cluster over 10 h is 0.24. Vectors are
on the queue axis (cpu, memory, gpu).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

UsageVector = tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class QueueUsage:
    """Normalised usage per queue name, and when the data was fetched (None: never)."""

    by_queue: Mapping[str, UsageVector] = field(default_factory=dict)
    fetched_at: float | None = None
    query_seconds: float | None = None  # how long the fetch's queries took (a usage database's; None: none asked)


class UsageSource(Protocol):
    def usage(self, now: float) -> QueueUsage:
        """The latest usage known at `now`; never raises (a failing source answers what it last knew)."""
        ...

    def observe(self, now: float, allocated: Mapping[str, UsageVector], capacity: UsageVector) -> None:
        """What the scheduler's cycle left allocated; only the embedded recorder keeps it."""
        ...


class NoUsage:
    """KAI's `fake` client: every queue's usage is 0."""

    def usage(self, now: float) -> QueueUsage:
        return QueueUsage({}, now)

    def observe(self, now: float, allocated: Mapping[str, UsageVector], capacity: UsageVector) -> None:
        pass
