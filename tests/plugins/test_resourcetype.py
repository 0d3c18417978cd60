"""resourcetype: +10 for a CPU-only task on a CPU-only node, nothing otherwise."""

from __future__ import annotations

import pytest

from kai_scheduler.api.pod import Pod
from kai_scheduler.plugins.resourcetype import ResourceType
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

NODES = [node("cpu", gpus=0), node("gpu", gpus=8)]


@pytest.mark.parametrize(
    "task, want",
    [
        pytest.param(pod("p", cpu="2"), {"cpu": 10.0, "gpu": 0.0}, id="CPU-only task prefers a CPU-only node"),
        pytest.param(pod("p", gpus=1), {"cpu": 0.0, "gpu": 0.0}, id="GPU task scores nothing"),
        pytest.param(pod("p", fraction=0.5), {"cpu": 0.0, "gpu": 0.0}, id="a fractional GPU task is a GPU task"),
    ],
)
def test_scores(task: Pod, want: dict[str, float]) -> None:
    ssn = b.session(b.snapshot(nodes=NODES, pods=[task]), ResourceType())
    got = ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())
    assert {n.name: float(got[n.row]) for n in ssn.snapshot.nodes} == want
