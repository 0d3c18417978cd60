"""Queue access control fields (this project's extension): parsing, matching, the walk up the queue tree."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api import ObjectError, Queue
from kai_scheduler.api.queue import namespace_refusal


def _queue(name: str, parent: str = "", **spec: Any) -> Queue:
    body: dict[str, Any] = {"parentQueue": parent, **spec} if parent else dict(spec)
    return Queue.from_dict({"kind": "Queue", "metadata": {"name": name}, "spec": body})


def _refusal(queues: list[Queue], queue: str, namespace: str, labels: dict[str, str] | None = None) -> str | None:
    by_name = {q.name: q for q in queues}
    return namespace_refusal(queue, namespace, by_name.get, lambda: labels)


def test_a_queue_without_the_fields_admits_every_namespace() -> None:
    q = _queue("team")
    assert not q.access.restricted
    assert _refusal([q], "team", "anything") is None
    assert "allowedNamespaces" not in q.to_dict()["spec"]


def test_listed_namespaces_are_admitted_and_others_refused_naming_queue_and_namespace() -> None:
    q = _queue("team", allowedNamespaces=["a", "b"])
    assert _refusal([q], "team", "a") is None
    assert _refusal([q], "team", "c") == "queue 'team' does not admit namespace 'c' (spec.allowedNamespaces: a, b)"


def test_the_selector_admits_namespaces_by_label_and_nothing_when_labels_are_unknown() -> None:
    q = _queue("team", allowedNamespaceSelector={"matchLabels": {"team": "x"}})
    assert _refusal([q], "team", "ns", {"team": "x"}) is None
    assert _refusal([q], "team", "ns", {"team": "y"}) is not None
    assert _refusal([q], "team", "ns", None) is not None


def test_either_field_admits() -> None:
    q = _queue("team", allowedNamespaces=["a"], allowedNamespaceSelector={"matchLabels": {"team": "x"}})
    assert _refusal([q], "team", "a", {}) is None
    assert _refusal([q], "team", "b", {"team": "x"}) is None
    refused = _refusal([q], "team", "b", {})
    assert (
        refused
        == "queue 'team' does not admit namespace 'b' (spec.allowedNamespaces: a; spec.allowedNamespaceSelector)"
    )


def test_an_ancestor_that_restricts_access_refuses_too() -> None:
    queues = [_queue("dept", allowedNamespaces=["a"]), _queue("team", parent="dept")]
    assert _refusal(queues, "team", "a") is None
    assert _refusal(queues, "team", "b") == (
        "queue 'dept' (ancestor of queue 'team') does not admit namespace 'b' (spec.allowedNamespaces: a)"
    )


def test_an_unknown_queue_or_a_parent_cycle_is_not_this_checks_to_judge() -> None:
    assert _refusal([], "nowhere", "a") is None
    cycle = [_queue("x", parent="y"), _queue("y", parent="x")]
    assert _refusal(cycle, "x", "a") is None


def test_the_fields_round_trip() -> None:
    spec: dict[str, Any] = {
        "allowedNamespaces": ["a"],
        "allowedNamespaceSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    }
    q = _queue("team", **spec)
    again = Queue.from_dict(q.to_dict())
    assert again.access == q.access
    assert {k: v for k, v in q.to_dict()["spec"].items() if k.startswith("allowed")} == spec


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"allowedNamespaces": "a"}, "spec.allowedNamespaces"),
        ({"allowedNamespaces": ["a", 3]}, "spec.allowedNamespaces[1]"),
        ({"allowedNamespaceSelector": ["x"]}, "spec.allowedNamespaceSelector"),
        ({"allowedNamespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Gt"}]}}, "matchExpressions[0]"),
    ],
)
def test_bad_fields_are_one_error_naming_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ObjectError) as err:
        _queue("team", **spec)
    assert field in str(err.value) and "Queue team" in str(err.value)
