"""`Writers`: the threads that send one step's writes for many objects at once (against an API server every write
is one round trip), as controller-runtime's `MaxConcurrentReconciles` workers do.

`map(write, items)` calls `write` for every item, on the threads when there are several of both, else in order on
the caller's thread, and returns the results in the items' order once every write has ended: when one raises,
the exception is raised only after the others ended too, so nothing of the step is still being written when the
caller handles it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Writers:
    def __init__(self, count: int, name: str) -> None:
        """`count` threads at most, named `name`-N; 1: every write on the caller's thread."""
        if count < 1:
            raise ValueError(f"writers: must be at least 1, got {count}")
        self.count = count
        self._pool = ThreadPoolExecutor(count, thread_name_prefix=name) if count > 1 else None

    def map(self, write: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if self._pool is None or len(items) < 2:
            return [write(item) for item in items]
        futures = [self._pool.submit(write, item) for item in items]
        wait(futures)
        return [future.result() for future in futures]
