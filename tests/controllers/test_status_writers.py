"""The status controllers' writes sent by several writer threads (`--max-concurrent-reconciles`): they overlap, and
what holds one at a time holds with several: each object written once per pass by one thread, no write of a
status already there, a refused write logged once and retried after its backoff, a write to an object gone
dropped; the statuses computed from the controller's state at the pass."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers import podgroup_status
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import JSON, Cancelled, NotFound, StoreError
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers
from tests.builders import NAMESPACE, NOW, node, pod, podgroup, queue

OBJECTS = 6
WAIT = 10.0  # seconds a blocked write waits at most for the others


class Forbidden(StoreError):
    reason = "Forbidden"


class StatusStore(MemoryStore):
    """Status writes to `resource` that can be held until `parties` are in flight (`barrier`), refused per object
    (`refuse`: name → error), each counted per object; fails a test (`overlapping`) when one object's status is
    written by two threads at once."""

    def __init__(self, resource: str) -> None:
        super().__init__(ManualClock(NOW))
        self.resource = resource
        self.barrier: threading.Barrier | None = None
        self.refuse: dict[str, StoreError] = {}
        self.writes: Counter[str] = Counter()
        self.overlapping: list[str] = []
        self.most_at_once = 0
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()

    def patch(
        self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", *, strategic: bool = False
    ) -> JSON:
        if resource != self.resource or subresource != "status":
            return super().patch(resource, name, namespace, patch, subresource, strategic=strategic)
        with self._lock:
            if name in self._in_flight:
                self.overlapping.append(name)
            self._in_flight.add(name)
            self.most_at_once = max(self.most_at_once, len(self._in_flight))
            self.writes[name] += 1
        try:
            if self.barrier is not None:
                self.barrier.wait(WAIT)
            else:
                time.sleep(0.005)  # a round trip: lets the writes of one pass meet
            error = self.refuse.get(name)
            if error is not None:
                raise error
            return super().patch(resource, name, namespace, patch, subresource, strategic=strategic)
        finally:
            with self._lock:
                self._in_flight.discard(name)


@dataclass(frozen=True)
class Kind:
    resource: str
    logger: str
    message: str
    keys: list[str]  # the objects whose statuses are written, as keys of the controller's work queue
    cluster: Callable[[StatusStore], None]
    make: Callable[[StatusStore, WorkQueue, Writers, CollectorRegistry], Any]
    status: Callable[[StatusStore, str], Any]


def _podgroups(store: StatusStore) -> None:
    store.add_many([node("n1", gpus=OBJECTS), queue("team")])
    for i in range(OBJECTS):
        store.add_many([podgroup(f"g{i}", queue="team"), pod(f"p{i}", group=f"g{i}", gpus=1, node="n1")])


def _queues(store: StatusStore) -> None:
    store.add_many([queue(f"q{i}") for i in range(OBJECTS)])


KINDS = {
    "podgroup": Kind(
        "podgroups",
        "kai_scheduler.controllers.podgroup_status",
        "PodGroup status not computed as asked",
        [f"{NAMESPACE}/g{i}" for i in range(OBJECTS)],
        _podgroups,
        lambda store, queue, writers, registry: PodGroupStatusController(
            store,
            queue=queue,
            writers=writers,
            work=metrics.controller(registry, podgroup_status.CONTROLLER, writers.count),
        ),
        lambda store, key: (store.get("podgroups", key.partition("/")[2], NAMESPACE).get("status") or {}).get(
            "resourcesStatus"
        ),
    ),
    "queue": Kind(
        "queues",
        "kai_scheduler.controllers.queue_status",
        "Queue status not computed as asked",
        [f"q{i}" for i in range(OBJECTS)],
        _queues,
        lambda store, queue, writers, registry: QueueStatusController(store, registry, queue=queue, writers=writers),
        lambda store, key: store.get("queues", key).get("status"),
    ),
}


def _name(key: str) -> str:
    return key.rpartition("/")[2]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_writes_of_a_pass_are_sent_at_once(kind: str) -> None:
    """Each write waits until as many as there are writers are in flight: one at a time, the first would wait in
    vain (and the pass fail)."""
    k = KINDS[kind]
    store = StatusStore(k.resource)
    k.cluster(store)
    store.barrier = threading.Barrier(OBJECTS)
    controller = k.make(store, WorkQueue(), Writers(OBJECTS, "test-status"), CollectorRegistry())
    began = time.monotonic()
    assert controller.reconcile() == k.keys
    assert time.monotonic() - began < WAIT and store.most_at_once == OBJECTS
    assert all(k.status(store, key) for key in k.keys)


@pytest.mark.parametrize("writers", [1, 3])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_with_several_writers_each_object_is_written_once_refusals_retried_and_gone_ones_dropped(
    kind: str, writers: int, caplog: pytest.LogCaptureFixture
) -> None:
    k = KINDS[kind]
    store = StatusStore(k.resource)
    k.cluster(store)
    clock = [0.0]
    work_queue = WorkQueue(now=lambda: clock[0])
    registry = CollectorRegistry()
    controller = k.make(store, work_queue, Writers(writers, "test-status"), registry)
    refused, gone = [k.keys[1], k.keys[4]], k.keys[5]
    store.refuse = {_name(key): Forbidden("patch: forbidden") for key in refused} | {_name(gone): NotFound("gone")}
    ok = [key for key in k.keys if key not in refused and key != gone]
    with caplog.at_level(logging.WARNING, logger=k.logger):
        assert controller.reconcile() == ok
        assert store.writes == Counter({_name(key): 1 for key in k.keys})
        assert [key for key in k.keys if work_queue.backing_off(key)] == refused
        assert work_queue.keys() == set(refused), "the others finished; the one gone forgotten"
        assert controller.reconcile() == [] and sum(store.writes.values()) == OBJECTS, "nothing due, nothing changed"
        clock[0] = 1.0  # the backoff passed: the refused ones are written again, and refused again
        assert controller.reconcile() == []
        assert [store.writes[_name(key)] for key in k.keys] == [1, 2, 1, 1, 2, 1]
    lines = sorted((r.getMessage(), r.__dict__["object"], r.__dict__["reason"]) for r in caplog.records)
    assert lines == [(k.message, key, "Forbidden: patch: forbidden") for key in refused], "each refusal said once"
    store.refuse = {}
    clock[0] = 3.0
    assert controller.reconcile() == refused and work_queue.keys() == set()
    assert all(k.status(store, key) for key in k.keys if key != gone)
    controller.reconcile()  # the watch brings the written copies: nothing to write
    assert [store.writes[_name(key)] for key in k.keys] == [1, 3, 1, 1, 3, 1] and store.overlapping == []
    get = registry.get_sample_value
    assert get("controller_runtime_max_concurrent_reconciles", {"controller": kind}) == writers
    assert get("workqueue_retries_total", {"name": kind, "controller": kind}) == 4


def test_statuses_are_those_of_the_controllers_state_at_the_pass() -> None:
    """A pod bound while the pass's writes are in flight is in the next pass's statuses, not in this one's: the
    writer threads send what the pass computed and read nothing of the controller's."""
    k = KINDS["podgroup"]
    store = StatusStore("podgroups")
    k.cluster(store)
    store.add_many([podgroup("late", queue="team")])
    every = OBJECTS + 1  # once all the pass's writes are in flight, a pod of "late" is bound
    store.barrier = threading.Barrier(every, action=lambda: store.create(pod("l0", group="late", gpus=1, node="n1")))
    controller = PodGroupStatusController(store, writers=Writers(every, "test-status"))
    keys = controller.reconcile()
    assert f"{NAMESPACE}/late" in keys
    assert k.status(store, f"{NAMESPACE}/late")["allocated"]["nvidia.com/gpu"] == "0"
    store.barrier = None
    assert controller.reconcile() == [f"{NAMESPACE}/late"]
    assert k.status(store, f"{NAMESPACE}/late")["allocated"]["nvidia.com/gpu"] == "1"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_writes_cut_by_a_stopping_process_are_not_reported_one_by_one(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A SIGTERM with statuses still to write cancels the store: the process says so once; the controller does not
    warn for each object (4,305 lines at 1,000 nodes before), and keeps them to write."""
    k = KINDS[kind]
    store = StatusStore(k.resource)
    k.cluster(store)
    work_queue = WorkQueue(now=lambda: 0.0)
    controller = k.make(store, work_queue, Writers(3, "test-status"), CollectorRegistry())
    store.refuse = {_name(key): Cancelled("patch: cancelled: the client is shutting down") for key in k.keys}
    with caplog.at_level(logging.WARNING, logger=k.logger):
        assert controller.reconcile() == []
    assert caplog.records == []
    assert work_queue.keys() == set(k.keys)
