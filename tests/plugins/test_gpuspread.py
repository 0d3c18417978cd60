"""gpuspread: GPU_ORDER scores 1 - the used portion of each candidate GPU; a whole free GPU scores 1 (§4, §6)."""

from __future__ import annotations

import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.gpupack import GpuPack
from kai_scheduler.plugins.gpuspread import GpuSpread
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

PODS = [
    pod("a", fraction=0.5, node="n1", labels={"runai-gpu-group": "g1"}),
    pod("c", fraction=0.75, node="n1", labels={"runai-gpu-group": "g2"}),
    pod("p", fraction=0.25),
]


@pytest.mark.parametrize(
    "groups, want",
    [
        pytest.param(["g1", "g2"], [0.5, 0.25], id="one minus the used portion"),
        pytest.param(["fresh"], [1.0], id="a whole free GPU scores 1, so it is taken first"),
    ],
)
def test_free_portion(groups: list[str], want: list[float]) -> None:
    ssn = b.session(b.snapshot(nodes=[node("n1", gpus=4, gpu_memory=40000)], pods=PODS), GpuSpread())
    assert ssn.gpu_scores(b.task(ssn, "p"), 0, groups) == want


def test_pack_and_spread_scores_add_up_to_one() -> None:
    snap = b.snapshot(nodes=[node("n1", gpus=4, gpu_memory=40000)], pods=PODS)
    both = b.session(snap, GpuPack(), GpuSpread())
    assert both.gpu_scores(b.task(both, "p"), 0, ["g1", "g2", "fresh"]) == [1.0, 1.0, 1.0]


def test_takes_no_arguments() -> None:
    with pytest.raises(ConfigError, match="plugin gpuspread: takes no arguments"):
        GpuSpread.from_args({"x": "1"})
