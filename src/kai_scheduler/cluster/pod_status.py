"""Pod statuses the algorithms use (§3.2), as bit flags so groups are one mask test."""

from __future__ import annotations

import enum
from typing import Final


class PodStatus(enum.IntFlag):
    PENDING = enum.auto()
    GATED = enum.auto()
    ALLOCATED = enum.auto()
    PIPELINED = enum.auto()
    BINDING = enum.auto()
    BOUND = enum.auto()
    RUNNING = enum.auto()
    RELEASING = enum.auto()
    SUCCEEDED = enum.auto()
    FAILED = enum.auto()
    UNKNOWN = enum.auto()
    DELETED = enum.auto()
    STUCK_IN_RELEASING = enum.auto()

    @property
    def label(self) -> str:
        """The name users read in scenario files and tables ("Binding", "StuckInReleasing")."""
        return _LABELS[self]


ACTIVE_ALLOCATED = PodStatus.ALLOCATED | PodStatus.PIPELINED | PodStatus.BINDING | PodStatus.BOUND | PodStatus.RUNNING
ACTIVE_USED = ACTIVE_ALLOCATED | PodStatus.RELEASING | PodStatus.STUCK_IN_RELEASING
ALIVE = ACTIVE_ALLOCATED | PodStatus.PENDING | PodStatus.GATED
ALLOCATED = PodStatus.ALLOCATED | PodStatus.BOUND | PodStatus.BINDING | PodStatus.RUNNING
RELEASING = PodStatus.RELEASING | PodStatus.STUCK_IN_RELEASING
ON_NODE = ACTIVE_USED  # statuses whose pod holds resources on a node

_LABELS = {
    PodStatus.PENDING: "Pending",
    PodStatus.GATED: "Gated",
    PodStatus.ALLOCATED: "Allocated",
    PodStatus.PIPELINED: "Pipelined",
    PodStatus.BINDING: "Binding",
    PodStatus.BOUND: "Bound",
    PodStatus.RUNNING: "Running",
    PodStatus.RELEASING: "Releasing",
    PodStatus.SUCCEEDED: "Succeeded",
    PodStatus.FAILED: "Failed",
    PodStatus.UNKNOWN: "Unknown",
    PodStatus.DELETED: "Deleted",
    PodStatus.STUCK_IN_RELEASING: "StuckInReleasing",
}
BY_LABEL = {label: status for status, label in _LABELS.items()}

# Every status, and every group above, as its plain int: loops over every pod of a large cluster test statuses with
# int operations on these (IntFlag's own `&` builds a new flag member each time; `.value` is a property).
BITS: Final[dict[PodStatus, int]] = {
    status: int(status) for status in (*PodStatus, ACTIVE_ALLOCATED, ACTIVE_USED, ALIVE, ALLOCATED, RELEASING)
}


def within(status: PodStatus, group: PodStatus) -> bool:
    """`status & group`, on the plain ints (see `BITS`)."""
    return bool(BITS[status] & BITS[group])
