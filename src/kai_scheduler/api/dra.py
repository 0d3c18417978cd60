"""Dynamic Resource Allocation objects (`resource.k8s.io/v1beta1`, Kubernetes 1.32): DeviceClass, ResourceSlice,
ResourceClaim, ResourceClaimTemplate, and the pod's `spec.resourceClaims` (BEHAVIOR.md §4 `dynamicresources`).

Only what scheduling reads is kept: CEL selectors stay text (compiled above, in the model), device attributes
and capacities are plain values. Every parse error names the object and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kai_scheduler.api import selectors
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta

API_VERSION: Final = "resource.k8s.io/v1beta1"
GPU_DRIVER: Final = "gpu.nvidia.com"  # NVIDIA's DRA driver, and the DeviceClass it installs for whole GPUs
# Set by the resourceclaim controller on a claim it made from a template: which pod claim it serves.
ANNOTATION_POD_CLAIM_NAME: Final = "resource.kubernetes.io/pod-claim-name"
ALLOCATION_MODES: Final = ("ExactCount", "All")
MAX_RESERVED_FOR: Final = 256  # the API's cap on `status.reservedFor`

Attribute = bool | int | str  # a device attribute: bool, int, string or version (kept as its string)


def is_gpu_class(name: str) -> bool:
    """Whether devices of this DeviceClass count as GPUs in queue accounting (KAI: extended resources backed by
    the NVIDIA GPU DeviceClass): `gpu.nvidia.com`, or a class named in its domain (`*.gpu.nvidia.com`)."""
    return name == GPU_DRIVER or name.endswith("." + GPU_DRIVER)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    meta: ObjectMeta
    selectors: tuple[str, ...] = ()  # CEL expressions
    config: tuple[JSON, ...] = ()  # `spec.config[]` ({opaque: {driver, parameters}}), as written

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_dict(cls, data: JSON) -> DeviceClass:
        r = Reader(data, "DeviceClass")
        return cls(
            meta=ObjectMeta.read(r), selectors=_selectors(r, "spec.selectors"), config=_configs(r, "spec.config")
        )

    def to_dict(self) -> JSON:
        spec: JSON = {"selectors": _selectors_dict(self.selectors)}
        if self.config:
            spec["config"] = [dict(c) for c in self.config]
        return {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": self.meta.to_dict(), "spec": spec}


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: tuple[tuple[str, Attribute], ...] = ()  # qualified names ("gpu.nvidia.com/productName"), sorted
    capacity: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> JSON:
        kinds = {bool: "bool", int: "int", str: "string"}
        attributes = {k: {kinds[type(v)]: v} for k, v in self.attributes}
        capacity = {k: {"value": str(int(v)) if float(v).is_integer() else repr(v)} for k, v in self.capacity}
        return {"name": self.name, "basic": {"attributes": attributes, "capacity": capacity}}


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """One slice of a pool: devices of one driver, on one node (`nodeName`) or reachable from the nodes that
    match `node_selector` (network-attached), or from every node (`allNodes`)."""

    meta: ObjectMeta
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    node_selector: tuple[selectors.NodeSelectorTerm, ...] = ()  # ORed
    all_nodes: bool = False
    devices: tuple[Device, ...] = ()

    @classmethod
    def from_dict(cls, data: JSON) -> ResourceSlice:
        r = Reader(data, "ResourceSlice")
        meta = ObjectMeta.read(r)
        driver = r.str("spec.driver")
        if not driver:
            raise r.error("spec.driver", "missing driver")
        pool = r.str("spec.pool.name")
        if not pool:
            raise r.error("spec.pool.name", "missing pool name")
        node_name = r.str("spec.nodeName")
        raw_selector = r.get("spec.nodeSelector")
        all_nodes = r.bool("spec.allNodes")
        if sum((bool(node_name), raw_selector is not None, all_nodes)) != 1:
            raise r.error("spec", "exactly one of nodeName, nodeSelector and allNodes must be set")
        terms: tuple[selectors.NodeSelectorTerm, ...] = ()
        if raw_selector is not None:
            if not isinstance(raw_selector, dict):
                raise r.error("spec.nodeSelector", f"expected a node selector, got {raw_selector!r}")
            path = "spec.nodeSelector.nodeSelectorTerms"
            raw_terms = raw_selector.get("nodeSelectorTerms")
            terms = selectors.parse_node_selector_terms(raw_terms, "ResourceSlice", r.name, path)
        devices = []
        seen: set[str] = set()
        for i, raw in enumerate(r.list("spec.devices")):
            device = _device(r, f"spec.devices[{i}]", raw)
            if device.name in seen:
                raise r.error(f"spec.devices[{i}].name", f"duplicate device {device.name!r}")
            seen.add(device.name)
            devices.append(device)
        return cls(
            meta=meta,
            driver=driver,
            pool=pool,
            generation=r.int("spec.pool.generation", 0) or 0,
            slice_count=r.int("spec.pool.resourceSliceCount", 1) or 1,
            node_name=node_name,
            node_selector=terms,
            all_nodes=all_nodes,
            devices=tuple(devices),
        )

    def to_dict(self) -> JSON:
        spec: JSON = {
            "driver": self.driver,
            "pool": {"name": self.pool, "generation": self.generation, "resourceSliceCount": self.slice_count},
            "devices": [d.to_dict() for d in self.devices],
        }
        if self.node_name:
            spec["nodeName"] = self.node_name
        elif self.all_nodes:
            spec["allNodes"] = True
        else:
            spec["nodeSelector"] = {
                "nodeSelectorTerms": [selectors.node_selector_term_dict(t) for t in self.node_selector]
            }
        return {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": self.meta.to_dict(), "spec": spec}


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim: devices of a class, filtered by CEL selectors, `count` of them or `All`."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = "ExactCount"
    count: int = 1
    admin_access: bool = False

    def to_dict(self) -> JSON:
        out: JSON = {"name": self.name, "deviceClassName": self.device_class, "allocationMode": self.allocation_mode}
        if self.allocation_mode == "ExactCount":
            out["count"] = self.count
        if self.selectors:
            out["selectors"] = _selectors_dict(self.selectors)
        if self.admin_access:
            out["adminAccess"] = True
        return out


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One allocated device (`status.allocation.devices.results[]`)."""

    request: str
    driver: str
    pool: str
    device: str

    def to_dict(self) -> JSON:
        return {"request": self.request, "driver": self.driver, "pool": self.pool, "device": self.device}


