"""What a snapshot is built from: the typed objects (`ClusterObjects`) with the change feed that names those that
changed, the build's parameters (`SnapshotParams`), and `Problem`, a bad object reported on that object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue
from kai_scheduler.api.topology import Topology
from kai_scheduler.cluster.dra import DraObjects


@dataclass(frozen=True, slots=True)
class Problem:
    """A bad or unusable object, reported on that object; it never stops the cycle."""

    kind: str
    key: str
    reason: str
    message: str
    pod_group: str = ""  # a bad pod's pod-group-name annotation: its PodGroup is told why the pod is missing
    node: str = ""  # a NodeDoesNotExist problem's node: when the node was refused, the pod is told why


@dataclass(slots=True)
class ClusterObjects:
    """The typed objects a snapshot is built from (the cache's view, or a scenario's)."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    bind_requests: list[BindRequest] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    topologies: list[Topology] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # objects that failed to parse
    dra: DraObjects = field(default_factory=DraObjects)
    namespaces: list[Namespace] = field(default_factory=list)  # their labels: affinity terms, queue access control
    # Queues of other node pools, name → their node-pool label value ("" for none): left out of the tree, named
    # only to say why a job of this pool that names one waits (`queues.queue_problem`).
    other_pool_queues: dict[str, str] = field(default_factory=dict)
    # Where the objects came from, for an incremental build to look at what changed only (`incremental`): the
    # source's change feed and its marks (per resource of `FED_RESOURCES`) taken with these lists. None: look at
    # every object.
    feed: ChangeFeed | None = None
    marks: dict[str, object] = field(default_factory=dict)


FED_RESOURCES = ("pods", "podgroups", "bindrequests")
"""The resources whose changes an incremental build takes from the change feed (`ClusterObjects.marks`)."""


class ChangeFeed(Protocol):
    """What changed in a source of typed objects between two of its marks (`store.cache.ObjectCache`)."""

    def changed(self, resource: str, since: object, until: object) -> dict[str, Any] | None:
        """The objects of `resource` whose keys changed between the marks, as they are at `until` (None:
        gone), or None when that is not known."""


@dataclass(frozen=True, slots=True)
class SnapshotParams:
    """How a snapshot is built: its time, whose pods it schedules, and which node pool it sees."""

    now: float
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    node_pool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    partition_label_value: str = ""
    stuck_in_releasing_seconds: float = 120.0
    queue_access_control: bool = False  # a job whose queue does not admit its namespace is unschedulable
    # Leave out the queues, PodGroups and BindRequests of other node pools, as the pool's scheduler does. Off
    # only for a what-if over another pool's nodes (`kai explain` shows where else a job would fit).
    pool_objects: bool = True
    # Every node pool at once (nodes and objects): a view of a sharded cluster as a whole (`kai schedule`'s
    # report over several shards), never a scheduling cycle's.
    all_pools: bool = False
