"""Queue validating webhook (BEHAVIOR.md §1.1)."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.admission import queue as queuehook
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.memory import MemoryStore
from tests.admission import builders


def res(**by_resource: Any) -> builders.JSON:
    base: builders.JSON = {k: {"quota": 1, "overQuotaWeight": 1, "limit": -1} for k in ("gpu", "cpu", "memory")}
    for key, value in by_resource.items():
        base[key] = value
    return base


@pytest.mark.parametrize(
    "obj, want",
    [
        pytest.param(
            builders.queue(resources=res(gpu={"quota": -2})),
            "spec.resources.gpu.quota: must be -1",
            id="quota below -1",
        ),
        pytest.param(
            builders.queue(resources=res(cpu={"limit": -5})),
            "spec.resources.cpu.limit: must be -1",
            id="limit below -1",
        ),
        pytest.param(
            builders.queue(resources=res(memory={"overQuotaWeight": -1})),
            "spec.resources.memory.overQuotaWeight: must be at least 0",
            id="negative weight",
        ),
        pytest.param(
            builders.queue(resources=res(gpu={"quota": "lots"})),
            "spec.resources.gpu.quota: expected a number",
            id="quota not a number",
        ),
        pytest.param(
            builders.queue(resources={"gpus": {"quota": 1}}),
            "spec.resources.gpus: unknown resource",
            id="unknown resource",
        ),
        pytest.param(
            builders.queue(resources=res(gpu={"quota": 4, "limit": 2})),
            "spec.resources.gpu.limit: 2 is below the quota 4",
            id="limit below quota",
        ),
        pytest.param(
            builders.queue(resources=res(gpu={"quota": -1, "limit": 2})),
            "spec.resources.gpu.limit: 2 is below the quota -1 (unlimited)",
            id="unlimited quota, finite limit",
        ),
        pytest.param(
            builders.queue(resources=res(gpu={"quota": 1, "limit": 0})),
            "spec.resources.gpu.limit: 0 is below the quota 1",
            id="limit 0 below quota",
        ),
        pytest.param(
            builders.queue("a", parentQueue="a"), "spec.parentQueue: a queue cannot be its own parent", id="own parent"
        ),
        pytest.param({**builders.queue(), "spec": {"priority": 1}}, "spec.resources: missing", id="no resources"),
        pytest.param(builders.queue(priority="high"), "spec.priority: expected an integer", id="bad priority"),
    ],
)
def test_bad_queues_are_denied(obj: builders.JSON, want: str) -> None:
    for operation in ("CREATE", "UPDATE"):
        v = queuehook.validate(builders.rev(obj, operation=operation, old=builders.queue()))
        assert not v.allowed
        assert want in v.message
        assert v.message.startswith("Queue ")


@pytest.mark.parametrize(
    "resources",
    [
        pytest.param(res(), id="unlimited limits"),
        pytest.param(res(gpu={"quota": 2, "limit": 2}), id="limit equals quota"),
        pytest.param(res(gpu={"quota": 2}), id="only quota"),
        pytest.param(res(gpu={"limit": 3}), id="only limit"),
        pytest.param(res(gpu={"quota": 0.5, "limit": 0.7, "overQuotaWeight": 0}), id="fractions"),
        pytest.param({"gpu": {"quota": 1, "limit": -1}}, id="one resource"),
    ],
)
def test_good_queues_are_allowed(resources: builders.JSON) -> None:
    assert queuehook.validate(builders.rev(builders.queue(resources=resources, parentQueue="p"))).allowed


def test_unreadable_min_runtime_is_a_warning() -> None:
    v = queuehook.validate(builders.rev(builders.queue(reclaimMinRuntime="soon")))
    assert v.allowed
    assert "spec.reclaimMinRuntime" in v.warnings[0]


def test_delete_of_a_queue_with_children_is_denied() -> None:
    old = {**builders.queue("org"), "status": {"childQueues": ["team-b", "team-a"]}}
    v = queuehook.validate(builders.rev(None, operation="DELETE", old=old))
    assert not v.allowed
    assert v.message == (
        "Queue org: cannot delete a queue that has child queues (team-a, team-b); delete or move them first"
    )


def test_delete_of_a_leaf_queue_is_allowed() -> None:
    assert queuehook.validate(builders.rev(None, operation="DELETE", old=builders.queue("leaf"))).allowed


def test_delete_is_not_parsed() -> None:
    broken = {**builders.queue("x"), "spec": {"resources": {"gpu": {"quota": -9}}}}
    assert queuehook.validate(builders.rev(None, operation="DELETE", old=broken)).allowed


def quotas(gpu: float) -> builders.JSON:
    return res(gpu={"quota": gpu, "limit": -1}, cpu={"quota": 0}, memory={"quota": 0})


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(ManualClock(1000.0))
    s.create(builders.queue("org", resources=quotas(4)))
    s.create(builders.queue("team-a", resources=quotas(3), parentQueue="org"))
    return s


def test_child_quota_above_the_parents_is_a_warning(store: MemoryStore) -> None:
    v = queuehook.validate(builders.rev(builders.queue("team-b", resources=quotas(5), parentQueue="org")), store)
    assert v.allowed
    assert v.warnings == ("Queue team-b spec.resources.gpu.quota: 5 exceeds the parent queue org's quota 4",)


def test_children_together_above_the_parent_is_a_warning(store: MemoryStore) -> None:
    v = queuehook.validate(builders.rev(builders.queue("team-b", resources=quotas(2), parentQueue="org")), store)
    assert v.allowed
    assert v.warnings == (
        "Queue team-b spec.resources.gpu.quota: the children of org together ask 5, above its quota 4",
    )


def test_updating_a_child_counts_it_once(store: MemoryStore) -> None:
    obj = builders.queue("team-a", resources=quotas(4), parentQueue="org")
    v = queuehook.validate(builders.rev(obj, operation="UPDATE", old=store.get("queues", "team-a")), store)
    assert v.allowed
    assert v.warnings == ()


def test_missing_parent_is_a_warning(store: MemoryStore) -> None:
    v = queuehook.validate(builders.rev(builders.queue("x", parentQueue="ghost")), store)
    assert v.allowed
    assert "no queue named 'ghost'" in v.warnings[0]
