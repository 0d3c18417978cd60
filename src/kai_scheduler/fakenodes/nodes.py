"""Build the fake Node objects: GPU capacity, the labels KAI reads (BEHAVIOR §2, §6, §7.3), Ready.

Node `i` of a fleet is `<prefix>-<i>`. Topology labels, when asked: node i is in rack `rack-<i // R>`
(label `kai.scheduler/rack`) and zone `zone-<i // Z>` (label `topology.kubernetes.io/zone`); Z must be a
multiple of R so that a rack never spans two zones. Every fake node carries `kai.scheduler/fake-node=true`:
the fleet adopts only nodes with that label, and the kubelet plays only those it was given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kai_scheduler.api import constants, mig
from kai_scheduler.api.errors import UserError
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.meta import is_label_value
from kai_scheduler.api.quantity import QuantityError, near_miss, parse_quantity
from kai_scheduler.store.interface import JSON

LABEL_FAKE_NODE = "kai.scheduler/fake-node"
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_ROLE_GPU_WORKER = "node-role.kubernetes.io/gpu-worker"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_RACK = "kai.scheduler/rack"
KUBELET_VERSION = "v1.31.0-kai-fake"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_NAME = re.compile(f"^{_NAME}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def to_dict(self) -> JSON:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """What the fake nodes look like; quantities are Kubernetes quantity strings, checked by `check()`."""

    count: int = 1
    gpus: int = 8
    gpu_product: str = "NVIDIA-A100-SXM4-80GB"
    gpu_memory_mib: int = 81920
    cpu: str = "128"
    memory: str = "1Ti"
    pods: int = 110
    prefix: str = "kai-fake-node"
    node_pool: str = ""
    node_pool_label: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    labels: dict[str, str] = field(default_factory=dict)
    rack_size: int = 0  # 0: no rack label
    zone_size: int = 0  # 0: no zone label
    taints: tuple[Taint, ...] = ()
    mig: tuple[tuple[str, int], ...] = ()  # MIG instances per profile: the mixed strategy

    def check(self) -> None:
        """Raise ValueError (one line naming the flag) on a spec that cannot make valid nodes."""
        for flag, value, minimum in (
            ("--count", self.count, 0),
            ("--gpus", self.gpus, 0),
            ("--gpu-memory", self.gpu_memory_mib, 0),
            ("--pods", self.pods, 1),
            ("--rack-size", self.rack_size, 0),
            ("--zone-size", self.zone_size, 0),
        ):
            if value < minimum:
                raise UserError(f"{flag}: must be at least {minimum}, got {value}")
        check_quantity("--cpu", self.cpu)
        check_quantity("--memory", self.memory)
        if not _NODE_NAME.match(f"{self.prefix}-0") or len(f"{self.prefix}-{max(self.count - 1, 0)}") > 253:
            raise UserError(f"--prefix: {self.prefix!r} does not make valid node names (lower-case DNS names)")
        check_label("--gpu-product", LABEL_GPU_PRODUCT, self.gpu_product)
        if self.node_pool:
            check_label("--node-pool", self.node_pool_label, self.node_pool)
        for key, text in self.labels.items():
            check_label("--label", key, text)
        if self.rack_size and self.zone_size and self.zone_size % self.rack_size:
            raise UserError(
                f"--zone-size: must be a multiple of --rack-size ({self.rack_size}) so that a rack "
                f"stays in one zone, got {self.zone_size}"
            )

    def names(self) -> list[str]:
        return [node_name(self.prefix, i) for i in range(self.count)]


def node_name(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


def build_nodes(spec: FleetSpec, now: float) -> list[JSON]:
    """The fleet's Node objects, in index order."""
    return [build_node(spec, i, now) for i in range(spec.count)]


def build_node(spec: FleetSpec, index: int, now: float) -> JSON:
    name = node_name(spec.prefix, index)
    resources = {
        constants.RESOURCE_CPU: spec.cpu,
        constants.RESOURCE_MEMORY: spec.memory,
        constants.RESOURCE_PODS: str(spec.pods),
    }
    if spec.gpus:
        resources[constants.RESOURCE_GPU] = str(spec.gpus)
    for profile, count in spec.mig:
        resources[mig.RESOURCE_PREFIX + profile] = str(count)
    spec_part: JSON = {}
    if spec.taints:
        spec_part["taints"] = [t.to_dict() for t in spec.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(spec, index)},
        "spec": spec_part,
        "status": node_status(resources, now),
    }


