"""A large, busy GPU cluster for `bench_scale.py`, built as Kubernetes JSON; every count is in proportion to `nodes`.

At 4,000 nodes: 4,000 nodes x 8 GPUs in 8 zones of 32 racks of 16 nodes (a Topology CR `dc`: zone, rack,
hostname); 2,000 leaf queues under 40 departments (quota 8 GPUs a leaf, over-quota weights 1 to 3, a limit on
one leaf in 10); 30,000 running PodGroups holding 140,000 pods:

- GPU gangs of 1, 2, 4, 8, 16, 24 and 32 one-GPU pods, packed node by node, each queue's on neighbouring nodes;
  one gang in 8 of 16 or more pods has two subgroups (a leader and workers); one in 4 has a topology constraint
  (required rack for gangs of 8 or fewer, preferred zone above);
- on one node in 10, pods of half a GPU (KAI's `gpu-fraction` annotation, a `runai-gpu-group` label per shared
  GPU), 16 a node, one PodGroup each;
- the rest CPU-only pods (gangs of the same sizes, 500m and 1Gi a pod) spread over every node.

`free=True` leaves the same number of GPUs free on each whole-GPU node, at least FREE_GPUS in all where 7 a node
are enough (one a node at 4,000 nodes: room for the new work); `free=False` fills every GPU, so
that a job in a queue under its quota can only start by reclaiming others' over-quota GPUs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import workloads as w

from kai_scheduler.api import constants

JSON = dict[str, object]
SIZES = (1, 2, 4, 8, 16, 24, 32)
SIZE_WEIGHTS = (0.36, 0.2, 0.15, 0.12, 0.09, 0.05, 0.03)
NODES_PER_RACK, RACKS_PER_ZONE = 16, 32
FRACTION_EVERY = 10  # one node in 10 holds half-GPU pods
QUEUES_PER_NODE, GROUPS_PER_NODE, PODS_PER_NODE = 0.5, 7.5, 35
LEAVES_PER_DEPARTMENT = 50
LEAF_QUOTA = 8.0
FREE_GPUS = 1200  # with `free`: at least this many GPUs left free, the same count a node on every whole-GPU node


@dataclass(frozen=True)
class Sizes:
    nodes: int
    queues: int
    departments: int
    podgroups: int
    pods: int


def sizes(nodes: int) -> Sizes:
    queues = int(nodes * QUEUES_PER_NODE)
    return Sizes(
        nodes, queues, max(1, queues // LEAVES_PER_DEPARTMENT), int(nodes * GROUPS_PER_NODE), nodes * PODS_PER_NODE
    )


def free_per_node(nodes: int) -> int:
    """GPUs left free on each whole-GPU node by `build(nodes, free=True)` (at most 7: a node keeps one pod)."""
    whole = nodes - nodes // FRACTION_EVERY
    return min(7, -(-FREE_GPUS // whole))


def node_name(i: int) -> str:
    return f"n{i:05d}"


def leaf_name(i: int) -> str:
    return f"q{i:04d}"


def build(nodes: int, *, free: bool, seed: int = 11) -> list[JSON]:
    """The cluster: priority classes, the Topology, nodes, queues, then the running PodGroups and pods."""
    s = sizes(nodes)
    rng = np.random.default_rng(seed)
    objs: list[JSON] = [*w.priority_classes(), topology()]
    objs += [_node(i) for i in range(nodes)]
    objs += queues(s)
    whole = [i for i in range(nodes) if i % FRACTION_EVERY != FRACTION_EVERY - 1]
    shared = [i for i in range(nodes) if i % FRACTION_EVERY == FRACTION_EVERY - 1]
    per_node = 8 - (free_per_node(nodes) if free else 0)
    gpu_pods = len(whole) * per_node
    fraction_pods = len(shared) * 16
    gpu_groups = _sizes_summing_to(rng, gpu_pods)
    cpu_pods = s.pods - gpu_pods - fraction_pods
    cpu_groups = _sizes_summing_to(rng, cpu_pods, max(1, s.podgroups - len(gpu_groups) - fraction_pods))
    slots = iter([node_name(i) for i in whole for _ in range(per_node)])
    owners = _queue_of(len(gpu_groups), s.queues)
    for g, size in enumerate(gpu_groups):
        objs += _running_gang(f"g{g:06d}", leaf_name(owners[g]), size, 1, g, [next(slots) for _ in range(size)])
    for f, i in enumerate(itertools.chain.from_iterable([n] * 16 for n in shared)):
        objs += _fraction_pod(f"f{f:06d}", leaf_name(f % s.queues), node_name(i), f // 2 % 8, f)
    spread = itertools.cycle(range(nodes))
    for c, size in enumerate(cpu_groups):
        hosts = [node_name(next(spread)) for _ in range(size)]
        objs += _running_gang(f"c{c:06d}", leaf_name(c * 7 % s.queues), size, 0, c, hosts)
    return objs


def topology() -> JSON:
    return {
        "apiVersion": constants.TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": "dc"},
        "spec": {
            "levels": [
                {"nodeLabel": "dc/zone", "alias": "zone"},
                {"nodeLabel": "dc/rack", "alias": "rack"},
                {"nodeLabel": constants.LABEL_HOSTNAME},
            ]
        },
    }


def queues(s: Sizes) -> list[JSON]:
    """Departments (parents, quota the sum of their leaves'), the leaves, and two departments of one leaf each
    that run nothing: `idle` (for new work) and `starved` (for the reclaim)."""
    per = s.queues // s.departments
    objs = [_queue(f"dept{d:02d}", LEAF_QUOTA * per, 1) for d in range(s.departments)]
    for i in range(s.queues):
        limit = LEAF_QUOTA * 16 if i % 10 == 3 else -1
        objs.append(_queue(leaf_name(i), LEAF_QUOTA, 1 + i % 3, limit, f"dept{min(i // per, s.departments - 1):02d}"))
    for name in ("idle", "starved"):
        objs += [_queue(f"dept-{name}", 64, 1), _queue(name, 64, 1, -1, f"dept-{name}")]
    return objs


def new_gang(name: str, queue: str, size: int, gpus: int, *, required: str = "", preferred: str = "") -> list[JSON]:
    """A pending gang of `size` pods of `gpus` GPUs each, optionally constrained to a topology level."""
    objs = w.job(name, queue, size, gpus, "2026-01-01T00:00:00Z", cpu="4", memory="32Gi")
    if required or preferred:
        constraint: JSON = {"topology": "dc"}
        if required:
            constraint["requiredTopologyLevel"] = required
        if preferred:
            constraint["preferredTopologyLevel"] = preferred
        _spec(objs[0])["topologyConstraint"] = constraint
    return objs


def _node(i: int) -> JSON:
    node = w.node(node_name(i), 8)
    labels = node["metadata"]["labels"]  # type: ignore[index]
    labels["dc/rack"] = f"r{i // NODES_PER_RACK:04d}"
    labels["dc/zone"] = f"z{i // (NODES_PER_RACK * RACKS_PER_ZONE):02d}"
    return node


def _queue(name: str, gpu_quota: float, weight: int, limit: float = -1, parent: str = "") -> JSON:
    queue = w.queue(name, gpu_quota, parent)
    gpu = _spec(queue)["resources"]["gpu"]  # type: ignore[index]
    gpu["overQuotaWeight"], gpu["limit"] = weight, limit
    return queue


def _sizes_summing_to(rng: np.random.Generator, total: int, groups: int | None = None) -> list[int]:
    """Gang sizes drawn from SIZES summing to `total`; with `groups`, that many (the draws scaled to fit)."""
    if groups is None:
        out: list[int] = []
        remaining = total
        while remaining > 0:
            out.append(min(remaining, int(rng.choice(SIZES, p=SIZE_WEIGHTS))))
            remaining -= out[-1]
        return out
    draws = rng.choice(SIZES, size=groups, p=SIZE_WEIGHTS)
    share = np.maximum(1, np.floor(draws / draws.sum() * total)).astype(int)
    share[: max(0, total - int(share.sum()))] += 1
    return [int(x) for x in share]


def _queue_of(groups: int, queues: int) -> list[int]:
    """Each GPU group's queue, in runs (a queue's gangs on neighbouring nodes); a third of the queues take three
    times the others' share, so some are far over quota and others under."""
    weights = np.array([3.0 if q % 3 == 0 else 1.0 for q in range(queues)])
    bounds = np.cumsum(weights / weights.sum() * groups)
    return [int(x) for x in np.searchsorted(bounds, np.arange(groups), side="right")]


