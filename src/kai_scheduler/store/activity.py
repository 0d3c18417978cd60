"""`Activity`: a count of the watch events a store has received, per resource, that a loop can wait on.

A component that runs every period can instead run soon after something it reads changed: it notes `mark()`
before its step and afterwards waits (`wait_for`) until one of its resources has moved past that mark or the
period is over. The store's watch readers call `note(resource)` for the object events they buffer, once per batch
of events that arrived together.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable


class Activity:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sequence = 0
        self._last: dict[str, int] = {}  # resource → sequence number of its latest event

    def note(self, resource: str) -> None:
        with self._cond:
            self._sequence += 1
            self._last[resource] = self._sequence
            self._cond.notify_all()

    def mark(self) -> int:
        """The current position: events after it are newer than everything seen so far."""
        with self._cond:
            return self._sequence

    def changed(self, resources: Iterable[str], since: int) -> bool:
        with self._cond:
            return any(self._last.get(r, 0) > since for r in resources)

    def wait_for(self, resources: Iterable[str], since: int, timeout: float) -> bool:
        """Wait up to `timeout` seconds until one of `resources` has an event after `since`; True if one has."""
        wanted = tuple(resources)
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(self._last.get(r, 0) > since for r in wanted):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wake(self) -> None:
        """Wake every waiter to look again (a loop told to stop)."""
        with self._cond:
            self._cond.notify_all()
