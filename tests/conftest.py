"""Suite-wide: the memory store runs in its checking mode, and no test may leave a stored object that a reader
changed (the embedded components read the store's own objects, shared, not copies: see store/shared.py); the
garbage collector is left as each test found it."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

from kai_scheduler.store import collector, memory

os.environ[memory.CHECK_SHARED_READS_ENV] = "1"  # before any store is made; child processes inherit it


@pytest.fixture(autouse=True)
def _no_reader_changed_a_stored_object() -> Iterator[None]:
    yield
    stores = list(memory.CHECKED_STORES)
    memory.CHECKED_STORES.clear()
    changed = [line for store in stores for line in store.changed_by_readers()]
    assert not changed, "\n".join(changed)


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    """A component's command run in a test tunes the process's collector as a service's (`tune_for_service`), after
    which every informer's first list freezes what exists: undone, so that the next test's process is a test's."""
    threshold, service = gc.get_threshold(), collector._service
    yield
    gc.set_threshold(*threshold)
    collector._service = service
    gc.unfreeze()
