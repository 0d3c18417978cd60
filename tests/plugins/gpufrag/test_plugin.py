"""gpufrag: the node and the GPU where the expected fragmentation grows least win; hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.gpufrag import shapes
from kai_scheduler.plugins.gpufrag.plugin import FRAGMENTATION, GpuFrag
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

GROUP = "runai-gpu-group"


def sharer(name: str, fraction: float, on: str, group: str) -> object:
    return pod(name, fraction=fraction, node=on, labels={GROUP: group})


def open_session(pods: list[object], nodes: list[object], shapes: str | None) -> Session:
    plugin = GpuFrag.from_args({} if shapes is None else {"shapes": shapes})
    return b.session(b.snapshot(nodes=nodes, pods=pods), plugin)  # type: ignore[arg-type]


def node_scores(ssn: Session, task: str) -> list[float]:
    return [float(s) for s in ssn.node_scores(b.task(ssn, task), ssn.all_nodes())]


def test_a_half_gpu_task_fills_the_gpu_a_whole_gpu_workload_cannot_use() -> None:
    # shapes: whole GPUs only. n1 [0.5 free]: 0.5 stranded now, 0 after: Δ = -0.5. n2 [1.0]: 0 now, 0.5 after.
    ssn = open_session(
        [sharer("a", 0.5, "n1", "g1"), pod("p", fraction=0.5)],
        [node("n1", gpus=1, gpu_memory=40000), node("n2", gpus=1, gpu_memory=40000)],
        "1:1",
    )
    assert node_scores(ssn, "p") == [FRAGMENTATION, 0.0]


def test_unlike_packing_it_keeps_a_gpu_that_still_holds_the_common_shape() -> None:
    # shapes: half GPUs. n1 [0.6]: 0 now, 0.3 after (Δ 0.3); n2 [1.0]: 0 now, 0 after (0.7 holds a half).
    ssn = open_session(
        [sharer("a", 0.4, "n1", "g1"), pod("p", fraction=0.3)],
        [node("n1", gpus=1, gpu_memory=40000), node("n2", gpus=1, gpu_memory=40000)],
        "0.5:1",
    )
    assert node_scores(ssn, "p") == [0.0, FRAGMENTATION]


def test_scores_scale_between_the_least_and_the_most_growth() -> None:
    # shapes: half GPUs; task 0.3. n1 [0.6] Δ 0.3; n2 [1.0] Δ 0; n3 [0.5, 0.7] Δ: best on 0.5 → [0.2, 0.7] 0.2
    pods = [
        sharer("a", 0.4, "n1", "g1"),
        sharer("b", 0.5, "n3", "g3"),
        sharer("c", 0.3, "n3", "g4"),
        pod("p", fraction=0.3),
    ]
    ssn = open_session(pods, [node(f"n{i}", gpus=1 if i < 3 else 2, gpu_memory=40000) for i in (1, 2, 3)], "0.5:1")
    scores = node_scores(ssn, "p")
    assert scores == pytest.approx([0.0, FRAGMENTATION, FRAGMENTATION * (0.3 - 0.2) / 0.3])


def test_gpu_order_takes_the_device_that_strands_least() -> None:
    # shapes: half GPUs; task 0.3 on n1 with g1 [0.6 free], g2 [0.3 free] and one whole free GPU.
    # Now: 0.3 stranded (g2). g1 → [0.3, 0.3, 1]: 0.6 (Δ +0.3); g2 → [0.6, 0, 1]: 0 (Δ -0.3); fresh → Δ 0.
    pods = [sharer("a", 0.4, "n1", "g1"), sharer("b", 0.7, "n1", "g2"), pod("p", fraction=0.3)]
    ssn = open_session(pods, [node("n1", gpus=3, gpu_memory=40000)], "0.5:1")
    scores = ssn.gpu_scores(b.task(ssn, "p"), 0, ["g1", "g2", "whole-gpu/0"])
    assert scores == pytest.approx([-0.3, 0.3, 0.0])


def test_whole_gpu_tasks_prefer_the_node_whose_free_gpus_the_workload_cannot_fill_anyway() -> None:
    # shapes: 2 whole GPUs (1/2) and 1 whole GPU (1/2); task 1 GPU. n1 [1, 1]: 0 now; after [1]: 2-GPU shape
    # no longer fits: 1 stranded / 2 = 0.5. n2 [1, 1, 1]: 0 now, [1, 1]: 0 after. n2 wins.
    ssn = open_session([pod("p", gpus=1)], [node("n1", gpus=2), node("n2", gpus=3)], "2:1, 1:1")
    assert node_scores(ssn, "p") == [0.0, FRAGMENTATION]


def test_learned_shapes_come_from_the_snapshot_pods() -> None:
    # Learned: shapes of a (0.5 GPU, 1 CPU) and p (1 GPU, 1 CPU), half each; same answer as given "0.5:1, 1:1"
    pods = [sharer("a", 0.5, "n1", "g1"), pod("p", gpus=1)]
    nodes = [node("n1", gpus=2, gpu_memory=40000), node("n2", gpus=1, gpu_memory=40000)]
    learned = node_scores(open_session(pods, nodes, None), "p")
    given = node_scores(open_session(pods, nodes, "0.5:1, 1:1"), "p")
    assert learned == given


def weighted_session(weigh_by: str) -> Session:
    # 30 pending 0.1-GPU tasks, one whole-GPU task, the 0.5 task p, and a 0.45 sharer on n2 (0.55 left).
    pods = [pod(f"b{i}", fraction=0.1) for i in range(30)]
    pods += [pod("w", gpus=1), pod("p", fraction=0.5), sharer("s", 0.45, "n2", "g1")]
    nodes = [node("n1", gpus=1, gpu_memory=40000), node("n2", gpus=1, gpu_memory=40000)]
    plugin = GpuFrag.from_args({"weighBy": weigh_by})
    return b.session(b.snapshot(nodes=nodes, pods=pods), plugin)  # type: ignore[arg-type]


def test_weighing_shapes_by_tasks_protects_the_many_small_tasks() -> None:
    # Shapes 0.1 ×30, 1 ×1, 0.5 ×1, 0.45 ×1 (weights over 33). p on n1 [1.0 → 0.5]: the whole-GPU shape no
    # longer fits: +0.5 × 1. p on n2 [0.55 → 0.05]: 0.1, 0.5 and 0.45 strand 0.05 (+0.05 × 32), the whole-GPU
    # shape strands 0.05 instead of 0.55 (−0.5 × 1): 1.1 against 0.5, n1 wins.
    ssn = weighted_session("tasks")
    assert node_scores(ssn, "p") == [FRAGMENTATION, 0.0]


def test_weighing_shapes_by_gpus_protects_the_gpus_they_ask() -> None:
    # The same, weights count × GPUs: 0.1 → 3, 1 → 1, 0.5 → 0.5, 0.45 → 0.45. n1: +0.5 × 1; n2: 0.05 × (3 + 0.5
    # + 0.45) − 0.5 × 1 = −0.3025: n2 wins.
    ssn = weighted_session("gpus")
    assert node_scores(ssn, "p") == [0.0, FRAGMENTATION]


def test_state_follows_allocations_in_the_session() -> None:
    # shapes: whole GPUs. After a 0.5 task lands on n2's free GPU, n2 strands 0.5 and a second 0.5 task goes there.
    ssn = open_session(
        [pod("p", fraction=0.5), pod("q", fraction=0.5)],
        [node("n1", gpus=1, gpu_memory=40000), node("n2", gpus=1, gpu_memory=40000)],
        "1:1",
    )
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "p"), "n2", ("g-new",))
    assert node_scores(ssn, "q") == [0.0, FRAGMENTATION]
    stmt.discard()
    assert node_scores(ssn, "q") == [FRAGMENTATION, FRAGMENTATION]


@pytest.mark.parametrize(
    "arguments, message",
    [
        pytest.param({"shape": "1:1"}, "unknown argument 'shape'", id="unknown argument"),
        pytest.param({"shapes": "half:1"}, "shapes: 'half:1'", id="not a number"),
        pytest.param({"shapes": "1.5:1"}, "whole GPUs are a count", id="whole GPUs are whole"),
        pytest.param({"shapes": "1:0"}, "weight above 0", id="no weight"),
        pytest.param({"maxShapes": "0"}, "maxShapes: expected a whole number above 0", id="maxShapes"),
        pytest.param({"weighBy": "pods"}, "weighBy: expected one of tasks, gpus, got 'pods'", id="weighBy"),
        pytest.param(
            {"weighBy": "gpus", "shapes": "1:1"}, "weighBy: applies to learned shapes", id="weighBy with shapes"
        ),
    ],
)
def test_bad_arguments_fail_at_load(arguments: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GpuFrag.from_args(arguments)


def test_candidates_only_are_scored() -> None:
    ssn = open_session([pod("p", gpus=1)], [node("n1", gpus=2), node("n2", gpus=3)], "1:1")
    scores = ssn.node_scores(b.task(ssn, "p"), np.array([False, True]))
    assert scores[0] == 0.0


def test_learned_weights_by_tasks_and_by_gpus() -> None:
    # Two 0.5-GPU tasks, one 2-GPU task, one CPU-only task: by tasks 2, 1, 1; by GPUs 2 × 0.5, 1 × 2, and the
    # CPU-only shape as if it asked NO_GPU_WEIGHT.
    pods = [pod("h1", fraction=0.5), pod("h2", fraction=0.5), pod("w", gpus=2), pod("c")]
    snap = b.snapshot(nodes=[node("n1", gpus=2, gpu_memory=40000)], pods=pods)
    tasks = list(snap.tasks.values())

    def by(weigh_by: str) -> dict[tuple[int, float], float]:
        learned = shapes.learned(tasks, snap.max_gpu_memory, 64, weigh_by)
        return {(k.devices, k.per_device): w for k, w in learned}

    assert by(shapes.TASKS) == {(1, 0.5): 2.0, (2, 1.0): 1.0, (0, 0.0): 1.0}
    assert by(shapes.GPUS) == pytest.approx({(1, 0.5): 1.0, (2, 1.0): 2.0, (0, 0.0): shapes.NO_GPU_WEIGHT})
    assert [k.devices for k, _ in shapes.learned(tasks, snap.max_gpu_memory, 1, shapes.GPUS)] == [2]  # heaviest
