"""Fixtures for the `ClusterStore` contract suite: each test taking `store` runs once per implementation.

Add an implementation to `STORES` (a builder from a clock) and the whole contract runs against it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kai_scheduler.api.clock import Clock, ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.memory import MemoryStore

START = parse_time("2026-01-01T00:00:00Z")

STORES: dict[str, Callable[[Clock], ClusterStore]] = {
    "memory": MemoryStore,
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, clock: ManualClock) -> ClusterStore:
    return STORES[request.param](clock)
