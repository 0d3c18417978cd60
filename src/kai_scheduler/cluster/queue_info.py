"""QueueInfo: one queue of the hierarchy with its quota vectors on the queue axis (cpu, memory, gpu).

Units are converted once here: CPU millicores, memory bytes (the CRD's megabytes × 10^6), GPU devices.
`-1` (unlimited) is kept as -1 in `deserved` and `limit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kai_scheduler.api.queue import UNLIMITED, Queue
from kai_scheduler.cluster.resources import Vector

_MB = 1_000_000.0


@dataclass(slots=True, kw_only=True, eq=False)
class QueueInfo:
    name: str
    uid: str
    queue: Queue
    parent: str
    priority: int
    creation: float
    deserved: Vector
    limit: Vector
    over_quota_weight: Vector
    children: list[str] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def display_name(self) -> str:
        return self.queue.display_name or self.name

    @classmethod
    def from_queue(cls, queue: Queue) -> QueueInfo:
        def vec(attr: str) -> Vector:
            values = []
            for key, scale in (("cpu", 1.0), ("memory", _MB), ("gpu", 1.0)):
                value = getattr(queue.resources[key], attr)
                values.append(value if value == UNLIMITED or attr == "over_quota_weight" else value * scale)
            return np.array(values)

        return cls(
            name=queue.name,
            uid=queue.meta.uid or queue.name,
            queue=queue,
            parent=queue.parent_queue,
            priority=queue.priority,
            creation=queue.meta.creation_timestamp or 0.0,
            deserved=vec("quota"),
            limit=vec("limit"),
            over_quota_weight=vec("over_quota_weight"),
        )
