"""Pausing Python's cyclic garbage collector around bulk work on JSON trees (LIST decoding, cache fills).

Decoding a LIST of 90,000 pods makes millions of dicts and lists, and parsing them into typed objects makes
as many more that all stay alive; each allocation burst triggers collections that walk every young
container, which made decoding four to five times slower and the cache fill a third slower (measured in
bench/bench_kube_list.py). JSON trees have no cycles, so reference counting frees them anyway.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Final

# A young collection once 10,000 containers were made net (Python's default: 700). A component's work is JSON
# trees and the typed objects parsed from them, nearly all freed by reference counting; with the default, a
# 1,000-pod fill of `kai run` ran 441 young, 34 middle and 3 full collections (0.71 CPU-s of the process's 10.5,
# start-up included), with this one 213, 3 and none (0.40 CPU-s; bench/README.md). Cyclic garbage waits for at
# most that many allocations more; the scheduler still collects its cycle's garbage when each cycle ends.
SERVICE_THRESHOLD: Final = 10_000


_pauses = 0  # the `paused` blocks running now, in every thread
_resume = False  # whether the collector was on when the first of them began
_pauses_lock = threading.Lock()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector is off until the last of the nested or concurrent uses ends (the components of one process
    pause it in their own threads), then as the first found it."""
    global _pauses, _resume
    with _pauses_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


_service = False  # this process is a long-running component (`tune_for_service`)


def tune_for_service() -> None:
    """The collector's thresholds of a long-running component process: young collections less often
    (`SERVICE_THRESHOLD`), the older generations' ratios as Python's defaults; and `loaded` freezes."""
    global _service
    _, middle, old = gc.get_threshold()
    gc.set_threshold(SERVICE_THRESHOLD, middle, old)
    _service = True


def loaded() -> None:
    """Start-up data is in: an informer's first list, a scheduler's cache's first sync. In a component process
    (`tune_for_service`), everything made so far goes to the collector's permanent generation, unwalked: it was
    made with the collector paused, so all of it is young, and the next young collection would walk it whole (at
    140,000 pods 1.9 s after the pods' list, 3.8 s after the scheduler's first cycle). Objects replaced later
    are freed by reference counting as before. Elsewhere (tests, `kai schedule`, the simulator) nothing
    happens."""
    if _service:
        gc.freeze()


def freeze_startup() -> None:
    """Move every object made so far (modules, classes, the Kubernetes client's models: about 80,000 in a component
    process) to the collector's permanent generation, as a long-running process does once it has started: its
    full collections then walk only what the process made since, not the import-time heap each time (a full
    collection of that heap alone took 15-50 ms on a 2-core box). The young generations are collected first, so
    that little start-up garbage is kept for good; objects made later are collected as before."""
    gc.collect(1)
    gc.freeze()
