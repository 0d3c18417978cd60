"""DRA in scenario files (docs/scenarios-dra.md): device classes, node GPUs published as ResourceSlices,
network-attached device pools, shared claims, and per-task claims made from templates.

A node's `draGpus: N` publishes one ResourceSlice (pool = node name, driver `gpu.nvidia.com`) with devices
`gpu-0` … `gpu-(N-1)`; a task's `draGpus: N` (or its `claims`) becomes a ResourceClaimTemplate and a
`spec.resourceClaims` entry per claim. A placed task's claims exist already, allocated on its node's first free
devices (`All`: every device of the node, all free) and reserved for the pod, as the cluster would show them; a
shared claim is allocated once, by its first placed user, and reserved for each. A Binding task's claims are
made but not yet allocated: its BindRequest carries the devices (`resourceClaimAllocations`), as the scheduler
writes them. A pending task's claims are made by the resourceclaim controller (the embedded cluster plays it),
as in a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, dra
from kai_scheduler.scenario import meta
from kai_scheduler.scenario.entry import MAX_OBJECTS, Entry
from kai_scheduler.scenario.model import JSON

DEVICE_CLASS_FIELDS = ("name", "selectors")
DEVICE_FIELDS = ("name", "driver", "attributes", "capacity")
POOL_FIELDS = ("name", "driver", "nodeSelector", "devices")
CLAIM_FIELDS = ("name", "namespace", "queue", "deviceClass", "count", "allocationMode", "selectors", "labels")
TASK_CLAIM_FIELDS = ("name", "deviceClass", "count", "allocationMode", "selectors", "claim")
GPU_CLASS_SELECTOR = f'device.driver == "{dra.GPU_DRIVER}"'


@dataclass(slots=True)
class DraFacts:
    """Per node, the devices not yet taken by a placed task's claims: (driver, pool, device) in order."""

    free: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    devices: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # per node: all its devices
    classes: dict[str, str] = field(default_factory=dict)  # class name → the driver its devices come from
    shared: dict[str, SharedClaim] = field(default_factory=dict)  # namespace/name → a shared claim


@dataclass(slots=True)
class SharedClaim:
    """A shared claim of the scenario: its object (given devices by its first placed or Binding user) and its
    one request."""

    obj: JSON
    spec: ClaimSpec
    allocation: JSON | None = None  # status.allocation once a placed or Binding user took its devices
    node: str = ""  # … on this node


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    name: str
    shared: str = ""  # a shared ResourceClaim's name
    device_class: str = dra.GPU_DRIVER
    count: int = 1
    mode: str = "ExactCount"
    selectors: tuple[str, ...] = ()


def _selectors(e: Entry, key: str) -> list[JSON]:
    out = []
    for i, raw in enumerate(e.sequence(key)):
        if not isinstance(raw, str) or not raw.strip():
            raise e.error(f"{key}[{i}]", f"expected a CEL expression, got {raw!r}")
        out.append({"cel": {"expression": raw}})
    return out


def _request(name: str, device_class: str, count: int, mode: str, selectors: list[JSON]) -> JSON:
    out: JSON = {"name": name, "deviceClassName": device_class, "allocationMode": mode}
    if mode == "ExactCount":
        out["count"] = count
    if selectors:
        out["selectors"] = selectors
    return out


