"""`Retries`: the objects whose write the API server refused, each due again after a backoff.

A controller that writes an object only when it changes would otherwise leave it stale after one refused write
(a 429 past its retries, a 500, a conflict) until something else changes it. It marks the key `failed`, asks
for the `due` keys on every pass and redoes them, and marks `succeeded` (or `forget`s a key whose object went).
Delays per key: 1 s, 2 s, 4 s … 60 s, so a lasting refusal (RBAC) costs one request a minute per object.
"""

from __future__ import annotations

import time
from collections.abc import Callable

INITIAL = 1.0
MAXIMUM = 60.0


class Retries:
    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._at: dict[str, float] = {}
        self._failures: dict[str, int] = {}

    def failed(self, key: str) -> float:
        """Note a refused write; return the delay before the key is due again."""
        count = self._failures.get(key, 0)
        delay = min(INITIAL * 2.0 ** min(count, 30), MAXIMUM)
        self._failures[key] = count + 1
        self._at[key] = self._now() + delay
        return delay

    def succeeded(self, key: str) -> None:
        self.forget(key)

    def forget(self, key: str) -> None:
        self._at.pop(key, None)
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        """The refusals counted for the key since it last succeeded (or was forgotten)."""
        return self._failures.get(key, 0)

    def due(self) -> set[str]:
        """The keys whose delay has passed (they stay until they succeed, fail again or are forgotten)."""
        now = self._now()
        return {key for key, at in self._at.items() if at <= now}

    def keys(self) -> set[str]:
        """Every key with a delay, due or not."""
        return set(self._at)

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __len__(self) -> int:
        return len(self._at)
