"""The embedded usage history (KAI's `fake-with-history` client): what `kai schedule` and the simulator use.

After every cycle the scheduler reports each queue's allocation and the cluster capacity (`observe`); a value
holds until the next report. `usage(now)` integrates those step functions over the window with the decay
weight (`windows`) and divides each queue's decayed allocation by the decayed capacity, as the Prometheus
queries do. Within one query-resolution step the latest report replaces the earlier ones (Prometheus would
not see them either); reports older than the window are dropped, except the last one, which still holds into it.
Usage is recomputed at most once per fetch interval, like KAI's background fetcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kai_scheduler.usagedb import windows
from kai_scheduler.usagedb.interface import QueueUsage, UsageVector
from kai_scheduler.usagedb.params import UsageParams


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    allocated: Mapping[str, UsageVector]
    capacity: UsageVector


class Recorder:
    def __init__(self, params: UsageParams | None = None) -> None:
        self.params = params or UsageParams()
        self.samples: list[Sample] = []
        self._cached: QueueUsage | None = None

    def observe(self, now: float, allocated: Mapping[str, UsageVector], capacity: UsageVector) -> None:
        """Record the allocation the cycle at `now` left; within one resolution step the latest report wins."""
        resolution = self.params.extra.query_resolution
        last = self.samples[-1] if self.samples else None
        if last is not None and resolution > 0 and now // resolution == last.at // resolution:
            self.samples[-1] = Sample(last.at, dict(allocated), capacity)
        else:
            self.samples.append(Sample(now, dict(allocated), capacity))
        self._prune(now)

    def usage(self, now: float) -> QueueUsage:
        cached = self._cached
        if (
            cached is not None
            and cached.fetched_at is not None
            and 0 <= now - cached.fetched_at < self.params.fetch_interval
        ):
            return cached
        self._cached = QueueUsage(self.compute(now), now)
        return self._cached

    def compute(self, now: float) -> dict[str, UsageVector]:
        """Normalised usage per queue at `now` over the current window."""
        start = windows.window_start(self.params, now)
        capacity = [0.0, 0.0, 0.0]
        used: dict[str, list[float]] = {}
        for i, sample in enumerate(self.samples):
            end = self.samples[i + 1].at if i + 1 < len(self.samples) else now
            weight = windows.decayed_span(self.params, now, max(sample.at, start), min(end, now))
            if weight <= 0:
                continue
            for r in range(3):
                capacity[r] += sample.capacity[r] * weight
            for queue, amounts in sample.allocated.items():
                total = used.setdefault(queue, [0.0, 0.0, 0.0])
                for r in range(3):
                    total[r] += amounts[r] * weight
        return {
            queue: (_ratio(v[0], capacity[0]), _ratio(v[1], capacity[1]), _ratio(v[2], capacity[2]))
            for queue, v in sorted(used.items())
        }

    def _prune(self, now: float) -> None:
        start = windows.window_start(self.params, now)
        keep = 0
        while keep + 1 < len(self.samples) and self.samples[keep + 1].at <= start:
            keep += 1
        if keep:
            del self.samples[:keep]


def _ratio(amount: float, capacity: float) -> float:
    return amount / capacity if capacity > 0 else 0.0