def node_labels(spec: FleetSpec, index: int) -> dict[str, str]:
    """Derived labels first; the user's `--label`s win over them, the fake-node marker over everything."""
    name = node_name(spec.prefix, index)
    labels = {
        constants.LABEL_HOSTNAME: name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        LABEL_ROLE_GPU_WORKER: "",
    }
    if spec.gpus:
        labels[constants.LABEL_GPU_COUNT] = str(spec.gpus)
        labels[constants.LABEL_GPU_MEMORY] = str(spec.gpu_memory_mib)
        labels[LABEL_GPU_PRODUCT] = spec.gpu_product
    if spec.mig:
        labels[constants.LABEL_MIG_STRATEGY] = mig.STRATEGY_MIXED
    if spec.node_pool:
        labels[spec.node_pool_label] = spec.node_pool
    if spec.rack_size:
        labels[LABEL_RACK] = f"rack-{index // spec.rack_size}"
    if spec.zone_size:
        labels[LABEL_ZONE] = f"zone-{index // spec.zone_size}"
    labels.update(spec.labels)
    labels[LABEL_FAKE_NODE] = "true"
    return labels


def node_status(resources: dict[str, str], now: float) -> JSON:
    return {
        "capacity": dict(resources),
        "allocatable": dict(resources),
        "conditions": [ready_condition(now, now)],
        "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "operatingSystem": "linux", "architecture": "amd64"},
    }


def ready_condition(heartbeat: float, transition: float) -> JSON:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kai fake kubelet is posting ready status",
        "lastHeartbeatTime": format_time(heartbeat),
        "lastTransitionTime": format_time(transition),
    }


# --- parsing the command line's forms -------------------------------------------------------------------------


def parse_label(text: str) -> tuple[str, str]:
    """`key=value` (value may be empty) → (key, value); ValueError naming the flag."""
    key, sep, value = text.partition("=")
    if not sep:
        raise UserError(f"--label: want key=value, got {text!r}")
    check_label("--label", key, value)
    return key, value


def parse_taint(text: str) -> Taint:
    """`key=value:Effect` or `key:Effect` → Taint; ValueError naming the flag."""
    body, sep, effect = text.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        raise UserError(f"--taint: want key=value:Effect with Effect one of {', '.join(TAINT_EFFECTS)}, got {text!r}")
    key, _, value = body.partition("=")
    check_label("--taint", key, value)
    return Taint(key, value, effect)


def check_label(flag: str, key: str, value: str) -> None:
    """A Kubernetes label key (optional DNS-subdomain prefix, then a name) and value."""
    prefix, slash, name = key.rpartition("/")
    if not _LABEL_NAME.match(name) or (slash and (not _DNS_SUBDOMAIN.match(prefix) or len(prefix) > 253)):
        raise UserError(f"{flag}: invalid label key {key!r}")
    if not is_label_value(value):
        raise UserError(
            f"{flag}: invalid value {value!r} for label {key!r} (at most 63 characters: "
            "letters, digits, '-', '_', '.', starting and ending with a letter or digit)"
        )


def check_quantity(flag: str, text: str) -> None:
    try:
        amount = parse_quantity(text)
    except QuantityError:
        hint = near_miss(text)
        raise UserError(f"{flag}: invalid quantity {text!r}{hint or ' (want e.g. 128, 500m, 1Ti)'}") from None
    if amount < 0:
        raise UserError(f"{flag}: must not be negative, got {text!r}")


def parse_mig(text: str) -> tuple[str, int]:
    """`PROFILE=COUNT` of `--mig` (1g.10gb=7): a MIG profile and a count of at least 1."""
    profile, sep, raw = text.partition("=")
    if not sep or mig.parse_profile(profile) is None:
        raise UserError(f"--mig: want PROFILE=COUNT with a profile such as 1g.10gb, got {text!r}")
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise UserError(f"--mig: want a count of at least 1 instance, got {text!r}")
    return profile, count
