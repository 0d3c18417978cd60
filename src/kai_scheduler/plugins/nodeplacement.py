"""nodeplacement: bin-pack or spread tasks over nodes (§4, §6; KAI `plugins/nodeplacement/`).

The resource R that decides is GPU for a task that asks for any GPU (whole or shared), CPU otherwise; the
arguments `gpu` and `cpu` choose the strategy for each kind of task.

- binpack: NODE_PRE_ORDER takes, over the candidate nodes that have R (allocatable R > 0), the least and the
  most non-allocated R; NODE_ORDER scores `9 * (1 - (nonAlloc - min)/(max - min))` (9 when min = max, 0 on a
  node without R), so the fullest node that still fits wins and empty nodes stay empty for big jobs.
- spread: NODE_ORDER scores `nonAlloc / total`, the emptiest node first. The GPU total is the
  `nvidia.com/gpu.count` label when present (it counts devices hidden by MIG or sharing), else allocatable.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo, PodUID
from kai_scheduler.cluster.resources import CPU, GPU, Vector
from kai_scheduler.framework import points
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.base import PluginBase


class Strategy(enum.Enum):
    BINPACK = "binpack"
    SPREAD = "spread"


@dataclass(frozen=True, slots=True)
class PlacementConfig:
    gpu: Strategy = Strategy.BINPACK
    cpu: Strategy = Strategy.BINPACK


@dataclass(frozen=True, slots=True)
class _Range:
    """Binpack's min and max non-allocated R over the candidates that have R, for one task."""

    task: PodUID
    low: float
    high: float


class NodePlacement(PluginBase):
    name = "nodeplacement"
    _arrays: NodeArrays
    _totals: dict[int, Vector]  # per session: R column → each node's total R for spread
    _has: dict[int, points.Mask]  # per session: R column → nodes with allocatable R
    _range: _Range | None

    def __init__(self, config: PlacementConfig) -> None:
        self.config = config

    @classmethod
    def from_args(cls, arguments: Mapping[str, str]) -> Self:
        for key in sorted(arguments):
            if key not in ("gpu", "cpu"):
                raise ConfigError(f"plugin nodeplacement: unknown argument {key!r}; known: cpu, gpu")
        return cls(PlacementConfig(gpu=_strategy(arguments, "gpu"), cpu=_strategy(arguments, "cpu")))

    def on_session_open(self, ssn: Session) -> None:
        snapshot = ssn.snapshot
        self._arrays = snapshot.arrays
        self._totals, self._has = snapshot.node_memo.get(
            "nodeplacement.totals", lambda: _node_totals(snapshot.nodes, snapshot.arrays)
        )
        self._range = None
        ssn.add(points.NODE_PRE_ORDER, self.node_pre_order)
        ssn.add(points.NODE_ORDER, self.node_order)

    def node_pre_order(self, task: PodInfo, candidates: points.Mask) -> None:
        """Record binpack's min/max non-allocated R over the candidates that have R."""
        column, strategy = self._decider(task)
        self._range = None
        if strategy is Strategy.SPREAD:
            return
        free = self._non_allocated(column)[candidates & self._has[column]]
        if free.size:
            self._range = _Range(task.uid, float(free.min()), float(free.max()))

    def node_order(self, task: PodInfo, candidates: points.Mask) -> points.Scores | None:
        column, strategy = self._decider(task)
        free = self._non_allocated(column)
        if strategy is Strategy.SPREAD:
            total = self._totals[column]
            return np.divide(free, total, out=np.zeros_like(free), where=total > 0)
        if self._range is None or self._range.task != task.uid:
            self.node_pre_order(task, candidates)
        if self._range is None:
            return None
        has_resource = self._has[column]
        low, high = self._range.low, self._range.high
        if high == low:
            return np.where(has_resource, scores.MAX_HIGH_DENSITY, 0.0)
        packed = scores.MAX_HIGH_DENSITY * (1.0 - (free - low) / (high - low))
        return np.where(has_resource, packed, 0.0)

    def _decider(self, task: PodInfo) -> tuple[int, Strategy]:
        if task.gpu.is_gpu or task.request[GPU] > 0:
            return GPU, self.config.gpu
        return CPU, self.config.cpu

    def _non_allocated(self, column: int) -> Vector:
        free: Vector = self._arrays.free[:, column]
        return free


def _strategy(arguments: Mapping[str, str], key: str) -> Strategy:
    raw = arguments.get(key, Strategy.BINPACK.value)
    try:
        return Strategy(raw)
    except ValueError:
        message = f"plugin nodeplacement argument {key}: expected binpack or spread, got {raw!r}"
        raise ConfigError(message) from None


def _node_totals(nodes: list[NodeInfo], arrays: NodeArrays) -> tuple[dict[int, Vector], dict[int, points.Mask]]:
    """Per R column: each node's total R for spread, and the nodes with allocatable R (read-only; kept in the
    snapshot's node memo, since they depend on the node objects only)."""
    totals = {GPU: _gpu_totals(nodes, arrays), CPU: arrays.allocatable[:, CPU].copy()}
    has = {column: arrays.allocatable[:, column] > 0 for column in (GPU, CPU)}
    for array in (*totals.values(), *has.values()):
        array.flags.writeable = False
    return totals, has


def _gpu_totals(nodes: list[NodeInfo], arrays: NodeArrays) -> Vector:
    """Devices per node: the `nvidia.com/gpu.count` label when it parses, else allocatable GPUs."""
    totals: Vector = arrays.allocatable[:, GPU].copy()
    for node in nodes:
        raw = node.labels.get(constants.LABEL_GPU_COUNT)
        if raw is None:
            continue
        try:
            totals[node.row] = float(int(raw))
        except ValueError:
            continue
    return totals