@dataclass(frozen=True, slots=True)
class Allocation:
    results: tuple[DeviceResult, ...]
    node_selector: JSON | None = None  # the allocation's `nodeSelector`, as written
    # `devices.config[]`: the configuration the drivers get with the devices, as Kubernetes' allocator writes it:
    # each class's configs for the requests of that class (`source: FromClass`), then the claim's (`FromClaim`).
    config: tuple[JSON, ...] = ()

    def to_dict(self) -> JSON:
        devices: JSON = {"results": [d.to_dict() for d in self.results]}
        if self.config:
            devices["config"] = [dict(c) for c in self.config]
        out: JSON = {"devices": devices}
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        return out

    @classmethod
    def read(cls, r: Reader, path: str, raw: Any) -> Allocation:
        if not isinstance(raw, dict):
            raise r.error(path, f"expected an allocation, got {raw!r}")
        devices = raw.get("devices") or {}
        if not isinstance(devices, dict):  # read as none, the claim would count as allocated to no device
            raise r.error(f"{path}.devices", f"expected a mapping, got {devices!r}")
        results = devices.get("results")
        if results is not None and not isinstance(results, list):
            raise r.error(f"{path}.devices.results", f"expected a list of device results, got {results!r}")
        out = []
        for i, item in enumerate(results or []):
            where = f"{path}.devices.results[{i}]"
            if not isinstance(item, dict):
                raise r.error(where, f"expected a device result, got {item!r}")
            values = [item.get(k) for k in ("request", "driver", "pool", "device")]
            if not all(isinstance(v, str) and v for v in values):
                raise r.error(where, "request, driver, pool and device must all be set")
            out.append(DeviceResult(*(str(v) for v in values)))
        selector = raw.get("nodeSelector")
        config = devices.get("config")
        if config is not None and not (isinstance(config, list) and all(isinstance(c, dict) for c in config)):
            raise r.error(f"{path}.devices.config", f"expected a list of configurations, got {config!r}")
        return cls(tuple(out), selector if isinstance(selector, dict) else None, tuple(config or ()))


