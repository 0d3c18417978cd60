"""Shared reads of the memory store (store/shared.py) and the checking mode that guards them."""

from __future__ import annotations

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store import memory
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.shared import SharedReads

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}


def _store(monkeypatch: pytest.MonkeyPatch, *, checking: bool = True) -> MemoryStore:
    monkeypatch.setenv(memory.CHECK_SHARED_READS_ENV, "1" if checking else "0")
    store = MemoryStore(ManualClock(0.0))
    store.create(POD)
    return store


def test_shared_reads_hand_out_the_stored_object_and_plain_reads_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch)
    reads = SharedReads(store)
    items, version = reads.list("pods")
    assert reads.get("pods", "p", "ns") is items[0]
    assert next(iter(reads.watch("pods", "0"))).object is items[0]
    assert store.get("pods", "p", "ns") is not items[0]
    assert store.list("pods")[0][0] == items[0] and version == store.list("pods")[1]


def test_writes_through_shared_reads_return_the_stored_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a write returns is the stored object, under the readers' rule (a status controller keeps what it
    wrote: a copy each was a PodGroup's worth of memory per job); plain writes still return a copy."""
    store = _store(monkeypatch)
    reads = SharedReads(store)
    written = reads.patch("pods", "p", "ns", {"metadata": {"labels": {"a": "b"}}})
    assert written is reads.get("pods", "p", "ns")
    created = reads.create({**POD, "metadata": {"name": "q", "namespace": "ns"}})
    assert created is reads.get("pods", "q", "ns")
    assert store.patch("pods", "p", "ns", {"metadata": {"labels": {"a": "c"}}}) is not reads.get("pods", "p", "ns")
    written = reads.get("pods", "p", "ns")
    written["metadata"]["labels"]["a"] = "changed"  # what no writer may do: the checking mode names it
    assert store.changed_by_readers() == [
        "Pod ns/p (resourceVersion 4) was changed by a reader after the store handed it out shared"
    ]
    written["metadata"]["labels"]["a"] = "c"


def test_the_checking_mode_names_an_object_a_reader_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch)
    shared = SharedReads(store).get("pods", "p", "ns")
    shared["spec"]["nodeName"] = "n1"  # what no reader may do
    assert store.changed_by_readers() == [
        "Pod ns/p (resourceVersion 1) was changed by a reader after the store handed it out shared"
    ]
    shared["spec"].pop("nodeName")  # put back, or this test's store fails the suite's own check


def test_the_checking_mode_catches_a_change_when_the_object_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader changes a shared object, then the object is written anew: the replaced version is checked
    as it leaves the store."""
    store = _store(monkeypatch)
    shared = SharedReads(store).get("pods", "p", "ns")
    shared["metadata"]["labels"] = {"x": "y"}
    store.patch("pods", "p", "ns", {"metadata": {"annotations": {"a": "b"}}})
    assert store.get("pods", "p", "ns")["metadata"]["resourceVersion"] == "2"
    assert store.changed_by_readers() == [
        "Pod ns/p (resourceVersion 1) was changed by a reader after the store handed it out shared"
    ]
    store._changed.clear()


def test_without_the_checking_mode_nothing_is_fingerprinted(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch, checking=False)
    shared = SharedReads(store).get("pods", "p", "ns")
    shared["spec"]["nodeName"] = "n1"
    assert store.changed_by_readers() == []
