"""Queue access control in admission (`--queue-access-control`, this project's extension)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kai_scheduler.admission import pod as podhook
from kai_scheduler.admission import podgroup as pghook
from kai_scheduler.admission import webhooks
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.store.memory import MemoryStore
from tests.admission import builders

ON = podhook.PodSettings(queue_access_control=True)
REFUSED = "queue 'q' does not admit namespace 'team-a' (spec.allowedNamespaces: team-b; spec.allowedNamespaceSelector)"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(ManualClock(0.0))
    s.create(builders.queue("q", allowedNamespaces=["team-b"], allowedNamespaceSelector={"matchLabels": {"gpu": "y"}}))
    s.create(builders.queue("open"))
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    return s


def _pod(queue: str | None = "q", **kw: Any) -> builders.JSON:
    obj = builders.pod(**kw)
    if queue is not None:
        obj["metadata"]["labels"] = {"kai.scheduler/queue": queue}
    return obj


def test_a_pod_whose_queue_does_not_admit_its_namespace_is_refused(store: MemoryStore) -> None:
    verdict = podhook.validate(builders.rev(_pod()), ON, store)
    assert not verdict.allowed
    assert verdict.message == f"Pod team-a/p metadata.labels.kai.scheduler/queue: {REFUSED}"


def test_a_pod_is_admitted_by_a_namespace_label_or_an_open_queue(store: MemoryStore) -> None:
    assert podhook.validate(builders.rev(_pod("open")), ON, store).allowed
    assert podhook.validate(builders.rev(_pod(None)), ON, store).allowed  # left to the podgrouper and scheduler
    store.patch("namespaces", "team-a", "", {"metadata": {"labels": {"gpu": "y"}}})
    assert podhook.validate(builders.rev(_pod()), ON, store).allowed


def test_access_control_is_off_by_default(store: MemoryStore) -> None:
    assert podhook.validate(builders.rev(_pod()), podhook.PodSettings(), store).allowed
    assert pghook.validate(builders.rev(builders.podgroup()), store).allowed


def test_a_podgroup_whose_queue_does_not_admit_its_namespace_is_refused(store: MemoryStore) -> None:
    verdict = pghook.validate(builders.rev(builders.podgroup()), store, access_control=True)
    assert not verdict.allowed
    assert verdict.message == f"PodGroup team-a/pg spec.queue: {REFUSED}"
    assert pghook.validate(builders.rev(builders.podgroup(queue="open")), store, access_control=True).allowed


def test_a_podgroup_update_is_checked_only_when_its_queue_changes(store: MemoryStore) -> None:
    old, new = builders.podgroup(), builders.podgroup(minMember=2)
    assert pghook.validate(builders.rev(new, operation="UPDATE", old=old), store, access_control=True).allowed
    moved = pghook.validate(
        builders.rev(builders.podgroup(), operation="UPDATE", old=builders.podgroup(queue="open")),
        store,
        access_control=True,
    )
    assert not moved.allowed


def test_the_webhooks_carry_the_switch(store: MemoryStore) -> None:
    hooks = webhooks.build(ON, store)
    assert not hooks[webhooks.PATH_VALIDATE_POD].rule(builders.rev(_pod())).allowed
    assert not hooks[webhooks.PATH_VALIDATE_PODGROUP].rule(builders.rev(builders.podgroup())).allowed
    off = webhooks.build(podhook.PodSettings(), store)
    assert off[webhooks.PATH_VALIDATE_PODGROUP].rule(builders.rev(builders.podgroup())).allowed


def test_the_documented_example_refuses_its_pod_and_admits_the_research_namespace() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "access" / "queue-access.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    s = MemoryStore(ManualClock(0.0))
    pods = []
    for doc in docs:
        if doc["kind"] == "Pod":
            pods.append(doc)
        else:
            s.create(doc)
    (refused,) = pods
    verdict = podhook.validate(builders.rev(refused), ON, s)
    assert not verdict.allowed and "queue 'research' does not admit namespace 'marketing'" in verdict.message
    admitted = {**refused, "metadata": {**refused["metadata"], "namespace": "research"}}
    assert podhook.validate(builders.rev(admitted), ON, s).allowed
