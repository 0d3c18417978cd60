"""The GPUs PodGroups hold and ask through DRA claims, for their `resourcesStatus`, counted as the scheduler
counts them (docs/dra.md "Queues and fair share"; `cluster.dra`):

- a pod's per-pod (template) claims: the `count` of their ExactCount requests of a GPU DeviceClass (requested;
  allocated once the pod is bound), and the GPU devices their `All` requests got (both, once allocated);
- a shared claim: its GPU devices once allocated (its ExactCount GPU requests before), charged once, to the
  PodGroup of its first bound user (by pod namespace/name; its first user while none is bound): requested
  always, allocated while it is allocated and some user is bound.

A GPU device is a whole GPU of NVIDIA's driver as its ResourceSlice publishes it. The DRA kinds are optional: a
cluster that does not serve them reads as one without DRA, asked again every `RETRY` polls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from kai_scheduler.api import dra
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster import dra as dra_model
from kai_scheduler.controllers import status_write
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, NotFound

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY = 60  # polls between two asks of a DRA kind the cluster does not serve
RESOURCES = ("resourceclaims", "resourceclaimtemplates", "resourceslices")


@dataclass(frozen=True, slots=True)
class DraPod:
    """A PodGroup member with DRA claims."""

    pod: Pod
    group: str  # namespace/podgroup name
    bound: bool


Figures = dict[str, tuple[float, float]]  # PodGroup key → (requested GPUs, allocated GPUs)


class ClaimGpus:
    """The DRA objects the PodGroup status reads, kept from their change feeds."""

    def __init__(self, informers: Informers) -> None:
        self._changes = {resource: Changes(informers.informer(resource)) for resource in RESOURCES}
        self._unserved: dict[str, int] = {}
        self._objects: dict[str, dict[str, JSON]] = {resource: {} for resource in RESOURCES}
        self._claims: dict[str, dra.ResourceClaim] = {}
        self._templates: dict[str, dra.ResourceClaimTemplate] = {}
        self._gpus: set[tuple[str, str, str]] = set()  # (driver, pool, device) of the GPUs published
        self._problems = status_write.Problems(log, "DRA object not counted")

    def poll(self) -> bool:
        """Take in what changed; True when something did."""
        changed = False
        for resource, changes in self._changes.items():
            waiting = self._unserved.get(resource, 0)
            if waiting:
                self._unserved[resource] = waiting - 1
                continue
            try:
                polled = changes.poll()
            except NotFound:
                log.info("resource not served by the cluster; taken as empty", extra={"resource": resource})
                self._unserved[resource] = RETRY  # then listed afresh
                continue
            for key, obj in polled:
                changed = True
                if obj is None:
                    self._objects[resource].pop(key, None)
                else:
                    self._objects[resource][key] = obj
        if changed:
            self._parse()
        return changed

    def _parse(self) -> None:
        self._claims = {}
        for key, raw in self._objects["resourceclaims"].items():
            if (parsed := self._read(key, raw, dra.ResourceClaim.from_dict)) is not None:
                self._claims[key] = parsed
        self._templates = {}
        for key, raw in self._objects["resourceclaimtemplates"].items():
            if (template := self._read(key, raw, dra.ResourceClaimTemplate.from_dict)) is not None:
                self._templates[key] = template
        slices = []
        for key, raw in self._objects["resourceslices"].items():
            if (published := self._read(key, raw, dra.ResourceSlice.from_dict)) is not None:
                slices.append(published)
        self._gpus = {
            (s.driver, s.pool, d.name)
            for s in dra_model.current_slices(slices)
            for d in s.devices
            if dra_model.is_gpu_device(s.driver, d)
        }

    def _read(self, key: str, raw: JSON, parse: Callable[[JSON], T]) -> T | None:
        try:
            return parse(raw)
        except ObjectError as err:
            self._problems.report(key, str(err))
            return None

    def figures(self, pods: Mapping[str, DraPod]) -> Figures:
        """Per PodGroup, the GPUs its pods' claims ask and hold."""
        out: Figures = {}

        def add(group: str, requested: float, allocated: float) -> None:
            have = out.get(group, (0.0, 0.0))
            out[group] = (have[0] + requested, have[1] + allocated)

        shared: dict[str, list[tuple[str, DraPod]]] = {}
        for key in sorted(pods):
            member = pods[key]
            pod = member.pod
            if not pod.gpu.is_shared:  # a shared-GPU pod's claims are not counted as whole GPUs (as scheduled)
                whole = dra_model.pod_gpus(pod, self._claims, self._templates)
                add(member.group, whole, whole if member.bound else 0.0)
            for pc in pod.resource_claims:
                claim_key = dra_model.claim_key(pod, pc)
                claim = self._claims.get(claim_key) if claim_key else None
                if claim is None:
                    continue
                if claim.owner_pod_uid:
                    held = self._held(claim)
                    add(member.group, held, held if member.bound else 0.0)
                else:
                    shared.setdefault(claim.key, []).append((key, member))
        for claim_key, users in sorted(shared.items()):
            claim = self._claims[claim_key]
            bound = [member for _, member in users if member.bound]
            charged = bound[0] if bound else users[0][1]
            if claim.allocation is not None:
                held = self._held(claim)
                add(charged.group, held, held if bound else 0.0)
            else:
                asked = sum(
                    r.count
                    for r in claim.requests
                    if r.allocation_mode == "ExactCount" and dra.is_gpu_class(r.device_class)
                )
                add(charged.group, asked, 0.0)
        return out

    def _held(self, claim: dra.ResourceClaim) -> float:
        """The GPU devices of the claim's allocation that the claim charges itself (shared claims, All requests)."""
        if claim.allocation is None:
            return 0.0
        requests = dra_model.claim_charged_requests(claim)
        return float(
            sum(
                1
                for r in claim.allocation.results
                if r.request in requests and (r.driver, r.pool, r.device) in self._gpus
            )
        )


def dra_pod(raw: JSON, group: str, bound: bool) -> DraPod | None:
    """The DRA view of a PodGroup member, or None when it names no claim (or does not parse)."""
    if not (raw.get("spec") or {}).get("resourceClaims"):
        return None
    try:
        return DraPod(Pod.from_dict(raw), group, bound)
    except ObjectError:
        return None  # reported where its requests are read
