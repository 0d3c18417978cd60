"""The scenario's optional `autoscaler:` (`kai simulate` only): a model of a cluster autoscaler that adds nodes
of one shape while the node-scale-adjuster's scaling pods wait, and may remove the idle ones it added."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kai_scheduler.scenario import cluster
from kai_scheduler.scenario.entry import Entry

AUTOSCALER_FIELDS = (
    "node",
    "scaleUpDelay",
    "scaleDownDelay",
    "maxNodes",
    "gpuMemoryToFractionRatio",
    "coolDown",
)
# The fields of a node's shape: those of a `nodes` entry that describe one plain node.
NODE_SHAPE_FIELDS = ("name", "gpus", "gpuMemory", "cpu", "memory", "pods", "labels", "taints")
DEFAULT_SCALE_UP_DELAY = 120.0
DEFAULT_MAX_NODES = 10
DEFAULT_COOL_DOWN = 60.0


@dataclass(frozen=True, slots=True)
class AutoscalerSpec:
    node_prefix: str
    node_template: dict[str, Any]  # a Node object; the model renames it <prefix>-<i>
    gpus_per_node: int
    scale_up_delay: float
    scale_down_delay: float | None  # None: added nodes stay
    max_nodes: int
    gpu_memory_to_fraction_ratio: float
    cool_down: float


def read(top: Entry, now: float) -> AutoscalerSpec | None:
    e = top.child("autoscaler", AUTOSCALER_FIELDS)
    if e is None:
        return None
    shape = e.child("node", NODE_SHAPE_FIELDS)
    if shape is None:
        raise e.error("node", "required: the shape of an added node (name, gpus, gpuMemory, labels, …)")
    prefix = shape.required_text("name")
    resources, derived = cluster._node_resources(shape)
    labels = {**derived, **shape.text_map("labels")}
    template = cluster._node(shape, prefix, labels, resources, now)
    gpus = int(resources.get("nvidia.com/gpu", "0"))
    if gpus < 1:
        raise shape.error("gpus", "an added node needs at least one GPU (scaling pods ask for whole GPUs)")
    up = e.duration("scaleUpDelay")
    down = e.duration("scaleDownDelay")
    cool = e.duration("coolDown")
    ratio = e.number("gpuMemoryToFractionRatio", 0.1)
    assert ratio is not None
    if not 0 < ratio <= 1:
        raise e.error("gpuMemoryToFractionRatio", f"want a number in (0, 1], got {ratio:g}")
    return AutoscalerSpec(
        node_prefix=prefix,
        node_template=template,
        gpus_per_node=gpus,
        scale_up_delay=up[0] if up is not None else DEFAULT_SCALE_UP_DELAY,
        scale_down_delay=down[0] if down is not None else None,
        max_nodes=e.integer("maxNodes", DEFAULT_MAX_NODES, minimum=1) or DEFAULT_MAX_NODES,
        gpu_memory_to_fraction_ratio=ratio,
        cool_down=cool[0] if cool is not None else DEFAULT_COOL_DOWN,
    )
