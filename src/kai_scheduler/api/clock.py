"""Time for everything that schedules: a `Clock` is passed in, never read from the wall directly.

`SystemClock` is for a real cluster; `ManualClock` is for `kai schedule`, the simulator and tests.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """POSIX seconds."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to (virtual time)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self._now += seconds

    def set(self, instant: float) -> None:
        if instant < self._now:
            raise ValueError("a clock does not run backwards")
        self._now = instant
