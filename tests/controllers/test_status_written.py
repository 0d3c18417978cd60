"""The status controllers write a status once: a copy of the object that the watch brings late (older than the
controller's last write, e.g. its previous status, or another component's annotation made before the write) does
not make them write the same status again; a status another writer changed after theirs is put back."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.store.interface import JSON, Selector, WatchEvent
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, node, pod, podgroup, queue


class LaggingStore(MemoryStore):
    """A memory store whose watch of a resource stops short of `held_from[resource]` (that version and later
    are not delivered yet), as a watch that lags behind the writes does; every status write is counted."""

    def __init__(self) -> None:
        super().__init__(ManualClock(NOW))
        self.held_from: dict[str, int] = {}
        self.status_writes: list[tuple[str, str]] = []

    def watch(
        self,
        resource: str,
        resource_version: str,
        timeout: float = 0.0,
        selector: Selector = None,
        *,
        shared: bool = False,
    ) -> Iterator[WatchEvent]:
        events = super().watch(resource, resource_version, timeout, selector, shared=shared)
        limit = self.held_from.get(resource)
        if limit is None:
            return events
        return itertools.takewhile(lambda e: int(e.object["metadata"]["resourceVersion"]) < limit, events)

    def patch(self, resource: str, name: str, namespace: str, patch: JSON, *args: Any, **kwargs: Any) -> JSON:
        if args[:1] == ("status",) or kwargs.get("subresource") == "status":
            self.status_writes.append((resource, name))
        return super().patch(resource, name, namespace, patch, *args, **kwargs)

    def version_of(self, resource: str, name: str, namespace: str = "") -> int:
        return int(self.get(resource, name, namespace)["metadata"]["resourceVersion"])


def _podgroup_cluster() -> tuple[LaggingStore, PodGroupStatusController]:
    store = LaggingStore()
    store.add_many([node("n1"), queue("team"), podgroup("g", queue="team"), pod("p", group="g", gpus=1)])
    return store, PodGroupStatusController(store)


def test_a_podgroup_copy_older_than_the_last_write_writes_nothing() -> None:
    store, ctl = _podgroup_cluster()
    assert ctl.reconcile() == [f"{NAMESPACE}/g"]  # requested
    store.held_from["podgroups"] = store.version_of("podgroups", "g", NAMESPACE)  # that write not seen yet
    store.bind(NAMESPACE, "p", "n1")
    assert ctl.reconcile() == [f"{NAMESPACE}/g"]  # allocated
    store.held_from["podgroups"] += 1  # the watch brings the first write's copy, older than the second write
    assert ctl.reconcile() == []
    del store.held_from["podgroups"]
    assert ctl.reconcile() == []
    assert store.status_writes == [("podgroups", "g")] * 2


def test_a_podgroup_status_another_writer_changed_is_written_again() -> None:
    store, ctl = _podgroup_cluster()
    ctl.reconcile()
    want = store.get("podgroups", "g", NAMESPACE)["status"]["resourcesStatus"]
    store.patch("podgroups", "g", NAMESPACE, {"status": {"resourcesStatus": {"requested": {"cpu": "9"}}}}, "status")
    assert ctl.reconcile() == [f"{NAMESPACE}/g"]
    assert store.get("podgroups", "g", NAMESPACE)["status"]["resourcesStatus"] == want


def _queue_cluster() -> tuple[LaggingStore, QueueStatusController]:
    store = LaggingStore()
    store.add_many([queue("team"), podgroup("g", queue="team")])
    _group_status(store, "1")
    return store, QueueStatusController(store)


def _group_status(store: LaggingStore, gpus: str) -> None:
    figures = {"nvidia.com/gpu": gpus}
    status = {"resourcesStatus": {"requested": figures, "allocated": figures, "allocatedNonPreemptible": {}}}
    MemoryStore.patch(store, "podgroups", "g", NAMESPACE, {"status": status}, "status")


def test_a_queue_copy_older_than_the_last_write_writes_nothing() -> None:
    store, ctl = _queue_cluster()
    assert ctl.reconcile() == ["team"]
    store.held_from["queues"] = store.version_of("queues", "team")  # that write not seen yet
    _group_status(store, "2")
    assert ctl.reconcile() == ["team"]
    store.held_from["queues"] += 1  # the first write's copy comes, with a change of the PodGroup that adds nothing
    store.patch("podgroups", "g", NAMESPACE, {"metadata": {"annotations": {"kai.scheduler/last-start-timestamp": "x"}}})
    assert ctl.reconcile() == []
    del store.held_from["queues"]
    assert ctl.reconcile() == []
    assert store.status_writes == [("queues", "team")] * 2
    assert store.get("queues", "team")["status"]["allocated"]["nvidia.com/gpu"] == "2"


def test_a_queue_status_another_writer_changed_is_written_again() -> None:
    store, ctl = _queue_cluster()
    ctl.reconcile()
    want = store.get("queues", "team")["status"]["allocated"]
    store.patch("queues", "team", "", {"status": {"allocated": {"nvidia.com/gpu": "9"}}}, "status")
    store.patch("podgroups", "g", NAMESPACE, {"metadata": {"annotations": {"kai.scheduler/last-start-timestamp": "x"}}})
    assert ctl.reconcile() == ["team"]
    assert store.get("queues", "team")["status"]["allocated"] == want
