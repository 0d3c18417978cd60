"""Node pools (§1.5): which objects a pool's scheduler sees, and the pool's nodes with their fresh ledgers,
carried from one build to the next while the node objects stay the same."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster.node_info import NodeArrays, NodeInfo
from kai_scheduler.cluster.node_set_values import NodeSetValues
from kai_scheduler.cluster.resources import ResourceAxis
from kai_scheduler.cluster.snapshot.inputs import ClusterObjects, SnapshotParams


def in_pool(labels: Mapping[str, str], key: str, value: str) -> bool:
    """Whether an object with these labels belongs to the node pool `value` of the label `key` (§1.5): the
    objects carrying `key=value`, or for the empty value the objects without the label."""
    return labels.get(key) == value if value else key not in labels


def pool_objects(objects: ClusterObjects, params: SnapshotParams) -> ClusterObjects:
    """The objects a scheduler of the pool `params.partition_label_value` schedules: the queues, PodGroups
    and BindRequests of that pool (nodes are kept by `pool_nodes`; pods belong to their PodGroups). Another
    pool's BindRequests are its scheduler's to keep or delete, never this one's. The same lists when every
    object is in the pool (a cache that keeps only this pool's objects)."""
    if not params.pool_objects or params.all_pools:
        return objects
    key, value = params.node_pool_label_key, params.partition_label_value
    queues = [q for q in objects.queues if in_pool(q.meta.labels, key, value)]
    podgroups = [pg for pg in objects.podgroups if in_pool(pg.meta.labels, key, value)]
    brs = [br for br in objects.bind_requests if in_pool(br.meta.labels, key, value)]
    if (
        len(queues) == len(objects.queues)
        and len(podgroups) == len(objects.podgroups)
        and len(brs) == len(objects.bind_requests)
    ):
        return objects
    # The change feed names every pool's objects: with some left out, the incremental build compares instead.
    marks = {r: m for r, m in objects.marks.items() if r not in ("queues", "podgroups", "bindrequests")}
    others = dict(objects.other_pool_queues)
    others.update(
        (q.name, q.meta.labels.get(key, "")) for q in objects.queues if not in_pool(q.meta.labels, key, value)
    )
    return dataclasses.replace(
        objects, queues=queues, podgroups=podgroups, bind_requests=brs, marks=marks, other_pool_queues=others
    )


def pod_in_pool(pod: Pod, params: SnapshotParams) -> bool:
    """Whether a pod is this pool's by its own node-pool label (the scheduler writes it at bind, §8.1)."""
    return in_pool(pod.meta.labels, params.node_pool_label_key, params.partition_label_value)


@dataclass(slots=True, eq=False)
class PoolNodes:
    """The pool's nodes in name order and their fresh ledgers, while the cache hands the same node objects (or later
    versions of them that differ in their resourceVersion alone: `_same_but_version`)."""

    given: list[Node]
    pool: tuple[str, str, bool]
    nodes: list[Node]
    resources: set[str]
    axis: tuple[str, ...] = ()
    arrays: NodeArrays | None = None  # never written: each build works on a copy
    memo: NodeSetValues = field(default_factory=NodeSetValues)  # new with the arrays: allocatable is an input


def pool_nodes(given: list[Node], params: SnapshotParams, last: PoolNodes | None) -> PoolNodes:
    """The pool's nodes among `given`: `last` (the previous build's) while the node objects are the same."""
    pool = (params.node_pool_label_key, params.partition_label_value, params.all_pools)
    if last is not None and last.pool == pool and len(last.given) == len(given):
        if all(map(operator.is_, last.given, given)):
            return last
        if all(map(_same_but_version, last.given, given)):
            # Only their resourceVersions moved (a kubelet's status heartbeat): the nodes kept are the same nodes,
            # and the model built on them stays. The next look compares with these objects.
            last.given = list(given)
            return last
    nodes = _pool_members(sorted(given, key=lambda n: n.name), params)
    return PoolNodes(list(given), pool, nodes, {r for n in nodes for r in n.allocatable})


def _pool_members(nodes: list[Node], params: SnapshotParams) -> list[Node]:
    key, value = params.node_pool_label_key, params.partition_label_value
    if params.all_pools:
        return nodes
    return [n for n in nodes if in_pool(n.meta.labels, key, value)]


def _same_but_version(old: Node, given: Node) -> bool:
    """The same object, or a later version of it that differs in nothing but its resourceVersion: every field the
    scheduler reads (labels, annotations, taints, allocatable, capacity, readiness, cordon) is equal."""
    if old is given:
        return True
    if old.meta.uid != given.meta.uid or old.meta.resource_version == given.meta.resource_version:
        return old == given
    return old == dataclasses.replace(
        given, meta=dataclasses.replace(given.meta, resource_version=old.meta.resource_version)
    )


def node_arrays(pool: PoolNodes, axis: ResourceAxis) -> tuple[NodeArrays, list[NodeInfo]]:
    """The pool's node ledgers on `axis` and a NodeInfo per node. Filled column by column (one list of floats
    per resource), not node by node: building a vector per node was most of a small cycle's cost on a
    1,500-node cluster. Kept while the nodes and the axis are the same; each build gets a copy."""
    nodes = pool.nodes
    if pool.arrays is None or pool.axis != axis.names:
        arrays = NodeArrays.empty(len(nodes), len(axis))
        for column, name in enumerate(axis.names):
            arrays.allocatable[:, column] = [n.allocatable.get(name, 0.0) for n in nodes]
        arrays.schedulable[:] = [n.ready and not n.unschedulable for n in nodes]
        arrays.gpu_memory[:] = [n.gpu_memory_mib or 0 for n in nodes]
        arrays.idle[:] = arrays.allocatable
        arrays.refresh()
        pool.arrays, pool.axis, pool.memo = arrays, axis.names, NodeSetValues()
    arrays = pool.arrays.copy()
    infos = [NodeInfo(name=node.name, node=node, row=row, arrays=arrays) for row, node in enumerate(nodes)]
    return arrays, infos


def labelled_gpu_memory(arrays: NodeArrays, pick: Callable[[Any], Any]) -> float:
    """`pick` (min or max) of the nodes' labelled GPU memory in MiB; the default when no node is labelled."""
    labelled = arrays.gpu_memory[arrays.gpu_memory > 0]
    return float(pick(labelled)) if labelled.size else float(constants.DEFAULT_NODE_GPU_MEMORY_MIB)
