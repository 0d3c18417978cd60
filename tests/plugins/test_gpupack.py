"""gpupack: GPU_ORDER scores the used portion of each candidate GPU; a whole free GPU scores 0 (§4, §6)."""

from __future__ import annotations

import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.gpupack import GpuPack
from tests.plugins import builders as b
from tests.plugins.builders import node, pod


def _scores(groups: list[str], *, gpu_memory: int | None = 40000) -> list[float]:
    """GPU_ORDER scores of pending task "p" on node n1 with shared groups g1 (0.5 used) and g2 (0.25 used)."""
    pods = [
        pod("a", fraction=0.5, node="n1", labels={"runai-gpu-group": "g1"}),
        pod("c", fraction=0.25, node="n1", labels={"runai-gpu-group": "g2"}),
        pod("p", fraction=0.25),
    ]
    ssn = b.session(b.snapshot(nodes=[node("n1", gpus=4, gpu_memory=gpu_memory)], pods=pods), GpuPack())
    return ssn.gpu_scores(b.task(ssn, "p"), 0, groups)


@pytest.mark.parametrize(
    "groups, want",
    [
        pytest.param(["g1", "g2"], [0.5, 0.25], id="the used portion of each shared GPU"),
        pytest.param(["fresh"], [0.0], id="a whole free GPU scores 0, so it is taken last"),
        pytest.param(["g2", "fresh", "g1"], [0.25, 0.0, 0.5], id="scores follow the candidate order"),
    ],
)
def test_used_portion(groups: list[str], want: list[float]) -> None:
    assert _scores(groups) == want


def test_without_memory_label_the_default_100_mib_sizes_the_portion() -> None:
    assert _scores(["g1", "g2"], gpu_memory=None) == [0.5, 0.25]


def test_takes_no_arguments() -> None:
    with pytest.raises(ConfigError, match="plugin gpupack: takes no arguments"):
        GpuPack.from_args({"x": "1"})
