"""The workload's task shapes for the fragmentation measure: learned from the pods a snapshot holds, or given
in the plugin's `shapes` argument.

A pod's shape is its CPU and memory request, its devices and the GPU per device (a gpu-memory request is sized
against the largest GPU memory of the cluster), and its node constraints (nodeSelector and required node
affinity, which decide the nodes it is eligible for). Learned shapes weigh each shape by how many pods of the
snapshot have it (pending, running, anything the snapshot holds), or with `weighBy: gpus` by that count times
the GPUs each asks; the `maxShapes` heaviest are kept.

Given shapes (`shapes: "1:0.5, 0.5:0.3, 8:0.05, 0:0.15"`): comma-separated `GPUS[xDEVICES]:WEIGHT`, where GPUS
is a whole count (1, 2, 8), a portion of one device below 1 (0.5), or 0 (no GPU); `xDEVICES` repeats a portion
on that many devices. They ask no CPU or memory and may run on every node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kai_scheduler.api.selectors import NodeSelectorTerm
from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY
from kai_scheduler.plugins.gpufrag.measure import Bools, Shapes

TASKS = "tasks"  # weighBy: a shape weighs how many tasks have it
GPUS = "gpus"  # weighBy: … times the GPUs each asks
WEIGHINGS = (TASKS, GPUS)
NO_GPU_WEIGHT = 0.05  # weighBy gpus: a shape without GPUs weighs as one asking this much GPU

Constraint = tuple[tuple[tuple[str, str], ...], tuple[NodeSelectorTerm, ...]]
NO_CONSTRAINT: Constraint = ((), ())
Fields = tuple[float, float, int, float, Constraint]  # a ShapeKey's, as a plain tuple (cheaper to hash)


@dataclass(frozen=True, slots=True)
class ShapeKey:
    cpu: float
    memory: float
    devices: int
    per_device: float
    constraint: Constraint = NO_CONSTRAINT


def fields(task: PodInfo, max_gpu_memory: float) -> Fields:
    """The fields of a task's `ShapeKey`."""
    gpu = task.gpu
    if gpu.whole:
        devices, per_device = gpu.whole, 1.0
    elif gpu.fraction:
        devices, per_device = gpu.num_devices, min(1.0, gpu.fraction)
    elif gpu.memory_mib:
        devices = gpu.num_devices
        per_device = min(1.0, gpu.memory_mib / max_gpu_memory) if max_gpu_memory > 0 else 1.0
    elif task.request[GPU] > 0:
        devices, per_device = round(float(task.request[GPU])), 1.0
    else:
        devices, per_device = 0, 0.0
    pod = task.pod
    selector = tuple(sorted(pod.node_selector.items())) if pod.node_selector else ()
    request = task.request
    return float(request[CPU]), float(request[MEMORY]), devices, per_device, (selector, pod.node_affinity)


def learned(
    tasks: Iterable[PodInfo], max_gpu_memory: float, limit: int, weigh_by: str = TASKS
) -> list[tuple[ShapeKey, float]]:
    """The `limit` heaviest shapes among `tasks` with their weights; ties by shape (deterministic).

    `weigh_by` TASKS: a shape weighs the number of tasks that have it (FGD's popularity). GPUS: that number
    times the GPUs one of them asks (devices × GPU per device), at least `NO_GPU_WEIGHT` (a shape without GPUs
    weighs as one asking that much: its tasks strand GPUs only through the CPU and memory they take)."""
    return heaviest(Counter(fields(t, max_gpu_memory) for t in tasks), limit, weigh_by)


def heaviest(counts: Mapping[Fields, int], limit: int, weigh_by: str = TASKS) -> list[tuple[ShapeKey, float]]:
    """`learned` from the number of tasks of each shape."""
    weighed = [(weight(f, n, weigh_by), f) for f, n in counts.items()]
    ranked = sorted(weighed, key=lambda wf: (-wf[0], *order(wf[1])))
    return [(ShapeKey(*f), w) for w, f in ranked[:limit]]


def weight(f: Fields, count: int, weigh_by: str) -> float:
    """The weight of `count` tasks of shape `f` (see `learned`)."""
    return float(count) * max(f[2] * f[3], NO_GPU_WEIGHT) if weigh_by == GPUS else float(count)


def order(f: Fields) -> tuple[float, float, int, float, str]:
    """Ties between shapes of one weight: by GPU per device, CPU, devices, memory, then constraints."""
    return f[3], f[0], f[2], f[1], repr(f[4])


def parse(text: str) -> list[tuple[ShapeKey, float]]:
    """The `shapes` argument; ValueError with the offending item."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        gpus, sep, weight_text = item.partition(":")
        amount, _, devices_text = gpus.strip().partition("x")
        try:
            value, weight = float(amount), float(weight_text) if sep else float("nan")
            devices = int(devices_text) if devices_text else 1
        except ValueError:
            raise ValueError(f"{item!r}: want GPUS[xDEVICES]:WEIGHT, e.g. 0.5:0.3 or 1:0.5") from None
        if not (weight >= 0 and np.isfinite(weight)) or value < 0 or devices < 1:
            raise ValueError(f"{item!r}: want a GPU amount >= 0, devices >= 1 and a weight >= 0")
        if value >= 1 and (not value.is_integer() or devices_text):
            raise ValueError(f"{item!r}: whole GPUs are a count (1, 2, 8); xDEVICES goes with a portion below 1")
        if value == 0:
            out.append((ShapeKey(0.0, 0.0, 0, 0.0), weight))
        elif value < 1:
            out.append((ShapeKey(0.0, 0.0, devices, value), weight))
        else:
            out.append((ShapeKey(0.0, 0.0, int(value), 1.0), weight))
    if not out or sum(w for _, w in out) <= 0:
        raise ValueError("want at least one shape with a weight above 0")
    return out


def to_shapes(weighted: Sequence[tuple[ShapeKey, float]]) -> Shapes:
    keys = [k for k, _ in weighted]
    return Shapes.of(
        [k.cpu for k in keys],
        [k.memory for k in keys],
        [k.devices for k in keys],
        [k.per_device for k in keys],
        [w for _, w in weighted],
    )


def eligibility(keys: Sequence[ShapeKey], nodes: Sequence[NodeInfo]) -> Bools | None:
    """(nodes, shapes): the nodes each shape's constraints admit; None when no shape has constraints."""
    if all(k.constraint == NO_CONSTRAINT for k in keys):
        return None
    out = np.ones((len(nodes), len(keys)), dtype=bool)
    columns: dict[Constraint, Bools] = {}
    for j, key in enumerate(keys):
        if key.constraint == NO_CONSTRAINT:
            continue
        column = columns.get(key.constraint)
        if column is None:
            column = columns[key.constraint] = np.fromiter(
                (_admits(key.constraint, n) for n in nodes), dtype=bool, count=len(nodes)
            )
        out[:, j] = column
    return out


def _admits(constraint: Constraint, node: NodeInfo) -> bool:
    selector, terms = constraint
    labels = node.labels
    if any(labels.get(k) != v for k, v in selector):
        return False
    return not terms or any(term.matches(labels, node.name) for term in terms)
