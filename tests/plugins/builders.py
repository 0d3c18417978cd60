"""The builders of `tests/builders.py`, parsed, for plugin tests; and a snapshot and session made for them.

A plugin test works on typed objects: `node`, `pod`, `podgroup` and `priority_class` take the same keywords as
the JSON builders and return the parsed object. `snapshot` adds a queue and one PodGroup per pod group the
pods name, and `session` opens a Session over it with only the plugins under test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Plugin, Session
from tests import builders
from tests.builders import NAMESPACE, expr, pod_term, sub_group, task, term, toleration, weighted

__all__ = [
    "HOSTNAME",
    "NAMESPACE",
    "QUEUE",
    "expr",
    "names",
    "namespace",
    "node",
    "pod",
    "pod_term",
    "podgroup",
    "priority_class",
    "session",
    "snapshot",
    "sub_group",
    "task",
    "term",
    "toleration",
    "weighted",
]

QUEUE = "q"
HOSTNAME = constants.LABEL_HOSTNAME

P = ParamSpec("P")
T = TypeVar("T")


def _parsed(build: Callable[P, JSON], parse: Callable[[JSON], T]) -> Callable[P, T]:
    def built(*args: P.args, **kwargs: P.kwargs) -> T:
        return parse(build(*args, **kwargs))

    built.__doc__ = build.__doc__
    return built


node = _parsed(builders.node, Node.from_dict)
pod = _parsed(builders.pod, Pod.from_dict)
podgroup = _parsed(builders.podgroup, PodGroup.from_dict)
priority_class = _parsed(builders.priority_class, PriorityClass.from_dict)
namespace = _parsed(builders.namespace, Namespace.from_dict)


def snapshot(
    *,
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    podgroups: Iterable[PodGroup] = (),
    priority_classes: Iterable[PriorityClass] = (),
    namespaces: Iterable[Namespace] = (),
) -> snapshots.Snapshot:
    """A snapshot at time 0; every pod group the pods name gets a PodGroup (minMember 1) unless given."""
    pod_list, groups = list(pods), {pg.meta.key: pg for pg in podgroups}
    for p in pod_list:
        name = p.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME, "")
        if name and f"{p.namespace}/{name}" not in groups:
            groups[f"{p.namespace}/{name}"] = podgroup(name, namespace=p.namespace, queue=QUEUE)
    queue = Queue.from_dict({"metadata": {"name": QUEUE}, "spec": {}})
    objects = snapshots.ClusterObjects(
        nodes=list(nodes),
        pods=pod_list,
        podgroups=list(groups.values()),
        queues=[queue],
        priority_classes=list(priority_classes),
        namespaces=list(namespaces),
    )
    return snapshots.build(objects, snapshots.SnapshotParams(now=0))


def session(snap: snapshots.Snapshot, *plugins: Plugin, config: SchedulerConfig | None = None) -> Session:
    """An opened session over `snap` with `plugins` in the order given."""
    ssn = Session(snap, config or SchedulerConfig(), list(plugins))
    ssn.open()
    return ssn


def names(snap: snapshots.Snapshot | Session, mask: Any) -> list[str]:
    """Node names where `mask` is true, in name order."""
    found = snap.snapshot if isinstance(snap, Session) else snap
    return [n.name for n in found.nodes if mask[n.row]]
