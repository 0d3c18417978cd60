"""nodeplacement: binpack and spread node scores, exactly as §4 states them."""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.nodeplacement import NodePlacement, PlacementConfig, Strategy
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

# Non-allocated GPUs: full 2, half 4, empty 8; cpu-node has no GPU.
GPU_NODES = [node("empty"), node("full"), node("half"), node("cpu-node", gpus=0)]
GPU_USERS = [pod("u1", gpus=6, node="full"), pod("u2", gpus=4, node="half")]


def scores(
    nodes: list[Node], pods: list[Pod], *, args: dict[str, str] | None = None, candidates: list[str] | None = None
) -> dict[str, float]:
    """Summed node scores of pending pod "p" over the candidate nodes (all by default)."""
    ssn = b.session(b.snapshot(nodes=nodes, pods=pods), NodePlacement.from_args(args or {}))
    infos = ssn.snapshot.nodes
    mask = ssn.all_nodes() if candidates is None else np.array([n.name in candidates for n in infos])
    got = ssn.node_scores(b.task(ssn, "p"), mask)
    return {n.name: round(float(got[n.row]), 6) for n in infos if mask[n.row]}


@pytest.mark.parametrize(
    "pods, args, candidates, want",
    [
        pytest.param(
            [pod("p", gpus=1)],
            {},
            None,
            {"empty": 0.0, "full": 9.0, "half": 6.0, "cpu-node": 0.0},
            id="binpack: fullest 9, intermediate by range, emptiest 0, no GPU 0",
        ),
        pytest.param(
            [pod("p", gpus=1)],
            {},
            ["empty", "half"],
            {"empty": 0.0, "half": 9.0},
            id="binpack: min and max over the candidates only",
        ),
        pytest.param(
            [pod("p", gpus=1)],
            {},
            ["full", "cpu-node"],
            {"full": 9.0, "cpu-node": 0.0},
            id="binpack: one node with the resource (min = max) scores 9",
        ),
        pytest.param(
            [pod("p", fraction=0.5)],
            {},
            None,
            {"empty": 0.0, "full": 9.0, "half": 6.0, "cpu-node": 0.0},
            id="binpack: a fractional task packs by GPU",
        ),
        pytest.param(
            [pod("p", gpus=1)],
            {"gpu": "spread"},
            None,
            {"empty": 1.0, "full": 0.25, "half": 0.5, "cpu-node": 0.0},
            id="spread: non-allocated over total GPUs",
        ),
        pytest.param(
            [pod("p", gpus=1, node="")],
            {"gpu": "spread", "cpu": "binpack"},
            ["full"],
            {"full": 0.25},
            id="spread: the gpu argument decides for a GPU task",
        ),
    ],
)
def test_gpu_tasks(pods: list[Pod], args: dict[str, str], candidates: list[str] | None, want: dict[str, float]) -> None:
    assert scores(GPU_NODES, [*GPU_USERS, *pods], args=args, candidates=candidates) == want


CPU_NODES = [node("c16", cpu="16", gpus=0), node("c32", cpu="32", gpus=0), node("c64", cpu="64", gpus=0)]


@pytest.mark.parametrize(
    "args, want",
    [
        pytest.param({}, {"c16": 9.0, "c32": 6.0, "c64": 0.0}, id="binpack a CPU-only task by CPU"),
        pytest.param({"cpu": "spread"}, {"c16": 1.0, "c32": 1.0, "c64": 1.0}, id="spread by CPU fraction free"),
        pytest.param({"gpu": "spread"}, {"c16": 9.0, "c32": 6.0, "c64": 0.0}, id="the gpu argument does not apply"),
    ],
)
def test_cpu_tasks(args: dict[str, str], want: dict[str, float]) -> None:
    assert scores(CPU_NODES, [pod("p", cpu="1")], args=args) == want


def test_releasing_counts_as_non_allocated() -> None:
    pods = [pod("r", gpus=6, node="full", deleted_at=0), pod("u2", gpus=4, node="half"), pod("p", gpus=1)]
    assert scores(GPU_NODES[:3], pods) == {"empty": 0.0, "full": 0.0, "half": 9.0}


def test_spread_gpu_total_from_the_count_label() -> None:
    labelled = node("n1", gpus=8, labels={constants.LABEL_GPU_COUNT: "16"})
    assert scores([labelled], [pod("p", gpus=1)], args={"gpu": "spread"}) == {"n1": 0.5}


@pytest.mark.parametrize(
    "args, want",
    [
        pytest.param({}, PlacementConfig(Strategy.BINPACK, Strategy.BINPACK), id="binpack by default"),
        pytest.param(
            {"gpu": "spread", "cpu": "binpack"},
            PlacementConfig(Strategy.SPREAD, Strategy.BINPACK),
            id="each resource set on its own",
        ),
    ],
)
def test_arguments(args: dict[str, str], want: PlacementConfig) -> None:
    assert NodePlacement.from_args(args).config == want


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            {"gpu": "x"},
            "plugin nodeplacement argument gpu: expected binpack or spread, got 'x'",
            id="unknown strategy",
        ),
        pytest.param(
            {"memory": "spread"},
            "plugin nodeplacement: unknown argument 'memory'; known: cpu, gpu",
            id="unknown argument",
        ),
    ],
)
def test_bad_arguments(args: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        NodePlacement.from_args(args)
    assert str(err.value) == message
