"""The topology plugin end to end: node sets per domain, scores, and clear reasons for constraints that cannot
be honoured (unknown topology or level, a Topology with duplicate levels, no labelled node) — never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.topology.plugin import Topology
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.plugins.topology import builders as t

JSON = dict[str, Any]


def _run(*objects: JSON) -> tuple[MemoryStore, Any]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q"), *objects])
    return store, Scheduler(store, load_config(None), clock).run_once()


def _messages(store: MemoryStore, name: str = "job") -> list[str]:
    status = store.get("podgroups", name, b.NAMESPACE).get("status", {})
    return [r["message"] for c in status.get("schedulingConditions", []) for r in c["reasons"]]


def _gang(constraint: JSON, *, pods: int = 2, gpus: int = 2) -> list[JSON]:
    return [
        b.podgroup("job", min_member=pods, topologyConstraint=constraint),
        *(b.pod(f"p{i}", group="job", gpus=gpus) for i in range(pods)),
    ]


def _nodes(result: Any) -> list[str]:
    return sorted(op.after.node for op in result.operations)


def test_a_required_rack_places_the_gang_in_one_rack() -> None:
    _, result = _run(t.topology(), *t.nodes(), *_gang(t.constraint(required="rack"), pods=3))
    assert _nodes(result) == ["z1-r1-0", "z1-r1-0", "z1-r1-1"]


@pytest.mark.parametrize(
    "objects, words",
    [
        pytest.param(
            [t.topology(), *t.nodes(), *_gang(t.constraint(required="rack", topology_name="nope"))],
            "topology 'nope' does not exist",
            id="unknown topology",
        ),
        pytest.param(
            [t.topology(), *t.nodes(), *_gang(t.constraint(required="row"))],
            "topology 'cluster' has no required level 'row'; its levels are zone, rack, kubernetes.io/hostname",
            id="unknown required level",
        ),
        pytest.param(
            [t.topology(), *t.nodes(), *_gang(t.constraint(preferred="row"))],
            "has no preferred level 'row'",
            id="unknown preferred level",
        ),
        pytest.param(
            [t.topology(), *t.nodes(), *_gang(t.constraint(required="rack", preferred="zone"))],
            "preferred level 'zone' is wider than required level 'rack'",
            id="preferred wider than required",
        ),
        pytest.param(
            [
                t.topology(levels=[{"nodeLabel": t.RACK}, {"nodeLabel": t.RACK}]),
                *t.nodes(),
                *_gang(t.constraint(required="rack")),
            ],
            "topology 'cluster' does not exist (it is invalid: Topology cluster spec.levels[1].nodeLabel: "
            "duplicate level 'topology/rack')",
            id="a topology with duplicate levels",
        ),
        pytest.param(
            [t.topology(), b.node("plain"), *_gang(t.constraint(required="rack"))],
            "no candidate node carries every level label",
            id="no node in the tree",
        ),
        pytest.param(
            [t.topology(), *t.nodes(), *_gang(t.constraint(required="rack"), pods=5, gpus=2)],
            "not enough resources in any rack for job job (5 pods); the roomiest, z1.r1, has room for 4",
            id="no rack has room: which level and domain lacked what",
        ),
    ],
)
def test_a_constraint_that_cannot_be_honoured_waits_with_a_reason(objects: list[JSON], words: str) -> None:
    store, result = _run(*objects)
    assert result.operations == []
    assert any(words in m for m in _messages(store)), _messages(store)


def test_jobs_without_a_constraint_are_unaffected() -> None:
    _, result = _run(
        t.topology(levels=[{"nodeLabel": t.RACK}, {"nodeLabel": t.RACK}]),
        b.node("plain"),
        b.podgroup("job"),
        b.pod("p", group="job", gpus=1),
    )
    assert _nodes(result) == ["plain"]


def test_takes_no_arguments() -> None:
    with pytest.raises(ConfigError, match="plugin topology: takes no arguments"):
        Topology.from_args({"x": "1"})
