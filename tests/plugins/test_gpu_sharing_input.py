"""GPU sharing end to end: device choice (`actions/common/gpu_sharing`) and bad fractional requests (§2, §6).

Bad input never crashes a cycle: a pod whose gpu-fraction or gpu-memory cannot be read is left out of the
snapshot and its PodGroup is held with an `UnschedulableOnNodePool` reason that names the pod and the
annotation; a gpu-memory request on nodes without a memory label waits with that reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.actions.common import gpu_sharing
from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]


def _cycle(*objects: JSON) -> tuple[MemoryStore, Any]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q"), *objects])
    result = Scheduler(store, load_config(None), clock).run_once()
    return store, result


def _reasons(store: MemoryStore, podgroup: str) -> list[tuple[str, str]]:
    status = store.get("podgroups", podgroup, b.NAMESPACE).get("status", {})
    return [(r["reason"], r["message"]) for c in status.get("schedulingConditions", []) for r in c["reasons"]]


@pytest.mark.parametrize(
    "annotations, field, words",
    [
        pytest.param({"gpu-fraction": "1.5"}, "gpu-fraction", "(0, 1]", id="fraction above one"),
        pytest.param({"gpu-fraction": "0"}, "gpu-fraction", "(0, 1]", id="fraction zero"),
        pytest.param({"gpu-fraction": "abc"}, "gpu-fraction", "'abc'", id="fraction not a number"),
        pytest.param(
            {"gpu-fraction": "0.5", "gpu-memory": "1000"},
            "",
            "gpu-fraction and gpu-memory are mutually",
            id="fraction together with memory",
        ),
        pytest.param({"gpu-memory": "-5"}, "gpu-memory", "positive", id="negative memory"),
        pytest.param(
            {"gpu-fraction-num-devices": "2"},
            "gpu-fraction-num-devices",
            "needs gpu-fraction",
            id="devices without a fraction",
        ),
    ],
)
def test_a_bad_fractional_pod_holds_its_podgroup_with_a_reason(
    annotations: dict[str, str], field: str, words: str
) -> None:
    store, result = _cycle(
        b.node("n1", gpu_memory=40000),
        b.podgroup("job", min_member=1),
        b.pod("bad", group="job", annotations=annotations),
        b.pod("good", group="other", fraction=0.5),
        b.podgroup("other"),
    )
    reasons = _reasons(store, "job")
    assert [r for r, _ in reasons] == [constants.REASON_POD_SCHEDULING_ERRORS]
    message = reasons[0][1]
    assert "ns/bad" in message and f"metadata.annotations{'.' if field else ''}{field}" in message
    assert words in message
    assert [op.task.name for op in result.operations] == ["good"]  # the cycle went on for the others


def test_a_memory_request_on_nodes_without_memory_label_waits_with_the_reason() -> None:
    store, result = _cycle(b.node("n1"), b.podgroup("job"), b.pod("p", group="job", annotations={"gpu-memory": "1000"}))
    assert result.operations == []
    assert any("no GPU memory label" in m for _, m in _reasons(store, "job"))


def _choose(*pods: JSON, plugins: tuple[str, ...] = ("gpupack",)) -> tuple[tuple[str, ...], bool, Any]:
    config = load_config(
        {"tiers": [{"plugins": [{"name": "predicates"}, {"name": "proportion"}, *({"name": p} for p in plugins)]}]}
    )
    ssn = b.session(
        b.snapshot([b.node("n1", gpus=2, gpu_memory=40000), b.queue("q"), *pods, b.podgroup("p")]), config=config
    )
    task = b.task(ssn, "p")
    groups, on_releasing = gpu_sharing.choose(ssn, task, 0)
    return groups, on_releasing, task


def test_pack_prefers_the_fullest_shared_gpu() -> None:
    groups, on_releasing, _ = _choose(
        b.pod("a", fraction=0.25, node="n1", gpu_groups=["g1"]),
        b.pod("c", fraction=0.5, node="n1", gpu_groups=["g2"]),
        b.pod("p", fraction=0.25),
    )
    assert (groups, on_releasing) == (("g2",), False)


def test_spread_prefers_a_fresh_gpu() -> None:
    groups, _, _ = _choose(
        b.pod("a", fraction=0.25, node="n1", gpu_groups=["g1"]), b.pod("p", fraction=0.25), plugins=("gpuspread",)
    )
    assert groups != ("g1",) and len(groups) == 1


def test_a_group_fitting_only_with_releasing_memory_pipelines() -> None:
    groups, on_releasing, _ = _choose(
        b.pod("gone", fraction=0.5, node="n1", gpu_groups=["g1"], deleted_at=b.NOW),
        b.pod("stay", fraction=0.25, node="n1", gpu_groups=["g1"]),
        b.pod("busy", gpus=1, node="n1"),
        b.pod("p", fraction=0.5),
    )
    assert (groups, on_releasing) == (("g1",), True)


def test_a_memory_request_gets_its_portion_of_this_node() -> None:
    _, _, task = _choose(b.pod("p", annotations={"gpu-memory": "10001"}))
    assert task.memory_portion == 0.26


def test_new_group_ids_are_stable_and_distinct() -> None:
    first, _, _ = _choose(
        b.pod("p", fraction=0.5, annotations={"gpu-fraction-num-devices": "2"}), plugins=("gpuspread",)
    )
    again, _, _ = _choose(
        b.pod("p", fraction=0.5, annotations={"gpu-fraction-num-devices": "2"}), plugins=("gpuspread",)
    )
    assert first == again and len(set(first)) == 2
