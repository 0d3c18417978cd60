"""The default queues: made by the controllers component when missing, retried with backoff, then left alone."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api import PARSERS
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.crd_manifests import crd_for
from kai_scheduler.controllers.default_queues import MAX_BACKOFF, DefaultQueues, default_queues
from kai_scheduler.runtime import components
from kai_scheduler.runtime.options import GrouperOptions
from kai_scheduler.store.kube import KubeOptions, KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NOW, queue
from tests.loopback import write_kubeconfig
from tests.store.mock_apiserver import MockApiServer

WEBHOOK_DOWN = (
    'Internal error occurred: failed calling webhook "queues.validate.kai.scheduler": failed to call '
    'webhook: Post "https://kai-admission.kai-scheduler.svc:443/validate-scheduling-run-ai-v2-queue": '
    "dial tcp 10.0.0.7:443: connect: connection refused"
)


def test_the_default_queues_validate_against_the_queue_crd() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = crd_for("Queue")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    queues = default_queues()
    assert [q["metadata"]["name"] for q in queues] == ["default-parent-queue", "default-queue"]
    for q in queues:
        jsonschema.Draft7Validator(schema).validate(q)
        assert PARSERS["Queue"](q) is not None
        for resource in ("gpu", "cpu", "memory"):
            assert q["spec"]["resources"][resource] == {"quota": 0, "overQuotaWeight": 1, "limit": -1}
    assert queues[1]["spec"]["parentQueue"] == "default-parent-queue"


def test_missing_queues_are_created_and_existing_ones_left_as_they_are() -> None:
    store = MemoryStore(ManualClock(NOW))
    store.add_many([queue("default-parent-queue", gpu_quota=4)])
    ensure = DefaultQueues(store, ManualClock(NOW))
    assert ensure.ensure()
    assert store.get("queues", "default-parent-queue")["spec"]["resources"]["gpu"]["quota"] == 4
    assert store.get("queues", "default-queue")["spec"]["parentQueue"] == "default-parent-queue"
    store.delete("queues", "default-queue")
    assert ensure.ensure() and ensure.attempts == 1  # once both existed, never again in this process
    with pytest.raises(Exception, match="not found"):
        store.get("queues", "default-queue")


@pytest.fixture
def mock() -> Iterator[MockApiServer]:
    with MockApiServer(MemoryStore(ManualClock(NOW))) as server:
        yield server


def test_a_webhook_that_is_not_serving_yet_is_retried_with_backoff_one_line_each(
    mock: MockApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The Queue webhook fails closed while the admission component is not up: each attempt is one warning line
    naming the queue, and the next comes after 1 s, 2 s, 4 s … (at most MAX_BACKOFF)."""
    refusal = mock.refuse("POST", r"/queues$", 500, "InternalError", WEBHOOK_DOWN, count=5)
    clock = ManualClock(NOW)
    with KubeStore.connect(write_kubeconfig(tmp_path / "config", mock.url), None, KubeOptions(qps=0)) as store:
        ensure = DefaultQueues(store, clock)
        with caplog.at_level(logging.WARNING, logger="kai_scheduler.controllers.default_queues"):
            for _ in range(200):
                if ensure.ensure():
                    break
                clock.advance(0.5)
        assert ensure.done and refusal.answered == 5 and ensure.attempts == 6
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 5
        assert all(
            "create Queue default-parent-queue" in line and "failed calling webhook" in line and "\n" not in line
            for line in lines
        )
        assert [r.__dict__["retry_in"] for r in caplog.records] == [1.0, 2.0, 4.0, 8.0, MAX_BACKOFF]
        assert {q["metadata"]["name"] for q in store.list("queues")[0]} == {"default-parent-queue", "default-queue"}


def test_the_controllers_component_makes_them_unless_told_not_to() -> None:
    for create, want in ((True, {"default-parent-queue", "default-queue"}), (False, set())):
        store = MemoryStore(ManualClock(NOW))
        component = components.controllers(
            store, GrouperOptions(create_default_queues=create), CollectorRegistry(), ManualClock(NOW)
        )
        component.step()
        assert {q["metadata"]["name"] for q in store.list("queues")[0]} == want