def node_devices(e: Entry, name: str, gpu_memory_mib: int | None, facts: DraFacts) -> JSON | None:
    """The node's ResourceSlice (`draGpus`, `draDevices`), or None when it publishes no device."""
    gpus = e.integer("draGpus", 0, minimum=0, maximum=MAX_OBJECTS) or 0
    devices: list[JSON] = []
    taken: list[tuple[str, str, str]] = []
    for i in range(gpus):
        attributes: JSON = {"type": {"string": "gpu"}, "index": {"int": i}, "uuid": {"string": f"GPU-{name}-{i}"}}
        basic: JSON = {"attributes": attributes}
        if gpu_memory_mib:
            basic["capacity"] = {"memory": {"value": f"{gpu_memory_mib}Mi"}}
        devices.append({"name": f"gpu-{i}", "basic": basic})
        taken.append((dra.GPU_DRIVER, name, f"gpu-{i}"))
    for i, raw in enumerate(e.mappings("draDevices")):
        device = Entry(e.where, raw, e.kind, e.name, f"draDevices[{i}]")
        device.check_keys(DEVICE_FIELDS)
        driver = device.text("driver", dra.GPU_DRIVER)
        if driver != dra.GPU_DRIVER:
            raise device.error("driver", f"a node's devices are of driver {dra.GPU_DRIVER}; use devicePools for others")
        devices.append({"name": device.required_text("name"), "basic": _basic(device)})
        taken.append((driver, name, device.required_text("name")))
    if not devices:
        return None
    facts.free[name] = taken
    facts.devices[name] = list(taken)
    return {
        "apiVersion": dra.API_VERSION,
        "kind": "ResourceSlice",
        "metadata": meta.metadata("ResourceSlice", f"{name}-{dra.GPU_DRIVER}"),
        "spec": {
            "driver": dra.GPU_DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _basic(device: Entry) -> JSON:
    attributes: JSON = {}
    for key, value in device.mapping("attributes").items():
        if isinstance(value, bool):
            attributes[key] = {"bool": value}
        elif isinstance(value, int):
            attributes[key] = {"int": value}
        elif isinstance(value, str):
            attributes[key] = {"string": value}
        else:
            raise device.error(f"attributes.{key}", f"expected a bool, int or string, got {value!r}")
    capacity = {k: {"value": str(v)} for k, v in device.mapping("capacity").items()}
    out: JSON = {"attributes": attributes}
    if capacity:
        out["capacity"] = capacity
    return out


def device_classes(top: Entry, facts: DraFacts, wanted: bool) -> list[meta.Built]:
    """The declared DeviceClasses; `gpu.nvidia.com` (every device of NVIDIA's GPU driver) when none is declared
    and some node or pool publishes devices."""
    out = []
    for e in top.named_items("deviceClasses", "deviceClass"):
        e.check_keys(DEVICE_CLASS_FIELDS)
        facts.classes[e.name] = dra.GPU_DRIVER
        obj = {
            "apiVersion": dra.API_VERSION,
            "kind": "DeviceClass",
            "metadata": meta.metadata("DeviceClass", e.name),
            "spec": {"selectors": _selectors(e, "selectors")},
        }
        out.append(meta.Built(obj, e.where.at(e.data)))
    if not out and wanted:
        facts.classes[dra.GPU_DRIVER] = dra.GPU_DRIVER
        obj = {
            "apiVersion": dra.API_VERSION,
            "kind": "DeviceClass",
            "metadata": meta.metadata("DeviceClass", dra.GPU_DRIVER),
            "spec": {"selectors": [{"cel": {"expression": GPU_CLASS_SELECTOR}}]},
        }
        out.append(meta.Built(obj, top.where.source))
    return out


def device_pools(top: Entry) -> list[meta.Built]:
    """Network-attached pools: devices reachable from every node whose labels match `nodeSelector`."""
    out = []
    for e in top.named_items("devicePools", "devicePool"):
        e.check_keys(POOL_FIELDS)
        devices = []
        for i, raw in enumerate(e.mappings("devices")):
            device = Entry(e.where, raw, e.kind, e.name, f"devices[{i}]")
            device.check_keys(DEVICE_FIELDS[:1] + DEVICE_FIELDS[2:])
            devices.append({"name": device.required_text("name"), "basic": _basic(device)})
        labels = e.text_map("nodeSelector")
        terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(labels.items())]}]
        spec: JSON = {
            "driver": e.required_text("driver"),
            "pool": {"name": e.name, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        }
        if labels:
            spec["nodeSelector"] = {"nodeSelectorTerms": terms}
        else:
            spec["allNodes"] = True
        obj = {
            "apiVersion": dra.API_VERSION,
            "kind": "ResourceSlice",
            "metadata": meta.metadata("ResourceSlice", f"pool-{e.name}"),
            "spec": spec,
        }
        out.append(meta.Built(obj, e.where.at(e.data)))
    return out


def shared_claims(top: Entry, facts: DraFacts) -> list[meta.Built]:
    """ResourceClaims that pods name directly (shared); `queue` becomes the queue label KAI requires."""
    out = []
    for e in top.named_items("resourceClaims", "resourceClaim"):
        e.check_keys(CLAIM_FIELDS)
        namespace = e.text("namespace", "default")
        labels = e.text_map("labels")
        if e.text("queue"):
            labels[constants.LABEL_QUEUE] = e.text("queue")
        spec = _claim_spec(e, "devices")
        obj = {
            "apiVersion": dra.API_VERSION,
            "kind": "ResourceClaim",
            "metadata": meta.metadata("ResourceClaim", e.name, namespace=namespace, labels=labels),
            "spec": spec,
        }
        request = spec["devices"]["requests"][0]
        claim_spec = ClaimSpec(
            e.name,
            device_class=request["deviceClassName"],
            count=request.get("count", 1),
            mode=request["allocationMode"],
            selectors=tuple(str(s["cel"]["expression"]) for s in request.get("selectors", ())),
        )
        facts.shared[f"{namespace}/{e.name}"] = SharedClaim(obj, claim_spec)
        out.append(meta.Built(obj, e.where.at(e.data)))
    return out


def _claim_spec(e: Entry, request_name: str) -> JSON:
    mode = e.text("allocationMode", "ExactCount")
    if mode not in dra.ALLOCATION_MODES:
        raise e.error("allocationMode", f"unknown mode {mode!r}; want ExactCount or All")
    count = e.integer("count", 1, minimum=1, maximum=MAX_OBJECTS) or 1
    request = _request(request_name, e.text("deviceClass", dra.GPU_DRIVER), count, mode, _selectors(e, "selectors"))
    return {"devices": {"requests": [request]}}


def task_claims(e: Entry) -> tuple[ClaimSpec, ...]:
    """A task's claims: `draGpus: N` (one claim `gpu` of N GPUs) and the `claims` listed."""
    out = []
    gpus = e.integer("draGpus", 0, minimum=0, maximum=MAX_OBJECTS) or 0
    if gpus:
        out.append(ClaimSpec("gpu", count=gpus))
    for i, raw in enumerate(e.mappings("claims")):
        c = Entry(e.where, raw, e.kind, e.name, f"claims[{i}]")
        c.check_keys(TASK_CLAIM_FIELDS)
        name = c.required_text("name")
        if any(s.name == name for s in out):
            raise c.error("name", f"duplicate claim name {name!r}")
        if c.text("claim"):
            out.append(ClaimSpec(name, shared=c.text("claim")))
            continue
        mode = c.text("allocationMode", "ExactCount")
        if mode not in dra.ALLOCATION_MODES:
            raise c.error("allocationMode", f"unknown mode {mode!r}; want ExactCount or All")
        selectors = c.sequence("selectors")
        for j, s in enumerate(selectors):
            if not isinstance(s, str) or not s.strip():
                raise c.error(f"selectors[{j}]", f"expected a CEL expression, got {s!r}")
        out.append(
            ClaimSpec(
                name,
                device_class=c.text("deviceClass", dra.GPU_DRIVER),
                count=c.integer("count", 1, minimum=1, maximum=MAX_OBJECTS) or 1,
                mode=mode,
                selectors=tuple(selectors),
            )
        )
    return tuple(out)


def pod_objects(
    pod: JSON, claims: tuple[ClaimSpec, ...], node: str, facts: DraFacts, e: Entry, *, binding: bool = False
) -> tuple[list[JSON], list[JSON]]:
    """Add the claims to the pod; return its templates and, for a task on `node`, its claims made (allocated and
    reserved for it when placed), with the BindRequest's `resourceClaimAllocations` when it is `binding`."""
    meta_ = pod["metadata"]
    name, namespace = meta_["name"], meta_["namespace"]
    pod["spec"]["resourceClaims"] = [
        {"name": c.name, "resourceClaimName": c.shared}
        if c.shared
        else {"name": c.name, "resourceClaimTemplateName": f"{name}-{c.name}"}
        for c in claims
    ]
    reserved = {"resource": "pods", "name": name, "uid": meta_["uid"]}
    out: list[JSON] = []
    statuses = []
    allocations: list[JSON] = []
    for c in claims:
        if c.shared:
            if node:
                allocation = _use_shared(facts, f"{namespace}/{c.shared}", node, reserved, e, binding=binding)
                if binding:
                    allocations.append({"name": c.name, "allocation": allocation})
            continue
        spec = {
            "devices": {
                "requests": [
                    _request(
                        "devices", c.device_class, c.count, c.mode, [{"cel": {"expression": s}} for s in c.selectors]
                    )
                ]
            }
        }
        out.append(
            {
                "apiVersion": dra.API_VERSION,
                "kind": "ResourceClaimTemplate",
                "metadata": meta.metadata("ResourceClaimTemplate", f"{name}-{c.name}", namespace=namespace),
                "spec": {"spec": spec},
            }
        )
        if not node:
            continue
        claim_name = f"{name}-{c.name}"
        allocation = _allocation(_take(facts, node, c, e), node)
        claim: JSON = {
            "apiVersion": dra.API_VERSION,
            "kind": "ResourceClaim",
            "metadata": {
                **meta.metadata(
                    "ResourceClaim",
                    claim_name,
                    namespace=namespace,
                    annotations={dra.ANNOTATION_POD_CLAIM_NAME: c.name},
                ),
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": meta_["uid"], "controller": True}
                ],
            },
            "spec": spec,
        }
        if binding:  # made by the resourceclaim controller; the binder writes the devices
            allocations.append({"name": c.name, "allocation": allocation})
        else:
            claim["status"] = {"allocation": allocation, "reservedFor": [reserved]}
        out.append(claim)
        statuses.append({"name": c.name, "resourceClaimName": claim_name})
    if statuses:
        pod["status"]["resourceClaimStatuses"] = statuses
    return out, allocations


