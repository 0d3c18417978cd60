"""Where the API store reads time and waits: `RealTiming` in a process, a fake that records and advances in tests."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Timing(Protocol):
    """Where the transport reads time and waits; tests pass a fake that records and advances."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> None:
        """Wait `seconds`, or less if `interrupt` is set meanwhile."""
        ...


class RealTiming:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> None:
        if interrupt is not None:
            interrupt.wait(seconds)
        elif seconds > 0:
            time.sleep(seconds)