@dataclass(frozen=True, slots=True)
class Consumer:
    """An entry of `status.reservedFor`."""

    resource: str
    name: str
    uid: str

    def to_dict(self) -> JSON:
        return {"resource": self.resource, "name": self.name, "uid": self.uid}


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    meta: ObjectMeta
    requests: tuple[DeviceRequest, ...]
    allocation: Allocation | None = None
    reserved_for: tuple[Consumer, ...] = ()
    config: tuple[JSON, ...] = ()  # `spec.devices.config[]` ({requests, opaque}), as written

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def owner_pod_uid(self) -> str:
        """The pod this claim was made for from a template (its controlling Pod owner), "" for a shared claim."""
        if ANNOTATION_POD_CLAIM_NAME not in self.meta.annotations:
            return ""
        return next((o.uid for o in self.meta.owner_references if o.kind == "Pod"), "")

    @classmethod
    def from_dict(cls, data: JSON) -> ResourceClaim:
        r = Reader(data, "ResourceClaim")
        meta = ObjectMeta.read(r)
        raw = r.get("status.allocation")
        allocation = Allocation.read(r, "status.allocation", raw) if raw is not None else None
        reserved = []
        for i, item in enumerate(r.list("status.reservedFor")):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise r.error(f"status.reservedFor[{i}]", f"expected a consumer reference, got {item!r}")
            reserved.append(Consumer(str(item.get("resource", "pods")), item["name"], str(item.get("uid", ""))))
        return cls(
            meta=meta,
            requests=_requests(r, "spec"),
            allocation=allocation,
            reserved_for=tuple(reserved),
            config=_configs(r, "spec.devices.config"),
        )

    def to_dict(self) -> JSON:
        out: JSON = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaim",
            "metadata": self.meta.to_dict(),
            "spec": {"devices": self._devices_dict()},
        }
        status: JSON = {}
        if self.allocation is not None:
            status["allocation"] = self.allocation.to_dict()
        if self.reserved_for:
            status["reservedFor"] = [c.to_dict() for c in self.reserved_for]
        if status:
            out["status"] = status
        return out

    def _devices_dict(self) -> JSON:
        devices: JSON = {"requests": [q.to_dict() for q in self.requests]}
        if self.config:
            devices["config"] = [dict(c) for c in self.config]
        return devices

    def allocation_config(self, classes: Mapping[str, DeviceClass], requests: Iterable[str]) -> tuple[JSON, ...]:
        """`devices.config` of an allocation of this claim whose results answer `requests`: the configs of each
        such request's DeviceClass (`FromClass`, for that request), then the claim's own (`FromClaim`)."""
        answered = set(requests)
        out: list[JSON] = []
        for request in self.requests:
            device_class = classes.get(request.device_class)
            if request.name not in answered or device_class is None:
                continue
            out += [{"source": "FromClass", "requests": [request.name], **c} for c in device_class.config]
        for c in self.config:
            out.append({"source": "FromClaim", **c})
        return tuple(out)


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    meta: ObjectMeta
    requests: tuple[DeviceRequest, ...]
    claim_labels: dict[str, str] = field(default_factory=dict)
    claim_annotations: dict[str, str] = field(default_factory=dict)
    spec: JSON = field(default_factory=dict)  # `spec.spec`, copied into the claims made from it

    @classmethod
    def from_dict(cls, data: JSON) -> ResourceClaimTemplate:
        r = Reader(data, "ResourceClaimTemplate")
        spec = r.get("spec.spec")
        return cls(
            meta=ObjectMeta.read(r),
            requests=_requests(r, "spec.spec"),
            claim_labels=r.str_map("spec.metadata.labels"),
            claim_annotations=r.str_map("spec.metadata.annotations"),
            spec=dict(spec) if isinstance(spec, dict) else {},
        )

    def to_dict(self) -> JSON:
        template: JSON = {"spec": {**self.spec, "devices": {"requests": [q.to_dict() for q in self.requests]}}}
        claim_meta = {k: v for k, v in (("labels", self.claim_labels), ("annotations", self.claim_annotations)) if v}
        if claim_meta:
            template["metadata"] = claim_meta
        return {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaimTemplate",
            "metadata": self.meta.to_dict(),
            "spec": template,
        }