def _running_gang(name: str, queue: str, size: int, gpus: int, index: int, hosts: list[str]) -> list[JSON]:
    cpu, memory = ("4", "32Gi") if gpus else ("500m", "1Gi")
    created = f"2025-12-31T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z"
    objs = w.job(name, queue, size, gpus, created, cpu=cpu, memory=memory, node=hosts[0])
    for pod, host in zip(objs[1:], hosts, strict=True):
        _spec(pod)["nodeName"] = host
    group = _spec(objs[0])
    if size >= 16 and index % 8 == 0:
        group["subGroups"] = [{"name": "leader", "minMember": 1}, {"name": "workers", "minMember": size - 1}]
        for k, pod in enumerate(objs[1:]):
            _meta(pod)["labels"][constants.LABEL_SUBGROUP_NAME] = "leader" if k == 0 else "workers"  # type: ignore[index]
    if gpus and index % 4 == 1:
        level = {"requiredTopologyLevel": "rack"} if size <= 8 else {"preferredTopologyLevel": "zone"}
        group["topologyConstraint"] = {"topology": "dc", **level}
    return objs


def _fraction_pod(name: str, queue: str, host: str, gpu: int, index: int) -> list[JSON]:
    created = f"2025-12-31T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z"
    group, pod = w.job(name, queue, 1, 0, created, cpu="1", memory="4Gi", node=host)
    del _spec(pod)["containers"][0]["resources"]["limits"]  # type: ignore[index]
    del _spec(pod)["containers"][0]["resources"]["requests"][constants.RESOURCE_GPU]  # type: ignore[index]
    _meta(pod)["annotations"][constants.ANNOTATION_GPU_FRACTION] = "0.5"  # type: ignore[index]
    _meta(pod)["labels"][constants.LABEL_GPU_GROUP] = f"{host}-gpu{gpu}"  # type: ignore[index]
    return [group, pod]


def _spec(obj: JSON) -> dict[str, object]:
    spec = obj["spec"]
    assert isinstance(spec, dict)
    return spec


def _meta(obj: JSON) -> dict[str, object]:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return meta


def names(objs: list[JSON], kind: str) -> Iterator[str]:
    return (str(_meta(o)["name"]) for o in objs if o["kind"] == kind)
