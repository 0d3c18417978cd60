"""nodeavailability: +1000 where the task fits on idle now, not only after releasing pods are gone."""

from __future__ import annotations

import pytest

from kai_scheduler.api.pod import Pod
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.nodeavailability import NodeAvailability
from tests.plugins import builders as b
from tests.plugins.builders import node, pod


@pytest.mark.parametrize(
    "pods, want",
    [
        pytest.param([pod("p", gpus=4)], 1000.0, id="fits on idle"),
        pytest.param(
            [pod("r", gpus=6, node="n1", deleted_at=0), pod("p", gpus=4)], 0.0, id="fits only counting releasing"
        ),
        pytest.param([pod("r", cpu="62", node="n1"), pod("p", cpu="4")], 0.0, id="every resource is compared"),
        pytest.param([pod("p", fraction=0.5)], 1000.0, id="a shared-GPU task is compared on non-GPU resources"),
    ],
)
def test_scores(pods: list[Pod], want: float) -> None:
    ssn = b.session(b.snapshot(nodes=[node("n1", gpus=8)], pods=pods), NodeAvailability())
    assert ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())[0] == want


def test_pipelined_task_beyond_releasing_draws_on_idle() -> None:
    pods = [pod("r", gpus=2, node="n1", deleted_at=0), pod("q", gpus=4), pod("p", gpus=6)]
    ssn = b.session(b.snapshot(nodes=[node("n1", gpus=8)], pods=pods), NodeAvailability())
    assert ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())[0] == 1000.0
    ssn.statement().pipeline(b.task(ssn, "q"), "n1")  # takes the 2 releasing GPUs and 2 idle ones
    assert ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())[0] == 0.0


def test_arguments_are_rejected() -> None:
    with pytest.raises(ConfigError, match="takes no arguments"):
        NodeAvailability.from_args({"x": "1"})
