"""What each node lacks for a job's pending pods, and which nodes come closest (KAI has no such view; the
checks are the session's own PREDICATE callbacks, asked one by one instead of ANDed).

A fit error counts, per reason, the nodes the first failing check removed. Here every check is asked about
every node, so a node lists everything it lacks: its taints, a selector it does not match, and each resource
short, with amounts. Resources are compared as the session's fit does (idle + releasing, `framework.fit`);
a shared-GPU pod needs room on one GPU. Nodes are ranked: those the pod fits on first, then by fewer failed
checks, then by the smaller resource shortfall (the sum over resources of missing / requested), then name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kai_scheduler.api import constants
from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY, PODS, describe
from kai_scheduler.explain import model
from kai_scheduler.framework import fit, points
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.predicates.plugin import constraint_key

# The kind of lack a predicate callback reports, by the callback's name (`Lack.kind`).
_KINDS = {
    "untolerated_taint": "taint",
    "node_affinity": "affinity",
    "node_ready": "node",
    "node_unschedulable": "node",
    "gpu_memory_label": "gpu-memory",
    "pod_affinity": "pod-affinity",
    "pod_anti_affinity": "pod-affinity",
    "existing_pods_anti_affinity": "pod-affinity",
    "gpu_memory_over_capacity": "queue-capacity",
}
_RESOURCE_PLUGIN = "predicates"  # the plugin whose check reports resources (the session's fit otherwise)


@dataclass(frozen=True, slots=True)
class _Check:
    plugin: str
    kind: str
    result: points.NodeFilter
    rejected: points.Mask


def shapes(ssn: Session, job: JobInfo, *, closest: int, topology_blocked: bool = False) -> tuple[model.TaskShape, ...]:
    """One TaskShape per distinct pending pod shape among the pods allocate places next (the job's pending
    pods when allocate would place none, e.g. a gang still short of live pods).

    `topology_blocked`: the topology plugin found no domain of the job's required level that holds its pods
    (a fit error of the pool's dry allocate), so every node lacks a domain that would."""
    tasks = ssn.tasks_to_allocate(job) or job.pending_tasks()
    groups: dict[Any, list[PodInfo]] = {}
    for task in tasks:
        key = (task.subgroup, task.request.tobytes(), task.gpu, constraint_key(task.pod))
        groups.setdefault(key, []).append(task)
    domain_of = _domain_labeller(ssn, job, topology_blocked)
    return tuple(_shape(ssn, group[0], len(group), closest, domain_of) for group in groups.values())


def _shape(
    ssn: Session, task: PodInfo, pods: int, closest: int, domain_of: Callable[[int], tuple[str, model.Lack | None]]
) -> model.TaskShape:
    snap = ssn.snapshot
    n = len(snap.nodes)
    checks = _checks(ssn, task)
    failed = np.zeros(n, dtype=np.int64)
    for check in checks:
        failed += check.rejected
    fits_resources = fit.resources_fit(snap, task, ssn.all_nodes())
    shortfall = _shortfall(ssn, task, fits_resources)
    fits = (failed == 0) & fits_resources
    order = np.lexsort((snap.arrays.name_rank, shortfall, failed, ~fits))
    shown = tuple(_node_fit(ssn, task, int(row), checks, bool(fits[row]), domain_of) for row in order[:closest])
    return model.TaskShape(
        task=task.name,
        pods=pods,
        request=request_words(task),
        nodes_fit=int(fits.sum()),
        nodes=n,
        closest=shown,
    )


def _checks(ssn: Session, task: PodInfo) -> list[_Check]:
    """Every PREDICATE callback's answer over all nodes, except the resource fit (judged per resource here)."""
    everything = ssn.all_nodes()
    out = []
    for plugin, fn in ssn.hooks(points.PREDICATE):
        result = fn(task, everything)
        if result is None or result.fits_resources:
            continue
        rejected = ~result.mask
        if rejected.any():
            out.append(_Check(plugin, _KINDS.get(getattr(fn, "__name__", ""), "predicate"), result, rejected))
    return out


def _shortfall(ssn: Session, task: PodInfo, fits_resources: points.Mask) -> points.Scores:
    """Per node, the sum over requested resources of missing / requested (0 where the pod fits)."""
    arrays = ssn.snapshot.arrays
    need = task.request.copy()
    if task.gpu.is_shared:
        need[GPU] = 0.0
    requested = need > 0
    missing = np.maximum(need[requested] - arrays.free[:, requested], 0.0) / need[requested]
    total: points.Scores = missing.sum(axis=1)
    if task.gpu.is_shared:
        total += np.where(fits_resources, 0.0, 1.0)
    return np.where(fits_resources, 0.0, total)


def _node_fit(
    ssn: Session,
    task: PodInfo,
    row: int,
    checks: list[_Check],
    fits: bool,
    domain_of: Callable[[int], tuple[str, model.Lack | None]],
) -> model.NodeFit:
    node = ssn.snapshot.nodes[row]
    lacks: list[model.Lack] = []
    for check in checks:
        if check.rejected[row]:
            lacks.append(model.Lack(check.kind, check.plugin, _reason(check, row, len(ssn.snapshot.nodes))))
    lacks.extend(_resource_lacks(ssn, task, row))
    domain, outside = domain_of(row)
    if outside is not None:
        lacks.append(outside)
    free = ssn.snapshot.arrays.free[row]
    return model.NodeFit(
        name=node.name,
        fits=fits and not lacks,
        lacks=tuple(lacks),
        free_gpus=round(float(free[GPU]), 4),
        allocatable_gpus=float(node.allocatable()[GPU]),
        domain=domain,
    )


def _reason(check: _Check, row: int, n: int) -> str:
    """The check's own words for this node (a check folding several reasons names the one of this node)."""
    if check.result.explain is None:
        return check.result.reason
    single = np.zeros(n, dtype=bool)
    single[row] = True
    reasons = check.result.explain(single)
    return reasons[0][0] if reasons else check.result.reason


def _resource_lacks(ssn: Session, task: PodInfo, row: int) -> list[model.Lack]:
    """Each requested resource the node has too little of (idle + releasing), with the amounts."""
    snap = ssn.snapshot
    plugin = _RESOURCE_PLUGIN if _has_plugin(ssn, _RESOURCE_PLUGIN) else "session"
    free, need = snap.arrays.free[row], fit.thresholds(task)
    out = []
    for column, name in enumerate(snap.axis.names):
        if column == GPU and task.gpu.is_shared:
            if not fit.shared_gpu_fit(snap, task, _single(len(snap.nodes), row))[row]:
                out.append(_shared_lack(ssn, task, row, plugin))
            continue
        if free[column] >= need[column]:
            continue
        requested, have = float(task.request[column]), float(free[column])
        out.append(
            model.Lack(
                _kind(column, name),
                plugin,
                f"{_amount(column, name, requested)} requested, {_amount(column, name, max(have, 0.0))} free",
                _natural(column, requested),
                _natural(column, max(have, 0.0)),
            )
        )
    return out


def _shared_lack(ssn: Session, task: PodInfo, row: int, plugin: str) -> model.Lack:
    """A shared-GPU pod: MiB (or a fraction) on one GPU, against the roomiest GPU of the node."""
    node = ssn.snapshot.nodes[row]
    arrays = ssn.snapshot.arrays
    per_device = node.task_gpu_memory(task)
    whole = float(arrays.free[row, GPU])
    room = max(float(arrays.shared_free[row]), node.gpu_memory_mib if whole >= 1 - tolerance.RESOURCE else 0.0)
    devices = task.gpu.num_devices
    each = f" on each of {devices} GPUs" if devices > 1 else " on one GPU"
    if task.gpu.memory_mib:
        message = f"{per_device:g} MiB of GPU memory{each} requested, the roomiest GPU has {room:g} MiB free"
        return model.Lack("gpu-memory", plugin, message, per_device, room)
    total = node.gpu_memory_mib
    fraction_free = round(room / total, 4) if total else 0.0
    message = f"{task.gpu.fraction:g} of a GPU{each} requested, the roomiest GPU has {fraction_free:g} free"
    return model.Lack("gpu-share", plugin, message, task.gpu.fraction, fraction_free)


def _domain_labeller(ssn: Session, job: JobInfo, blocked: bool) -> Callable[[int], tuple[str, model.Lack | None]]:
    """Per node: its domain at the job's required topology level as `label=value` ("" without a constraint),
    and what it lacks there: the level's label, or (`blocked`) a domain that holds the job's pods together."""
    constraint = job.podgroup.topology_constraint
    topology = ssn.snapshot.topologies.get(constraint.topology) if constraint and constraint.required_level else None
    label = topology.resolve(constraint.required_level) if topology is not None and constraint else None
    if label is None:
        return lambda row: ("", None)
    nodes = ssn.snapshot.nodes

    def domain(row: int) -> tuple[str, model.Lack | None]:
        value = nodes[row].labels.get(label)
        if value is None:
            return f"{label}=(none)", model.Lack("topology", "topology", f"no {label} label: in no domain of the level")
        if blocked:
            message = f"its domain {label}={value} cannot hold the job's pods together"
            return f"{label}={value}", model.Lack("topology", "topology", message)
        return f"{label}={value}", None

    return domain


def request_words(task: PodInfo) -> str:
    """The pod's request in plain words: "4 GPUs, 16 CPU, 128Gi memory", "0.5 of a GPU, 2 CPU"."""
    parts = []
    gpu = task.gpu
    if gpu.is_shared:
        each = f" x{gpu.num_devices}" if gpu.num_devices > 1 else ""
        parts.append(f"{gpu.memory_mib:g} MiB of a GPU{each}" if gpu.memory_mib else f"{gpu.fraction:g} of a GPU{each}")
    elif task.request[GPU]:
        parts.append(describe("gpu", float(task.request[GPU])))
    if task.request[CPU]:
        parts.append(describe("cpu", float(task.request[CPU])))
    if task.request[MEMORY]:
        parts.append(describe("memory", float(task.request[MEMORY])))
    return ", ".join(parts) or "no resources"


def _has_plugin(ssn: Session, name: str) -> bool:
    return any(plugin == name for plugin, _ in ssn.hooks(points.PREDICATE))


def _single(n: int, row: int) -> points.Mask:
    mask = np.zeros(n, dtype=bool)
    mask[row] = True
    return mask


def _kind(column: int, name: str) -> str:
    return {CPU: "cpu", MEMORY: "memory", GPU: "gpu", PODS: "pods"}.get(column, name)


def _amount(column: int, name: str, amount: float) -> str:
    if column == PODS:
        return f"{amount:g} pod{'s' if amount != 1 else ''}"
    if name == constants.RESOURCE_GPU:
        return describe("gpu", amount)
    return describe(name, amount)


def _natural(column: int, amount: float) -> float:
    """Node amounts in the resource's own unit: CPU in cores, the rest as stored (bytes, devices, pods)."""
    return round(amount / 1000, 3) if column == CPU else amount
