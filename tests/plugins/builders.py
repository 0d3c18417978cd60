"""Keyword-only builders for plugin tests.

Objects are written as the Kubernetes JSON a user would apply and parsed by the `kai_scheduler.api` types,
so a test exercises the same parsing as the scheduler; `snapshot` adds a queue and one PodGroup per pod group
the pods name, and `session` opens a Session over it with the plugins under test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON, format_time
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Plugin, Session

NAMESPACE = "team-a"
QUEUE = "q"
HOSTNAME = constants.LABEL_HOSTNAME


def node(name: str, *, gpus: int = 8, cpu: str = "64", memory: str = "512Gi", pods: int = 110,
         labels: Mapping[str, str] | None = None, taints: Sequence[str] = (), unschedulable: bool = False,
         ready: bool = True, gpu_memory: int | None = None,
         extended: Mapping[str, str] | None = None) -> Node:
    """A node labelled with its hostname; taints as kubectl writes them ("key=value:Effect")."""
    all_labels = {HOSTNAME: name, **(labels or {})}
    if gpu_memory is not None:
        all_labels[constants.LABEL_GPU_MEMORY] = str(gpu_memory)
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extended or {})}
    if gpus:
        allocatable[constants.RESOURCE_GPU] = str(gpus)
    return Node.from_dict({
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"unschedulable": unschedulable, "taints": [_taint(t) for t in taints]},
        "status": {"allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    })


def _taint(text: str) -> JSON:
    name, _, effect = text.rpartition(":")
    key, _, value = name.partition("=")
    return {"key": key, "value": value, "effect": effect}


def pod(name: str, *, namespace: str = NAMESPACE, group: str | None = None, gpus: int = 0, cpu: str = "1",
        memory: str = "1Gi", node: str = "", phase: str | None = None, releasing: bool = False,
        labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
        fraction: float | None = None, gpu_memory: int | None = None, created: float = 0.0,
        node_selector: Mapping[str, str] | None = None, node_affinity: Sequence[JSON] = (),
        pod_affinity: Sequence[JSON] = (), pod_anti_affinity: Sequence[JSON] = (),
        tolerations: Sequence[JSON] = (), scheduler: str = constants.DEFAULT_SCHEDULER_NAME,
        extended: Mapping[str, str] | None = None) -> Pod:
    """A one-container pod of PodGroup `group` (default: its own name). Running when given a node."""
    requests: dict[str, str] = {"cpu": cpu, "memory": memory, **(extended or {})}
    if gpus:
        requests[constants.RESOURCE_GPU] = str(gpus)
    notes = {constants.ANNOTATION_POD_GROUP_NAME: group or name, **(annotations or {})}
    if fraction is not None:
        notes[constants.ANNOTATION_GPU_FRACTION] = str(fraction)
    if gpu_memory is not None:
        notes[constants.ANNOTATION_GPU_MEMORY] = str(gpu_memory)
    meta: JSON = {"name": name, "namespace": namespace, "labels": dict(labels or {}), "annotations": notes,
                  "creationTimestamp": format_time(created)}
    if releasing:
        meta["deletionTimestamp"] = format_time(0)
    affinity: JSON = {}
    if node_affinity:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": list(node_affinity)}}
    for kind, terms in (("podAffinity", pod_affinity), ("podAntiAffinity", pod_anti_affinity)):
        if terms:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
    return Pod.from_dict({
        "metadata": meta,
        "spec": {"schedulerName": scheduler, "nodeName": node, "nodeSelector": dict(node_selector or {}),
                 "affinity": affinity, "tolerations": list(tolerations),
                 "containers": [{"name": "main", "resources": {"requests": requests}}]},
        "status": {"phase": phase or ("Running" if node else "Pending")},
    })


def expr(key: str, operator: str, *values: str) -> JSON:
    return {"key": key, "operator": operator, "values": list(values)}


def term(*expressions: JSON, fields: Sequence[JSON] = ()) -> JSON:
    """A node selector term: all its expressions must hold."""
    return {"matchExpressions": list(expressions), "matchFields": list(fields)}


def pod_term(topology_key: str, *, namespaces: Sequence[str] = (), expressions: Sequence[JSON] = (),
             **match_labels: str) -> JSON:
    """A pod (anti-)affinity term selecting pods by labels within a topology domain."""
    selector: JSON = {"matchLabels": match_labels, "matchExpressions": list(expressions)}
    return {"labelSelector": selector, "topologyKey": topology_key, "namespaces": list(namespaces)}


def toleration(key: str = "", *, operator: str = "Equal", value: str = "", effect: str = "") -> JSON:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def podgroup(name: str, *, namespace: str = NAMESPACE, min_member: int | None = None,
             priority_class: str = "", created: float = 0.0, sub_groups: Sequence[JSON] = ()) -> PodGroup:
    spec: JSON = {"queue": QUEUE, "priorityClassName": priority_class, "subGroups": list(sub_groups)}
    if min_member is not None:
        spec["minMember"] = min_member
    meta = {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}",
            "creationTimestamp": format_time(created)}
    return PodGroup.from_dict({"metadata": meta, "spec": spec})


def sub_group(name: str, *, min_member: int | None = None, min_sub_group: int | None = None,
              parent: str | None = None) -> JSON:
    out: JSON = {"name": name}
    for key, value in (("minMember", min_member), ("minSubGroup", min_sub_group), ("parent", parent)):
        if value is not None:
            out[key] = value
    return out


def priority_class(name: str, value: int) -> PriorityClass:
    return PriorityClass.from_dict({"metadata": {"name": name}, "value": value})


def snapshot(*, nodes: Iterable[Node], pods: Iterable[Pod] = (), podgroups: Iterable[PodGroup] = (),
             priority_classes: Iterable[PriorityClass] = ()) -> snapshots.Snapshot:
    """A snapshot at time 0; every pod group the pods name gets a PodGroup (minMember 1) unless given."""
    pod_list, groups = list(pods), {pg.meta.key: pg for pg in podgroups}
    for p in pod_list:
        name = p.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME, "")
        if name and f"{p.namespace}/{name}" not in groups:
            groups[f"{p.namespace}/{name}"] = podgroup(name, namespace=p.namespace)
    queue = Queue.from_dict({"metadata": {"name": QUEUE}, "spec": {}})
    objects = snapshots.ClusterObjects(nodes=list(nodes), pods=pod_list, podgroups=list(groups.values()),
                                       queues=[queue], priority_classes=list(priority_classes))
    return snapshots.build(objects, snapshots.SnapshotParams(now=0))


def session(snap: snapshots.Snapshot, *plugins: Plugin, config: SchedulerConfig | None = None) -> Session:
    """An opened session over `snap` with `plugins` in the order given."""
    ssn = Session(snap, config or SchedulerConfig(), list(plugins))
    ssn.open()
    return ssn


def task(snap: snapshots.Snapshot | Session, name: str, *, namespace: str = NAMESPACE) -> PodInfo:
    """The PodInfo of pod `namespace/name` (ours, in a PodGroup)."""
    found = snap.snapshot if isinstance(snap, Session) else snap
    return found.tasks[f"{namespace}/{name}"]


def names(snap: snapshots.Snapshot | Session, mask: Any) -> list[str]:
    """Node names where `mask` is true, in name order."""
    found = snap.snapshot if isinstance(snap, Session) else snap
    return [n.name for n in found.nodes if mask[n.row]]
