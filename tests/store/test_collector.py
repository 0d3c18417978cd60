"""The collector helpers: paused around bulk work; what exists at start-up frozen out of later collections."""

from __future__ import annotations

import gc
import weakref

import pytest

from kai_scheduler.store import collector


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_paused_restores_the_collector_as_found() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_freeze_startup_keeps_what_exists_out_of_collections_and_still_collects_what_comes_later() -> None:
    before = _Node()
    try:
        collector.freeze_startup()
        assert gc.get_freeze_count() > 0
        # Frozen: no generation holds it any more, so no collection walks it.
        assert not any(any(o is before for o in gc.get_objects(generation=g)) for g in range(3))
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle made after the freeze: garbage for the collector
        gone = weakref.ref(a)
        del a, b
        gc.collect(0)
        assert gone() is None
    finally:
        gc.unfreeze()
    assert any(o is before for o in gc.get_objects())


def test_loaded_freezes_only_in_a_component_process(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _Node()
    try:
        collector.loaded()  # a test process, `kai schedule`, the simulator: nothing moves
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(collector, "_service", True)
        collector.loaded()
        assert gc.get_freeze_count() > 0
        assert not any(any(o is before for o in gc.get_objects(generation=g)) for g in range(3))
    finally:
        gc.unfreeze()


def test_concurrent_pauses_keep_the_collector_off_until_the_last_ends() -> None:
    first, second = collector.paused(), collector.paused()
    first.__enter__()
    second.__enter__()  # another thread's, begun while the first runs
    first.__exit__(None, None, None)  # the first ends before it
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()
