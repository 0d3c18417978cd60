"""QueueShare: what the proportion plugin knows of one queue, on the queue axis (cpu, memory, gpu).

Lives in the framework so that actions, reports and other plugins can read fair shares through
`points.QUEUE_SHARE` without knowing the proportion plugin.
"""

from __future__ import annotations

from dataclasses import dataclass

from kai_scheduler.cluster.resources import Vector


@dataclass(slots=True, eq=False)
class QueueShare:
    name: str
    deserved: Vector  # -1 = unlimited
    limit: Vector  # -1 = no limit
    over_quota_weight: Vector
    allocated: Vector
    allocated_non_preemptible: Vector
    request: Vector
    fair_share: Vector
    usage: Vector  # time-based fair share (0 when off)
