"""Pausing Python's cyclic garbage collector around bulk work on JSON trees (LIST decoding, cache fills).

Decoding a LIST of 90,000 pods makes millions of dicts and lists, and parsing them into typed objects makes
as many more that all stay alive; each allocation burst triggers collections that walk every young
container, which made decoding four to five times slower and the cache fill a third slower (measured in
bench/bench_kube_list.py). JSON trees have no cycles, so reference counting frees them anyway.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Nested or concurrent uses leave the collector as the outermost found it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_startup() -> None:
    """Move every object made so far (modules, classes, the Kubernetes client's models: about 80,000 in a component
    process) to the collector's permanent generation, as a long-running process does once it has started: its
    full collections then walk only what the process made since, not the import-time heap each time (a full
    collection of that heap alone took 15-50 ms on a 2-core box). The young generations are collected first, so
    that little start-up garbage is kept for good; objects made later are collected as before."""
    gc.collect(1)
    gc.freeze()