@dataclass(frozen=True, slots=True)
class PodClaim:
    """An entry of a pod's `spec.resourceClaims`: a claim by name, or one made per pod from a template."""

    name: str
    claim_name: str = ""
    template_name: str = ""


def pod_claims(r: Reader) -> tuple[PodClaim, ...]:
    out = []
    names: set[str] = set()
    for i, raw in enumerate(r.list("spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        if not isinstance(raw, dict):
            raise r.error(path, f"expected a pod resource claim, got {raw!r}")
        name, claim, template = raw.get("name"), raw.get("resourceClaimName"), raw.get("resourceClaimTemplateName")
        if not isinstance(name, str) or not name:
            raise r.error(f"{path}.name", "missing name")
        if name in names:
            raise r.error(f"{path}.name", f"duplicate claim name {name!r}")
        names.add(name)
        if bool(claim) == bool(template):
            raise r.error(path, "exactly one of resourceClaimName and resourceClaimTemplateName must be set")
        if not isinstance(claim or template, str):
            raise r.error(path, f"expected a name, got {claim or template!r}")
        out.append(PodClaim(name, str(claim or ""), str(template or "")))
    return tuple(out)


def pod_claim_statuses(r: Reader) -> dict[str, str]:
    """`status.resourceClaimStatuses`: pod claim name → the ResourceClaim made for it from its template."""
    out = {}
    for i, raw in enumerate(r.list("status.resourceClaimStatuses")):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise r.error(f"status.resourceClaimStatuses[{i}]", f"expected a claim status, got {raw!r}")
        made = raw.get("resourceClaimName")
        if isinstance(made, str) and made:
            out[raw["name"]] = made
    return out


def pod_claims_dict(claims: tuple[PodClaim, ...]) -> list[JSON]:
    out: list[JSON] = []
    for c in claims:
        entry: JSON = {"name": c.name}
        if c.claim_name:
            entry["resourceClaimName"] = c.claim_name
        else:
            entry["resourceClaimTemplateName"] = c.template_name
        out.append(entry)
    return out


def _selectors_dict(expressions: tuple[str, ...]) -> list[JSON]:
    return [{"cel": {"expression": e}} for e in expressions]


def _selectors(r: Reader, path: str) -> tuple[str, ...]:
    out = []
    for i, raw in enumerate(r.list(path)):
        if not isinstance(raw, dict) or not isinstance(raw.get("cel"), dict):
            raise r.error(f"{path}[{i}]", f"expected a selector with a cel expression, got {raw!r}")
        expression = raw["cel"].get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise r.error(f"{path}[{i}].cel.expression", "missing expression")
        out.append(expression)
    return tuple(out)


def _configs(r: Reader, path: str) -> tuple[JSON, ...]:
    """A list of device configurations (`{requests?, opaque: {driver, parameters}}`), kept as written."""
    out = []
    for i, raw in enumerate(r.list(path)):
        opaque = raw.get("opaque") if isinstance(raw, dict) else None
        if not isinstance(opaque, dict) or not isinstance(opaque.get("driver"), str) or not opaque["driver"]:
            raise r.error(f"{path}[{i}]", f"expected a configuration with opaque.driver, got {raw!r}")
        requests = raw.get("requests")
        if requests is not None and not (isinstance(requests, list) and all(isinstance(q, str) for q in requests)):
            raise r.error(f"{path}[{i}].requests", f"expected request names, got {requests!r}")
        out.append(dict(raw))
    return tuple(out)


def _requests(r: Reader, spec: str) -> tuple[DeviceRequest, ...]:
    path = f"{spec}.devices.requests"
    out = []
    names: set[str] = set()
    for i, raw in enumerate(r.list(path)):
        where = f"{path}[{i}]"
        if not isinstance(raw, dict):
            raise r.error(where, f"expected a device request, got {raw!r}")
        name, device_class = raw.get("name"), raw.get("deviceClassName")
        if not isinstance(name, str) or not name:
            raise r.error(f"{where}.name", "missing name")
        if name in names:
            raise r.error(f"{where}.name", f"duplicate request name {name!r}")
        names.add(name)
        if not isinstance(device_class, str) or not device_class:
            raise r.error(f"{where}.deviceClassName", "missing device class")
        mode = raw.get("allocationMode", "ExactCount") or "ExactCount"
        if mode not in ALLOCATION_MODES:
            raise r.error(f"{where}.allocationMode", f"unknown mode {mode!r}; want ExactCount or All")
        count = raw.get("count", 1)
        if mode == "All":
            count = 0
        elif isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise r.error(f"{where}.count", f"want a positive integer, got {count!r}")
        out.append(
            DeviceRequest(
                name=name,
                device_class=device_class,
                selectors=_selectors(r, f"{where}.selectors"),
                allocation_mode=mode,
                count=count,
                admin_access=bool(raw.get("adminAccess", False)),
            )
        )
    return tuple(out)


def _device(r: Reader, path: str, raw: Any) -> Device:
    if not isinstance(raw, dict):
        raise r.error(path, f"expected a device, got {raw!r}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise r.error(f"{path}.name", "missing name")
    basic = raw.get("basic") or {}
    if not isinstance(basic, dict):
        raise r.error(f"{path}.basic", f"expected a mapping, got {basic!r}")
    attributes: list[tuple[str, Attribute]] = []
    raw_attributes = basic.get("attributes") or {}
    if not isinstance(raw_attributes, dict):
        raise r.error(f"{path}.basic.attributes", f"expected a mapping, got {raw_attributes!r}")
    for key, value in raw_attributes.items():
        attributes.append((str(key), _attribute(r, f"{path}.basic.attributes.{key}", value)))
    capacity: list[tuple[str, float]] = []
    raw_capacity = basic.get("capacity") or {}
    if not isinstance(raw_capacity, dict):
        raise r.error(f"{path}.basic.capacity", f"expected a mapping, got {raw_capacity!r}")
    for key, value in raw_capacity.items():
        amount = value.get("value") if isinstance(value, dict) else value
        capacity.append((str(key), r.quantity(f"{path}.basic.capacity.{key}", amount)))
    return Device(name, tuple(sorted(attributes)), tuple(sorted(capacity)))


def _attribute(r: Reader, path: str, raw: Any) -> Attribute:
    if isinstance(raw, dict) and len(raw) == 1:
        kind, value = next(iter(raw.items()))
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind in ("string", "version") and isinstance(value, str):
            return value
    raise r.error(path, f"expected one of bool, int, string or version, got {raw!r}")
