"""The simulator's core: a virtual clock and a heap of timed events (SimPy's `Environment`, reduced).

Time is virtual seconds since the start of the replay; the `clock` (a `ManualClock` the components read)
shows `start + now`. Events at one instant run in a fixed order, so a replay is reproducible: by `Kind`
(what the cluster does before what the scheduler sees: a job that ends at t frees its GPUs for the cycle at
t), then in the order they were scheduled. The heap holds `(time, kind, seq, event)`; `seq` is a counter,
so two events are never compared.

Nothing here knows about pods or jobs: `replay` gives the events their meaning.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from dataclasses import dataclass

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cluster import tolerance


class Kind(enum.IntEnum):
    """What an event is; the value is its rank among events of the same instant (lower first)."""

    FINISH = 0  # a job's run time is over: its pods succeed and go
    TERMINATE = 1  # an evicted pod's grace period is over: the kubelet removes it
    ARRIVAL = 2  # a job is submitted: its owner creates the PodGroup and pods
    WAKE = 3  # a time-based rule may now allow something (min runtime, staleness grace)
    CYCLE = 4  # the scheduler runs one cycle
    AUTOSCALE = 5  # the autoscaler model may add or remove nodes (sim/autoscaler.py)


@dataclass(frozen=True, slots=True)
class Event:
    time: float  # virtual seconds since the start
    kind: Kind
    key: str = ""  # a job or pod key ("namespace/name"), per kind
    generation: int = 0  # FINISH: the run of the job it ends (an evicted job's old run never finishes)


class Engine:
    """The event heap and the virtual clock; `pop` moves the clock to the event it returns.

    States of an event: scheduled (in the heap), then popped (the clock shows its time). Scheduling an event
    in the past is a bug and raises; the clock never runs backwards."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.clock = ManualClock(start)
        self._now = 0.0
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = itertools.count()

    @property
    def now(self) -> float:
        """Virtual seconds since the start."""
        return self._now

    def at(self, time: float, kind: Kind, key: str = "", generation: int = 0) -> Event:
        """Schedule an event at virtual `time` (not before now)."""
        if time < self._now or math.isnan(time):
            raise ValueError(f"event {kind.name} at {time:g}s is before now ({self._now:g}s)")
        event = Event(time, kind, key, generation)
        heapq.heappush(self._heap, (time, int(kind), next(self._seq), event))
        return event

    def after(self, delay: float, kind: Kind, key: str = "", generation: int = 0) -> Event:
        return self.at(self._now + delay, kind, key, generation)

    def peek(self) -> Event | None:
        return self._heap[0][3] if self._heap else None

    def pop(self) -> Event:
        """The next event; the clock moves to its time."""
        _, _, _, event = heapq.heappop(self._heap)
        self.advance_to(event.time)
        return event

    def advance_to(self, time: float) -> None:
        """Move the clock forward to virtual `time` (used to stop at `--until`)."""
        if time > self._now:
            self._now = time
            self.clock.set(self.start + time)

    def __len__(self) -> int:
        return len(self._heap)


def next_tick(now: float, period: float, last: float | None) -> float:
    """The first cycle instant at or after `now` on the grid of `period`, and after the last cycle.

    Cycles run on the grid 0, period, 2·period… as a scheduler that wakes every period would; a cycle
    asked for at the instant of the previous one runs one period later."""
    tick = math.ceil(now / period - tolerance.ROUNDING) * period
    if last is not None and tick <= last + tolerance.ROUNDING:
        tick = last + period
    return tick
