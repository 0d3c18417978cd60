"""Progress on standard error for the steps of a command that take a while (loading, each cycle).

A step that ends within `NOTICE_AFTER` seconds prints nothing; a longer one says what it is doing once it
passes that mark and how long it took when it ends, so a large run is never silent and a small one stays
quiet. Standard output is left to the command's result.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

NOTICE_AFTER = 1.0


@contextmanager
def step(what: str, *, enabled: bool = True, after: float | None = None, out: TextIO | None = None) -> Iterator[None]:
    """Run the block; when it lasts over `after` seconds (default NOTICE_AFTER), print `kai: <what> …` when
    it passes that mark, then `kai: <what>: 3.2 s`."""
    stream = out or sys.stderr
    after = NOTICE_AFTER if after is None else after
    started = time.perf_counter()
    announced = threading.Event()

    def announce() -> None:
        announced.set()
        _write(stream, f"kai: {what} …")

    timer = threading.Timer(after, announce) if enabled and after > 0 else None
    if enabled and after <= 0:
        announce()
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
            timer.join()  # an announcement under way is printed before the closing line
        if announced.is_set():
            _write(stream, f"kai: {what}: {time.perf_counter() - started:.1f} s")


def _write(stream: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr closed: progress is not worth failing for
        print(line, file=stream, flush=True)
