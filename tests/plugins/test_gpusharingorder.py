"""gpusharingorder: +10000 on nodes with a shared GPU the fractional task fits in (§4, §6)."""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.api.pod import Pod
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.gpusharingorder import GpuSharingOrder
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

NODES = [
    node("empty", gpu_memory=40000),
    node("half", gpu_memory=40000),
    node("full", gpu_memory=40000),
    node("released", gpu_memory=40000),
]
SHARERS = [
    pod("h", fraction=0.5, node="half", labels={"runai-gpu-group": "g1"}),
    pod("f", fraction=0.9, node="full", labels={"runai-gpu-group": "g2"}),
    pod("r", fraction=0.5, node="released", labels={"runai-gpu-group": "g3"}, deleted_at=0),
]


def _scores(task: Pod) -> dict[str, float]:
    ssn = b.session(b.snapshot(nodes=NODES, pods=[*SHARERS, task]), GpuSharingOrder())
    got = ssn.node_scores(b.task(ssn, task.name), ssn.all_nodes())
    return {n.name: float(got[n.row]) for n in ssn.snapshot.nodes}


@pytest.mark.parametrize(
    "task, want",
    [
        pytest.param(
            pod("p", fraction=0.25),
            {"empty": 0.0, "half": scores.GPU_SHARING, "full": 0.0, "released": 0.0},
            id="only the node whose shared GPU has room; a GPU whose sharers all leave is not shared",
        ),
        pytest.param(
            pod("p", fraction=0.6),
            {"empty": 0.0, "half": 0.0, "full": 0.0, "released": 0.0},
            id="no node when the task does not fit any shared GPU",
        ),
        pytest.param(
            pod("p", gpu_memory=20000),
            {"empty": 0.0, "half": scores.GPU_SHARING, "full": 0.0, "released": 0.0},
            id="a memory request fits by MiB",
        ),
    ],
)
def test_shared_gpu_bonus(task: Pod, want: dict[str, float]) -> None:
    assert _scores(task) == want


def test_whole_gpu_and_cpu_tasks_are_not_scored() -> None:
    ssn = b.session(b.snapshot(nodes=NODES, pods=[*SHARERS, pod("p", gpus=1)]), GpuSharingOrder())
    assert np.all(ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes()) == 0)


def test_a_group_opened_in_the_session_counts_at_once() -> None:
    snap = b.snapshot(
        nodes=[node("n1", gpu_memory=40000), node("n2", gpu_memory=40000)],
        pods=[pod("first", fraction=0.5), pod("second", fraction=0.25)],
    )
    ssn = b.session(snap, GpuSharingOrder())
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "first"), "n2", ("g-new",))
    got = ssn.node_scores(b.task(ssn, "second"), ssn.all_nodes())
    assert got.tolist() == [0.0, scores.GPU_SHARING]
    stmt.discard()
    assert ssn.node_scores(b.task(ssn, "second"), ssn.all_nodes()).tolist() == [0.0, 0.0]


def test_takes_no_arguments() -> None:
    with pytest.raises(ConfigError, match="plugin gpusharingorder: takes no arguments"):
        GpuSharingOrder.from_args({"x": "1"})