def _allocation(results: list[JSON], node: str) -> JSON:
    return {
        "devices": {"results": results},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        },
    }


def _use_shared(facts: DraFacts, key: str, node: str, reserved: JSON, e: Entry, *, binding: bool) -> JSON:
    """The allocation of shared claim `key` for a user on `node`: taken there by its first placed or Binding
    user; a placed user is added to its `reservedFor` (a Binding one is added by the binder)."""
    shared = facts.shared.get(key)
    if shared is None:
        raise e.error("claims", f"shared claim {key} is not among the scenario's resourceClaims")
    if shared.allocation is None:
        shared.allocation, shared.node = _allocation(_take(facts, node, shared.spec, e), node), node
    elif shared.node != node:
        raise e.error("claims", f"shared claim {key} is allocated on node {shared.node}, not on {node}")
    status = shared.obj.setdefault("status", {})
    if not binding:
        status["allocation"] = shared.allocation
        status.setdefault("reservedFor", []).append(reserved)
    return dict(shared.allocation)


def _take(facts: DraFacts, node: str, c: ClaimSpec, e: Entry) -> list[JSON]:
    """Devices for claim `c` on `node`: its `count` first free ones, or (`All`) every one of the node's devices,
    all of them free."""
    free = facts.free.get(node, [])
    if c.selectors:
        raise e.error("claims", "a placed task's claims take devices in order: no selectors here")
    if c.mode == "All":
        devices = facts.devices.get(node, [])
        if not devices or len(free) < len(devices):
            raise e.error(
                "claims", f"claim {c.name} takes all of node {node}'s devices: {len(free)} of {len(devices)} free"
            )
        taken, facts.free[node] = free, []
    else:
        if len(free) < c.count:
            raise e.error("claims", f"node {node} has {len(free)} DRA device(s) left, claim {c.name} needs {c.count}")
        taken, facts.free[node] = free[: c.count], free[c.count :]
    return [{"request": "devices", "driver": d, "pool": p, "device": n} for d, p, n in taken]


def any_devices(top: Entry) -> bool:
    nodes: list[Any] = top.sequence("nodes")
    return bool(top.data.get("devicePools")) or any(
        isinstance(n, dict) and (n.get("draGpus") or n.get("draDevices")) for n in nodes
    )
