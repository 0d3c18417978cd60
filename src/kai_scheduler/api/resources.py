"""Pod resource requests as the scheduler counts them (§3.1) and the GPU request forms (§2, §6)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import constants, mig
from kai_scheduler.api.fields import Reader, plain_quantity
from kai_scheduler.api.quantity import QuantityError, to_bytes


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a pod asks of GPUs: whole devices, or a portion (by fraction or by memory) of `num_devices`, and
    MIG instances per profile (`mig`, sorted by profile name).

    At most one of `whole` > 0, `fraction` in (0, 1], `memory_mib` > 0 is set; MIG instances never come with a
    portion (a MIG request is its own resource type, §6).
    """

    whole: int = 0
    fraction: float = 0.0
    memory_mib: int = 0
    num_devices: int = 1
    mig: tuple[tuple[str, int], ...] = ()

    @property
    def is_shared(self) -> bool:
        return self.fraction > 0 or self.memory_mib > 0

    @property
    def is_mig(self) -> bool:
        return bool(self.mig)

    @property
    def is_gpu(self) -> bool:
        return self.whole > 0 or self.is_shared or self.is_mig

    @property
    def mig_units(self) -> int:
        """GPU units the MIG instances count in queue accounting: each instance its profile's slices."""
        return sum(count * mig.gpu_units(mig.RESOURCE_PREFIX + profile) for profile, count in self.mig)


NO_GPU = GpuRequest()


def pod_requests(r: Reader) -> dict[str, float]:
    """Containers + native sidecars, max'ed with the init-phase peak, plus overhead, plus `pods: 1`."""
    total: dict[str, float] = {}
    for i, c in enumerate(r.list("spec.containers")):
        _add(total, _container_requests(r, f"spec.containers[{i}]", c))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for i, c in enumerate(r.list("spec.initContainers")):
        req = _container_requests(r, f"spec.initContainers[{i}]", c)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            continue
        phase = dict(sidecars)
        _add(phase, req)
        for name, value in phase.items():
            init_peak[name] = max(init_peak.get(name, 0.0), value)
    _add(total, sidecars)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, 0.0), value)
    _add(total, r.resources("spec.overhead"))
    total[constants.RESOURCE_PODS] = 1.0
    return total


def plain_pod_requests(spec: dict[str, Any]) -> dict[str, float] | None:
    """`pod_requests` for the usual pod (plain containers, well-formed quantities, no init containers or
    overhead) read straight from the spec; None for anything else, which `pod_requests` then reads checked."""
    if spec.get("initContainers") is not None or spec.get("overhead") is not None:
        return None  # including malformed values such as "", which the checked reader reports
    containers = spec.get("containers")
    if type(containers) is not list:
        return None
    total: dict[str, float] = {}
    for container in containers:
        if type(container) is not dict:
            return None
        resources = container.get("resources")
        if resources is None:
            continue
        if type(resources) is not dict:
            return None
        requests = _plain_resources(resources.get("requests"))
        limits = _plain_resources(resources.get("limits"))
        if requests is None or limits is None:
            return None
        for name, value in limits.items():
            requests.setdefault(name, value)
        _add(total, requests)
    total[constants.RESOURCE_PODS] = 1.0
    return total


def _plain_resources(raw: Any) -> dict[str, float] | None:
    if raw is None:
        return {}
    if type(raw) is not dict:
        return None
    out = {}
    for name, value in raw.items():
        amount = plain_quantity(name, value)
        if amount is None:
            return None
        out[name] = amount
    return out


def _container_requests(r: Reader, path: str, container: Any) -> dict[str, float]:
    if not isinstance(container, dict):
        raise r.error(path, f"expected a container, got {container!r}")
    requests = r.resources(f"{path}.resources.requests")
    limits = r.resources(f"{path}.resources.limits")
    for name, value in limits.items():  # a limit without a request is the request (Kubernetes defaulting)
        requests.setdefault(name, value)
    return requests


def _add(into: dict[str, float], more: dict[str, float]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0.0) + value


