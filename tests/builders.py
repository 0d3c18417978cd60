"""Keyword-only builders of Kubernetes JSON, the one set every test builds objects with.

Every object is written as the JSON a user would apply (or the API server would serve), so tests exercise the
same parsing as the scheduler. `snapshot(objects)` parses and builds a Snapshot; `session(snapshot)` opens a
Session with the plugins of a configuration (KAI's defaults unless given), as the scheduler does each cycle.
Plugin tests take the same objects parsed (`tests/plugins/builders.py`) and open a session with only the
plugins under test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kai_scheduler.api import PARSERS, constants
from kai_scheduler.api.fields import JSON, format_time
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins import registry
from kai_scheduler.scheduler.scheduler import load_config

NAMESPACE = "ns"
NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
OPEN = {"quota": 0, "overQuotaWeight": 1, "limit": -1}


def node(
    name: str,
    *,
    gpus: int = 8,
    cpu: str = "64",
    memory: str = "512Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    gpu_memory: int | None = None,
    taints: Sequence[str] = (),
    extended: Mapping[str, str] | None = None,
) -> JSON:
    """A Node labelled with its hostname, `gpus` whole GPUs allocatable (none listed when 0); taints as kubectl
    writes them ("key=value:Effect")."""
    allocatable: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extended or {})}
    if gpus:
        allocatable[constants.RESOURCE_GPU] = str(gpus)
    all_labels = {constants.LABEL_HOSTNAME: name, **(labels or {})}
    if gpu_memory is not None:
        all_labels[constants.LABEL_GPU_MEMORY] = str(gpu_memory)
    spec: JSON = {"unschedulable": unschedulable}
    if taints:
        spec["taints"] = [_taint(t) for t in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _taint(text: str) -> JSON:
    name, _, effect = text.rpartition(":")
    key, _, value = name.partition("=")
    return {"key": key, "value": value, "effect": effect}


def queue(
    name: str,
    *,
    parent: str = "",
    priority: int = 100,
    gpu_quota: float = 0,
    gpu_limit: float = -1,
    gpu_weight: float = 1,
    cpu: Mapping[str, float] | None = None,
    memory: Mapping[str, float] | None = None,
    created: float = 0.0,
    labels: Mapping[str, str] | None = None,
) -> JSON:
    """A Queue; CPU and memory open (quota 0, weight 1, no limit) unless given in CRD units."""
    spec: JSON = {
        "priority": priority,
        "resources": {
            "gpu": {"quota": gpu_quota, "overQuotaWeight": gpu_weight, "limit": gpu_limit},
            "cpu": dict(cpu or OPEN),
            "memory": dict(memory or OPEN),
        },
    }
    if parent:
        spec["parentQueue"] = parent
    meta: JSON = {"name": name, "uid": f"queue-{name}", "creationTimestamp": format_time(created)}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue", "metadata": meta, "spec": spec}


def sub_group(
    name: str, *, min_member: int | None = None, min_sub_group: int | None = None, parent: str | None = None
) -> JSON:
    out: JSON = {"name": name}
    for key, value in (("minMember", min_member), ("minSubGroup", min_sub_group), ("parent", parent)):
        if value is not None:
            out[key] = value
    return out


def podgroup(
    name: str,
    *,
    queue: str = "q",
    namespace: str = NAMESPACE,
    min_member: int | None = 1,
    min_sub_group: int | None = None,
    sub_groups: Sequence[JSON] = (),
    priority_class: str = "",
    preemptibility: str = "",
    created: float = 0.0,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    **spec_fields: Any,
) -> JSON:
    spec: JSON = {"queue": queue, **spec_fields}
    if min_member is not None and not sub_groups and min_sub_group is None:
        spec["minMember"] = min_member
    if min_sub_group is not None:
        spec["minSubGroup"] = min_sub_group
    if sub_groups:
        spec["subGroups"] = list(sub_groups)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if preemptibility:
        spec["preemptibility"] = preemptibility
    meta: JSON = {"name": name, "namespace": namespace, "uid": f"pg-{name}", "creationTimestamp": format_time(created)}
    if annotations:
        meta["annotations"] = dict(annotations)
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": constants.PODGROUP_API_VERSION, "kind": "PodGroup", "metadata": meta, "spec": spec}


def pod(
    name: str,
    *,
    group: str | None = None,
    namespace: str = NAMESPACE,
    gpus: int = 0,
    cpu: str = "1",
    memory: str = "1Gi",
    node: str = "",
    phase: str | None = None,
    deleted_at: float | None = None,
    subgroup: str = "",
    gated: bool = False,
    fraction: float | None = None,
    gpu_memory: int | None = None,
    gpu_groups: Sequence[str] = (),
    scheduler: str = constants.DEFAULT_SCHEDULER_NAME,
    created: float = 0.0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_affinity: Sequence[JSON] = (),
    pod_affinity: Sequence[JSON] = (),
    pod_anti_affinity: Sequence[JSON] = (),
    preferred_pod_affinity: Sequence[JSON] = (),
    preferred_pod_anti_affinity: Sequence[JSON] = (),
    tolerations: Sequence[JSON] = (),
    extended: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
    claim_statuses: Mapping[str, str] | None = None,
) -> JSON:
    """A one-container pod of PodGroup `group` (default: its own name); Running when given a node.

    `node_affinity` takes required node selector terms (`term`), the pod (anti-)affinities required pod terms
    (`pod_term`), the preferred ones weighted terms (`weighted`); `deleted_at` makes it releasing."""
    requests: dict[str, str] = {"cpu": cpu, "memory": memory, **(extended or {})}
    if gpus:
        requests[constants.RESOURCE_GPU] = str(gpus)
    notes = {constants.ANNOTATION_POD_GROUP_NAME: group or name, **(annotations or {})}
    if fraction is not None:
        notes[constants.ANNOTATION_GPU_FRACTION] = str(fraction)
    if gpu_memory is not None:
        notes[constants.ANNOTATION_GPU_MEMORY] = str(gpu_memory)
    all_labels = dict(labels or {})
    if subgroup:
        all_labels[constants.LABEL_SUBGROUP_NAME] = subgroup
    if gpu_groups:
        all_labels[constants.LABEL_GPU_GROUP] = gpu_groups[0]
        for g in gpu_groups[1:]:
            all_labels[f"{constants.LABEL_GPU_GROUP}/{g}"] = g
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"pod-{namespace}-{name}",
        "labels": all_labels,
        "annotations": notes,
        "creationTimestamp": format_time(created),
    }
    if deleted_at is not None:
        meta["deletionTimestamp"] = format_time(deleted_at)
    spec: JSON = {"schedulerName": scheduler, "containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/gate"}]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    affinity: JSON = {}
    if node_affinity:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(node_affinity)}
        }
    for kind, terms, preferred in (
        ("podAffinity", pod_affinity, preferred_pod_affinity),
        ("podAntiAffinity", pod_anti_affinity, preferred_pod_anti_affinity),
    ):
        if terms:
            affinity.setdefault(kind, {})["requiredDuringSchedulingIgnoredDuringExecution"] = list(terms)
        if preferred:
            affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    if affinity:
        spec["affinity"] = affinity
    status: JSON = {"phase": phase or ("Running" if node else "Pending")}
    if claims:  # pod claim name → "template:<name>" or a ResourceClaim's name
        spec["resourceClaims"] = [
            {"name": n, "resourceClaimTemplateName": t.removeprefix("template:")}
            if t.startswith("template:")
            else {"name": n, "resourceClaimName": t}
            for n, t in claims.items()
        ]
    if claim_statuses:
        status["resourceClaimStatuses"] = [{"name": n, "resourceClaimName": c} for n, c in claim_statuses.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


DRA = "resource.k8s.io/v1beta1"
GPU_DRIVER = "gpu.nvidia.com"


def device_class(name: str = GPU_DRIVER, *selectors: str) -> JSON:
    """A DeviceClass; with no selector given, every device of the driver named as the class."""
    chosen = selectors or (f'device.driver == "{name}"',)
    spec = {"selectors": [{"cel": {"expression": s}} for s in chosen]}
    return {"apiVersion": DRA, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def device(name: str, **attributes: Any) -> JSON:
    kinds = {bool: "bool", int: "int", str: "string"}
    return {"name": name, "basic": {"attributes": {k: {kinds[type(v)]: v} for k, v in attributes.items()}}}


def resource_slice(
    node_name: str = "",
    devices: Sequence[JSON] = (),
    *,
    gpus: int = 0,
    driver: str = GPU_DRIVER,
    pool: str = "",
    node_selector: Sequence[JSON] = (),
) -> JSON:
    """A node's slice (`node_name`), or a network-attached pool's (`node_selector` terms, else all nodes); `gpus`
    adds devices gpu-0 … gpu-(N-1)."""
    listed = [*devices, *(device(f"gpu-{i}", type="gpu", index=i) for i in range(gpus))]
    pool_name = pool or node_name
    spec: JSON = {"driver": driver, "pool": {"name": pool_name, "generation": 0, "resourceSliceCount": 1}}
    if node_name:
        spec["nodeName"] = node_name
    elif node_selector:
        spec["nodeSelector"] = {"nodeSelectorTerms": list(node_selector)}
    else:
        spec["allNodes"] = True
    spec["devices"] = listed
    return {"apiVersion": DRA, "kind": "ResourceSlice", "metadata": {"name": f"{pool_name}-{driver}"}, "spec": spec}


def _requests(device_class_name: str, count: int | None, selectors: Sequence[str]) -> JSON:
    request: JSON = {"name": "devices", "deviceClassName": device_class_name}
    if count is None:
        request["allocationMode"] = "All"
    else:
        request["count"] = count
    if selectors:
        request["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"devices": {"requests": [request]}}


def claim(
    name: str,
    *,
    namespace: str = NAMESPACE,
    device_class_name: str = GPU_DRIVER,
    count: int | None = 1,
    selectors: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    for_pod: str = "",
    allocated: Sequence[tuple[str, str]] = (),
    reserved_for: Sequence[str] = (),
) -> JSON:
    """A ResourceClaim (`count` None = allocationMode All); `for_pod`: made from a template for that pod;
    `allocated`: (pool, device) of gpu.nvidia.com devices; `reserved_for`: pod names."""
    meta: JSON = {"name": name, "namespace": namespace, "uid": f"claim-{name}", "labels": dict(labels or {})}
    if for_pod:
        meta["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": for_pod,
                "uid": f"pod-{namespace}-{for_pod}",
                "controller": True,
            }
        ]
    out: JSON = {
        "apiVersion": DRA,
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": _requests(device_class_name, count, selectors),
    }
    status: JSON = {}
    if allocated:
        results = [{"request": "devices", "driver": GPU_DRIVER, "pool": p, "device": d} for p, d in allocated]
        status["allocation"] = {"devices": {"results": results}}
    if reserved_for:
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"pod-{namespace}-{p}"} for p in reserved_for]
    if status:
        out["status"] = status
    return out


def claim_template(
    name: str,
    *,
    namespace: str = NAMESPACE,
    device_class_name: str = GPU_DRIVER,
    count: int | None = 1,
    selectors: Sequence[str] = (),
) -> JSON:
    return {
        "apiVersion": DRA,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": _requests(device_class_name, count, selectors)},
    }


def expr(key: str, operator: str, *values: str) -> JSON:
    return {"key": key, "operator": operator, "values": list(values)}


def term(*expressions: JSON, fields: Sequence[JSON] = ()) -> JSON:
    """A node selector term: all its expressions must hold."""
    return {"matchExpressions": list(expressions), "matchFields": list(fields)}


def pod_term(
    topology_key: str,
    *,
    namespaces: Sequence[str] = (),
    namespace_selector: JSON | None = None,
    expressions: Sequence[JSON] = (),
    **match_labels: str,
) -> JSON:
    """A pod (anti-)affinity term selecting pods by labels within a topology domain; `namespace_selector` is
    written as the term's `namespaceSelector` (`{}`: every namespace), None leaves it out."""
    selector: JSON = {"matchLabels": match_labels, "matchExpressions": list(expressions)}
    out: JSON = {"labelSelector": selector, "topologyKey": topology_key, "namespaces": list(namespaces)}
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def namespace(name: str, **labels: str) -> JSON:
    """A Namespace with `labels`."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def weighted(weight: int, pod_term: JSON) -> JSON:
    """A preferred pod (anti-)affinity term: `pod_term` with its weight."""
    return {"weight": weight, "podAffinityTerm": pod_term}


def toleration(key: str = "", *, operator: str = "Equal", value: str = "", effect: str = "") -> JSON:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def priority_class(name: str, value: int) -> JSON:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def bind_request(
    pod_name: str,
    node_name: str,
    *,
    namespace: str = NAMESPACE,
    phase: str = "",
    failed_attempts: int = 0,
    backoff_limit: int | None = None,
) -> JSON:
    """A BindRequest as the scheduler writes it (§1.3), optionally with a status."""
    spec: JSON = {
        "podName": pod_name,
        "selectedNode": node_name,
        "receivedResourceType": "Regular",
        "receivedGPU": {"count": 1, "portion": "0.00"},
    }
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    out: JSON = {
        "apiVersion": constants.BINDREQUEST_API_VERSION,
        "kind": "BindRequest",
        "metadata": {"name": pod_name, "namespace": namespace, "labels": {constants.LABEL_SELECTED_NODE: node_name}},
        "spec": spec,
    }
    if phase:
        out["status"] = {"phase": phase, "reason": "", "failedAttempts": failed_attempts}
    return out


def objects(raw: Iterable[JSON]) -> snapshots.ClusterObjects:
    """Parse Kubernetes JSON into the typed objects a snapshot is built from."""
    out = snapshots.ClusterObjects()
    lists: dict[str, list[Any]] = {
        "Node": out.nodes,
        "Pod": out.pods,
        "PodGroup": out.podgroups,
        "Queue": out.queues,
        "BindRequest": out.bind_requests,
        "PriorityClass": out.priority_classes,
        "Topology": out.topologies,
        "Namespace": out.namespaces,
    }
    dra: dict[str, list[Any]] = {
        "DeviceClass": out.dra.classes,
        "ResourceSlice": out.dra.slices,
        "ResourceClaim": out.dra.claims,
        "ResourceClaimTemplate": out.dra.templates,
    }
    for obj in raw:
        kind = obj["kind"]
        (lists[kind] if kind in lists else dra[kind]).append(PARSERS[kind](obj))
    return out


def snapshot(raw: Iterable[JSON], *, now: float = NOW) -> snapshots.Snapshot:
    return snapshots.build(objects(raw), snapshots.SnapshotParams(now=now))


def session(snap: snapshots.Snapshot, *, config: SchedulerConfig | None = None) -> Session:
    """An opened session with the plugins of `config` (KAI's defaults), built as the scheduler builds them."""
    config = config or load_config(None)
    ssn = Session(snap, config, [registry.build(p.name, p.arguments) for p in config.plugins()])
    ssn.open()
    return ssn


def task(snap: snapshots.Snapshot | Session, name: str, *, namespace: str = NAMESPACE) -> PodInfo:
    found = snap.snapshot if isinstance(snap, Session) else snap
    return found.tasks[f"pod-{namespace}-{name}"]


def ledgers(snap: snapshots.Snapshot) -> dict[str, np.ndarray[Any, Any]]:
    """Copies of every node ledger array and of the arrays derived from them, to compare before and after."""
    a = snap.arrays
    return {
        "allocatable": a.allocatable.copy(),
        "idle": a.idle.copy(),
        "used": a.used.copy(),
        "releasing": a.releasing.copy(),
        "free": a.non_allocated().copy(),
        "free_now": a.free_now.copy(),
    }


def same_ledgers(left: Mapping[str, np.ndarray[Any, Any]], right: Mapping[str, np.ndarray[Any, Any]]) -> bool:
    return left.keys() == right.keys() and all(np.array_equal(left[k], right[k]) for k in left)
