"""The FGD fragmentation measure on small nodes whose answers are worked out by hand in each case's id."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.plugins.gpufrag import measure
from kai_scheduler.plugins.gpufrag.measure import Shapes

BIG = 1e9  # CPU and memory plenty: only GPUs decide


def shapes(*rows: tuple[float, float, float], cpu: float = 0.0) -> Shapes:
    """(devices, per device, weight) rows, asking `cpu` millicores and no memory."""
    return Shapes.of(
        [cpu] * len(rows), [0.0] * len(rows), [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    )


def frag(
    s: Shapes, gpus: list[float], cpu: float = BIG, memory: float = BIG, eligible: list[bool] | None = None
) -> float:
    elig = None if eligible is None else np.array([eligible])
    return float(measure.expected(s, np.array([gpus]), np.array([cpu]), np.array([memory]), elig)[0])


@pytest.mark.parametrize(
    "s, gpus, want",
    [
        pytest.param(
            shapes((1, 0.5, 1)), [1.0, 0.3], 0.3, id="half-GPU task: the 0.3 GPU is stranded, the free one is not"
        ),
        pytest.param(shapes((1, 0.5, 1)), [0.5, 0.6], 0.0, id="half-GPU task: 0.5 and 0.6 both hold it"),
        pytest.param(shapes((1, 1, 1)), [1.0, 0.3, 0.7], 1.0, id="whole-GPU task: partly used GPUs 0.3 + 0.7"),
        pytest.param(
            shapes((2, 1, 1)),
            [1.0, 0.3, 0.7],
            2.0,
            id="2-GPU task does not fit (one whole GPU): all free GPU 1 + 0.3 + 0.7",
        ),
        pytest.param(shapes((0, 0, 1)), [0.2, 1.0], 0.0, id="CPU-only task that fits strands nothing"),
        pytest.param(
            shapes((1, 0.5, 1), (1, 1, 3)), [1.0, 0.3], 0.3, id="mix 1/4 half-GPU (0.3) and 3/4 whole-GPU (0.3): 0.3"
        ),
        pytest.param(
            shapes((1, 0.25, 1), (8, 1, 1)),
            [1.0, 1.0, 0.5, 0.1],
            (0.1 + 2.6) / 2,
            id="quarter task strands 0.1; 8-GPU task fits nowhere: all 2.6; half each",
        ),
        pytest.param(shapes((1, 0.5, 1)), [0.0, 0.0], 0.0, id="a full node has nothing to strand"),
    ],
)
def test_expected_fragmentation(s: Shapes, gpus: list[float], want: float) -> None:
    assert frag(s, gpus) == pytest.approx(want)


def test_a_task_short_of_cpu_strands_every_free_gpu() -> None:
    s = shapes((1, 0.5, 1), cpu=4000)
    assert frag(s, [1.0, 0.3], cpu=3000) == pytest.approx(1.3)
    assert frag(s, [1.0, 0.3], cpu=4000) == pytest.approx(0.3)


def test_a_shape_not_eligible_for_the_node_strands_every_free_gpu() -> None:
    s = shapes((1, 0.5, 1), (1, 1, 1))
    assert frag(s, [1.0, 0.3], eligible=[False, True]) == pytest.approx((1.3 + 0.3) / 2)


def test_padding_slots_count_as_full_gpus() -> None:
    s = shapes((1, 0.5, 1), (2, 1, 1))
    assert frag(s, [1.0, 0.3, 0.0, 0.0]) == frag(s, [1.0, 0.3])


def test_batched_over_nodes_and_placements() -> None:
    s = shapes((1, 0.5, 1))
    gpus = np.array([[[1.0, 0.3], [0.5, 0.5]], [[0.2, 0.2], [1.0, 1.0]]])  # 2 nodes × 2 placements
    out = measure.expected(s, gpus, np.full((2, 2), BIG), np.full((2, 2), BIG))
    assert out == pytest.approx(np.array([[0.3, 0.0], [0.4, 0.0]]))


def test_weights_are_normalised_and_levels_shared() -> None:
    s = Shapes.of([0, 0, 0], [0, 0, 0], [1, 1, 0], [0.5, 0.5, 0.7], [2, 2, 4])
    assert s.weight == pytest.approx([0.25, 0.25, 0.5])
    assert list(s.levels) == [0.0, 0.5]  # no GPU: its per-device amount is 0 whatever was given


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    rows=st.integers(1, 40),
    shapes_count=st.integers(1, 70),
    seed=st.integers(0, 2**16),
)
def test_a_row_weighs_the_same_alone_and_in_any_batch(rows: int, shapes_count: int, seed: int) -> None:
    """`measure.weigh` gives each row the same sum bit for bit whatever rows come with it and whatever the
    array's layout (BLAS's `@` does not), and that sum is the weighted sum."""
    rng = np.random.default_rng(seed)
    values = rng.random((rows, shapes_count)) * rng.choice([0.0, 0.19, 1.0, 7.0], (rows, shapes_count))
    weight = rng.random(shapes_count)
    weight /= weight.sum()
    batch = measure.weigh(values, weight)
    assert np.array_equal(batch, measure.weigh(np.asfortranarray(values), weight))
    assert np.array_equal(batch[::-1], measure.weigh(values[::-1], weight))
    for i in range(rows):
        assert batch[i] == measure.weigh(values[i : i + 1], weight)[0] == measure.weigh(values[i], weight)
    assert batch == pytest.approx(values @ weight, rel=1e-12, abs=1e-12)