def gpu_request(r: Reader, requests: dict[str, float], annotations: dict[str, str]) -> GpuRequest:
    """The pod's GPU request form; mutually exclusive forms and out-of-range values are errors (§2)."""
    whole = requests.get(constants.RESOURCE_GPU, 0.0)
    frac_raw = annotations.get(constants.ANNOTATION_GPU_FRACTION)
    mem_raw = annotations.get(constants.ANNOTATION_GPU_MEMORY)
    dev_raw = annotations.get(constants.ANNOTATION_GPU_FRACTION_NUM_DEVICES)
    path = "metadata.annotations"
    if not float(whole).is_integer():
        raise r.error(f"spec.containers.resources.{constants.RESOURCE_GPU}", f"GPU count {whole:g} is not whole")
    if frac_raw is not None and mem_raw is not None:
        raise r.error(path, "gpu-fraction and gpu-memory are mutually exclusive")
    instances = _mig_instances(r, requests)
    if instances and (frac_raw is not None or mem_raw is not None):
        raise r.error(path, "a fractional GPU request cannot be combined with MIG instances")
    if (frac_raw is not None or mem_raw is not None) and whole > 0:
        raise r.error(path, f"a fractional GPU request cannot be combined with {constants.RESOURCE_GPU}")
    num_devices = 1
    if dev_raw is not None:
        if frac_raw is None and mem_raw is None:
            raise r.error(f"{path}.gpu-fraction-num-devices", "needs gpu-fraction or gpu-memory")
        try:
            num_devices = int(dev_raw)
        except ValueError:
            num_devices = 0
        if num_devices < 1:
            raise r.error(f"{path}.gpu-fraction-num-devices", f"want a positive integer, got {dev_raw!r}")
    if frac_raw is not None:
        try:
            fraction = float(frac_raw)
        except ValueError:
            fraction = -1.0
        if not 0 < fraction <= 1:
            raise r.error(f"{path}.gpu-fraction", f"want a number in (0, 1], got {frac_raw!r}")
        return GpuRequest(fraction=fraction, num_devices=num_devices)
    if mem_raw is not None:
        try:
            memory = int(mem_raw)
        except ValueError:
            memory = 0
        if memory <= 0:
            raise r.error(f"{path}.gpu-memory", f"want a positive number of MiB, got {mem_raw!r}{_as_mib(mem_raw)}")
        return GpuRequest(memory_mib=memory, num_devices=num_devices)
    if whole or instances:
        return _devices(int(whole), instances)
    return NO_GPU


@functools.lru_cache(maxsize=256)
def _devices(whole: int, instances: tuple[tuple[str, int], ...]) -> GpuRequest:
    """A request of whole GPUs and MIG instances, one (frozen) object per form: a frozen dataclass's `__init__`
    sets each field through `object.__setattr__`, and most pods ask one of a few forms."""
    return GpuRequest(whole=whole, mig=instances)


def _mig_instances(r: Reader, requests: dict[str, float]) -> tuple[tuple[str, int], ...]:
    """The MIG instances requested, per profile; a bad profile or a count that is not whole is an error."""
    for name in requests:
        if name.startswith(mig.RESOURCE_PREFIX):
            break
    else:
        return ()  # nearly every pod: its requests are not sorted
    out = []
    for name, amount in sorted(requests.items()):
        if not mig.is_mig_resource(name) or not amount:
            continue
        field = f"spec.containers.resources.{name}"
        profile = mig.profile_of(name)
        if profile is None:
            raise r.error(field, f"unknown MIG profile {name[len(mig.RESOURCE_PREFIX) :]!r}; want {mig.PROFILE_FORMAT}")
        if not float(amount).is_integer() or amount < 0:
            raise r.error(field, f"MIG instance count {amount:g} is not a whole number")
        out.append((profile.name, int(amount)))
    return tuple(out)


def _as_mib(raw: object) -> str:
    """A hint for a gpu-memory written as a byte quantity ('20Gi' → ' (20Gi is 20480 MiB)'), else nothing."""
    if not isinstance(raw, str):
        return ""
    try:
        mib = to_bytes(raw) / 2**20
    except QuantityError:
        return ""
    if mib < 1:
        return ""
    return f" ({raw} is {int(mib)} MiB)" if mib == int(mib) else f" ({raw} is about {int(mib)} MiB)"
