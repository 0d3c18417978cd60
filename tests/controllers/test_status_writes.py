"""The status controllers' writes, PodGroup and Queue alike: a refused write is logged once per object and
reason and tried again after a backoff until it goes through; a write to an object that is gone is dropped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.store.interface import NotFound, StoreError
from kai_scheduler.store.memory import MemoryStore
from kai_scheduler.store.workqueue import WorkQueue
from tests.builders import NAMESPACE, NOW, node, pod, podgroup, queue


class Forbidden(StoreError):
    reason = "Forbidden"


@dataclass(frozen=True)
class Kind:
    resource: str
    key: str  # the object whose status is written
    logger: str
    message: str
    make: Callable[[MemoryStore, WorkQueue], Any]
    status: Callable[[MemoryStore], Any]


KINDS = {
    "podgroup": Kind(
        "podgroups",
        f"{NAMESPACE}/g",
        "kai_scheduler.controllers.podgroup_status",
        "PodGroup status not computed as asked",
        lambda store, queue: PodGroupStatusController(store, queue=queue),
        lambda store: (store.get("podgroups", "g", NAMESPACE).get("status") or {}).get("resourcesStatus"),
    ),
    "queue": Kind(
        "queues",
        "team",
        "kai_scheduler.controllers.queue_status",
        "Queue status not computed as asked",
        lambda store, queue: QueueStatusController(store, queue=queue),
        lambda store: store.get("queues", "team").get("status"),
    ),
}


def _cluster() -> MemoryStore:
    store = MemoryStore(ManualClock(NOW))
    store.add_many([node("n1"), queue("team"), podgroup("g", queue="team"), pod("p0", group="g", gpus=1, node="n1")])
    return store


def _refusing(store: MemoryStore, resource: str, error: StoreError) -> list[int]:
    """Make `store` refuse every status write to `resource` with `error`; the list counts the refusals."""
    refused: list[int] = []
    real = store.patch

    def patch(kind: str, *args: Any, **kwargs: Any) -> Any:
        if kind == resource:
            refused.append(1)
            raise error
        return real(kind, *args, **kwargs)

    store.patch = patch  # type: ignore[method-assign,assignment]
    return refused


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_refused_write_is_logged_once_and_retried_after_a_backoff(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    k = KINDS[kind]
    store, clock = _cluster(), [0.0]
    queue = WorkQueue(now=lambda: clock[0])
    controller = k.make(store, queue)  # a clock of the test's: an empty WorkQueue given is the one used
    real = store.patch
    refused = _refusing(store, k.resource, Forbidden("patch: forbidden"))
    with caplog.at_level(logging.WARNING, logger=k.logger):
        controller.reconcile()
        assert queue.backing_off(k.key) and len(refused) == 1
        controller.reconcile()  # not due yet: no write
        assert len(refused) == 1
        clock[0] = 1.0  # the first backoff passed: written again, refused again, not logged again
        controller.reconcile()
        assert len(refused) == 2 and queue.backing_off(k.key)
    lines = [(r.name, r.getMessage(), r.__dict__["object"], r.__dict__["reason"]) for r in caplog.records]
    assert lines == [(k.logger, k.message, k.key, "Forbidden: patch: forbidden")]
    store.patch = real  # type: ignore[method-assign]
    clock[0] = 3.0  # the second backoff (2 s) passed: the write goes through
    assert k.key in controller.reconcile() and not queue.backing_off(k.key)
    assert k.status(store)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_write_to_an_object_gone_is_dropped(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    k = KINDS[kind]
    store, clock = _cluster(), [0.0]
    queue = WorkQueue(now=lambda: clock[0])
    controller = k.make(store, queue)  # a clock of the test's: an empty WorkQueue given is the one used
    refused = _refusing(store, k.resource, NotFound("gone"))
    with caplog.at_level(logging.WARNING, logger=k.logger):
        assert k.key not in controller.reconcile()
        clock[0] = 120.0
        controller.reconcile()
    assert queue.keys() == set() and len(refused) == 1 and caplog.records == []


def _grow(store: MemoryStore, n: int, kind: str) -> None:
    """One more pod of the PodGroup bound: the PodGroup's status changes and so does its queue's (for the Queue
    controller, the PodGroup's written by a PodGroup controller of its own)."""
    store.create(pod(f"p{n}", group="g", gpus=1, node="n1"))
    if kind == "queue":
        PodGroupStatusController(store).reconcile()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_write_that_goes_through_starts_the_backoff_over_and_leaves_no_key_behind(kind: str) -> None:
    """The controllers' writes are keys of their work queue: each taken is finished (a key left taken would never
    be written again), and a refusal after a success waits the first backoff again, not a longer one."""
    k = KINDS[kind]
    store, clock = _cluster(), [0.0]
    queue = WorkQueue(now=lambda: clock[0])
    controller = k.make(store, queue)
    real = store.patch
    refused = _refusing(store, k.resource, Forbidden("patch: forbidden"))
    controller.reconcile()
    clock[0] = 1.0
    controller.reconcile()
    assert len(refused) == 2 and queue.requeues(k.key) == 2  # next due after 2 s
    store.patch = real  # type: ignore[method-assign]
    clock[0] = 3.0
    assert k.key in controller.reconcile() and queue.keys() == set()
    _grow(store, 1, kind)
    assert k.key in controller.reconcile() and queue.keys() == set(), "a change is written at once"
    refused = _refusing(store, k.resource, Forbidden("patch: forbidden"))
    _grow(store, 2, kind)
    controller.reconcile()
    assert len(refused) == 1 and queue.requeues(k.key) == 1
    store.patch = real  # type: ignore[method-assign]
    clock[0] = 4.0  # the first backoff again (1 s)
    assert k.key in controller.reconcile() and queue.keys() == set()
    namespace, _, name = k.key.rpartition("/")
    store.patch(
        k.resource, name, namespace, {"spec": {"preemptibility": "preemptible"}, "metadata": {"labels": {"a": "b"}}}
    )
    assert controller.reconcile() == [] and queue.keys() == set(), "taken, nothing to write: finished all the same"
    _grow(store, 3, kind)
    assert k.key in controller.reconcile()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_write_that_raises_what_no_step_expects_is_made_again_after_the_backoff(kind: str) -> None:
    k = KINDS[kind]
    store, clock = _cluster(), [0.0]
    controller = k.make(store, WorkQueue(now=lambda: clock[0]))
    real = store.patch
    _refusing(store, k.resource, RuntimeError("a bug"))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        controller.reconcile()
    store.patch = real  # type: ignore[method-assign]
    clock[0] = 1.0
    assert k.key in controller.reconcile()
