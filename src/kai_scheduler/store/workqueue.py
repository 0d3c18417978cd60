"""`WorkQueue`: the keys a controller has to reconcile (client-go's rate-limited work queue), for controllers that
work in passes and read each key's object from an informer.

- `add(key)`: the key is due; added again before it is taken it is still one item.
- `take()`: every due key (added, or its back-off over), in key order, each then being processed. A key being
  processed is not handed out again until it is `done`, `retry`d or `forget`-ten, whoever adds it meanwhile (one
  worker per key at a time); added while processed, it is due again once done.
- `retry(key)`: processed and refused: due again after a back-off that doubles with each refusal of the key (1 s,
  2 s … 60 s, as `store.retries`: controller-runtime's default per-item rate limiter, as KAI's binder sets it).
  `done(key)`: processed; its back-off starts over. `again(key)`: processed, not finished (a step waits for
  something): due at the next `take`, its count of refusals kept. `forget(key)`: its object went: nothing of it is
  kept. `requeues(key)`: the refusals counted since it was last done (client-go's NumRequeues).
- `retry_unfinished(keys)`: those of `keys` still being processed are retried, for a pass that ended in an
  exception before finishing them (else they would never be handed out again).

Safe to use from several threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from kai_scheduler.store.retries import Retries


class WorkQueue:
    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._backoff = Retries(now)  # the keys refused: when each is due again
        self._due: set[str] = set()
        self._processing: set[str] = set()
        self._again: set[str] = set()  # added while processed: due once done

    def add(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                if key in self._processing:
                    self._again.add(key)
                else:
                    self._due.add(key)

    def take(self) -> list[str]:
        """The due keys, in key order, each now being processed."""
        with self._lock:
            taken = (self._due | self._backoff.due()) - self._processing
            self._due -= taken
            self._processing |= taken
            return sorted(taken)

    def done(self, key: str) -> None:
        with self._lock:
            self._backoff.succeeded(key)
            self._finish(key)

    def retry(self, key: str) -> float:
        """The key was refused: due again after its back-off (returned, in seconds)."""
        with self._lock:
            delay = self._backoff.failed(key)
            self._finish(key)
            return delay

    def again(self, key: str) -> None:
        with self._lock:
            self._processing.discard(key)
            self._again.discard(key)
            self._due.add(key)

    def retry_unfinished(self, keys: Iterable[str]) -> list[str]:
        """Retry those of `keys` still being processed; return them."""
        with self._lock:
            unfinished = [key for key in keys if key in self._processing]
            for key in unfinished:
                self._backoff.failed(key)
                self._finish(key)
            return unfinished

    def forget(self, key: str) -> None:
        with self._lock:
            self._backoff.forget(key)
            self._due.discard(key)
            self._again.discard(key)
            self._processing.discard(key)

    def keys(self) -> set[str]:
        """Every key held: due, being processed or backing off."""
        with self._lock:
            return self._due | self._processing | self._again | self._backoff.keys()

    def backing_off(self, key: str) -> bool:
        with self._lock:
            return key in self._backoff

    def requeues(self, key: str) -> int:
        with self._lock:
            return self._backoff.failures(key)

    def _finish(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._again:
            self._again.discard(key)
            self._due.add(key)
