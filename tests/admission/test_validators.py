"""What every validating webhook of a KAI object does alike: it checks only what CREATE and UPDATE write, and an
object that does not parse is denied with the parse error (one line naming the object and the field)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kai_scheduler.admission import operator
from kai_scheduler.admission import podgroup as pghook
from kai_scheduler.admission import queue as queuehook
from kai_scheduler.admission import topology as topohook
from kai_scheduler.admission.review import Review, Verdict
from kai_scheduler.api.fields import JSON
from tests.admission import builders


def _shard(spec: JSON) -> JSON:
    return {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": spec,
    }


def _config(spec: JSON) -> JSON:
    return {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"}, "spec": spec}


# (validator, an object that does not parse, words its refusal has)
WEBHOOKS: dict[str, tuple[Callable[[Review], Verdict], JSON, str]] = {
    "podgroup": (pghook.validate, builders.podgroup(minMember="two"), "PodGroup"),
    "topology": (topohook.validate, builders.topology(levels=[{"alias": "rack"}]), "Topology"),
    "shard": (operator.validate_shard, _shard({"placementStrategy": {"gpu": "scatter"}}), "SchedulingShard"),
    "config": (operator.validate_config, _config({"noSuchField": 1}), "Config"),
    "queue": (queuehook.validate, builders.queue(parentQueue=7), "Queue"),
}


@pytest.mark.parametrize("hook", sorted(WEBHOOKS))
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_an_object_that_does_not_parse_is_denied_with_the_parse_error(hook: str, operation: str) -> None:
    validate, bad, kind = WEBHOOKS[hook]
    old = bad if operation == "UPDATE" else None
    verdict = validate(builders.rev(bad, operation=operation, old=old))
    assert not verdict.allowed and verdict.message.count("\n") == 0
    assert verdict.message.startswith(kind), verdict.message


@pytest.mark.parametrize("hook", sorted(set(WEBHOOKS) - {"queue"}))  # a Queue's DELETE has its own rules
def test_other_operations_are_allowed_unchecked(hook: str) -> None:
    validate, bad, _ = WEBHOOKS[hook]
    for operation in ("DELETE", "CONNECT"):
        verdict = validate(builders.rev(bad, operation=operation, old=bad))
        assert verdict.allowed and verdict.message == "", operation
