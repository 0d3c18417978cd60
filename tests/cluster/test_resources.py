"""resources.gpu_portion: the one rule turning a GPU-memory request into a portion of one GPU (§6)."""

from __future__ import annotations

import pytest

from kai_scheduler.cluster.resources import gpu_portion


@pytest.mark.parametrize(
    "memory, gpu_memory, want",
    [
        pytest.param(20000, 40000, 0.5, id="half a GPU"),
        pytest.param(7, 100, 0.07, id="a quotient whole in hundredths is not rounded up by float error"),
        pytest.param(10001, 40000, 0.26, id="rounded up to the next hundredth"),
        pytest.param(50000, 40000, 1.0, id="more than one GPU holds is at most one GPU"),
        pytest.param(1000, 0, 1.0, id="a GPU of unknown memory is taken whole"),
    ],
)
def test_gpu_portion(memory: int, gpu_memory: float, want: float) -> None:
    assert gpu_portion(memory, gpu_memory) == want
