"""Suite-wide: the memory store runs in its checking mode, and no test may leave a stored object that a reader
changed (the embedded components read the store's own objects, shared, not copies: see store/shared.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kai_scheduler.store import memory

os.environ[memory.CHECK_SHARED_READS_ENV] = "1"  # before any store is made; child processes inherit it


@pytest.fixture(autouse=True)
def _no_reader_changed_a_stored_object() -> Iterator[None]:
    yield
    stores = list(memory.CHECKED_STORES)
    memory.CHECKED_STORES.clear()
    changed = [line for store in stores for line in store.changed_by_readers()]
    assert not changed, "\n".join(changed)
