"""BindRequest (`scheduling.run.ai/v1alpha2`): the scheduler's intent to bind one pod to one node (§1.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import constants, dra
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta, OwnerReference

RESOURCE_TYPES = ("Regular", "Fraction", "MigInstance")


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """`spec.resourceClaimAllocations[]`: the devices chosen for one of the pod's claims (by its pod claim name)."""

    name: str
    allocation: dra.Allocation

    def to_dict(self) -> JSON:
        return {"name": self.name, "allocation": self.allocation.to_dict()}


PHASES = ("", "Pending", "Succeeded", "Failed")


@dataclass(slots=True, kw_only=True)
class BindRequest:
    meta: ObjectMeta
    pod_name: str
    selected_node: str
    received_resource_type: str = "Regular"
    received_gpu_count: int = 0
    received_gpu_portion: float = 0.0
    selected_gpu_groups: tuple[str, ...] = ()
    backoff_limit: int | None = None
    phase: str = ""
    reason: str = ""
    failed_attempts: int = 0
    resource_claim_allocations: tuple[ClaimAllocation, ...] = ()

    @property
    def is_failed(self) -> bool:
        """Failed past its backoff limit; the scheduler then treats it as absent (§8.1)."""
        return self.phase == "Failed" and (self.backoff_limit is None or self.failed_attempts >= self.backoff_limit)

    @property
    def pod_uid(self) -> str:
        """The uid of the pod it was made for (its Pod owner of its pod's name), "" when it names none."""
        return next(
            (o.uid for o in self.meta.owner_references if o.kind == "Pod" and o.name == self.pod_name and o.uid), ""
        )

    def is_for(self, pod_uid: str) -> bool:
        """Whether it was made for the pod of this uid: a request of an earlier pod of the same name (deleted, its
        request not yet collected) is not the new pod's. One that names no owner is taken as its pod's."""
        own = self.pod_uid
        return not own or not pod_uid or own == pod_uid

    @classmethod
    def from_dict(cls, data: JSON) -> BindRequest:
        r = Reader(data, "BindRequest")
        kind = r.str("spec.receivedResourceType", "Regular")
        if kind not in RESOURCE_TYPES:
            raise r.error("spec.receivedResourceType", f"unknown type {kind!r}")
        phase = r.str("status.phase")
        if phase not in PHASES:
            raise r.error("status.phase", f"unknown phase {phase!r}")
        portion = r.get("spec.receivedGPU.portion")
        try:
            portion_value = float(portion) if portion is not None else 0.0
        except (TypeError, ValueError) as err:
            raise r.error("spec.receivedGPU.portion", f"expected a number, got {portion!r}") from err
        return cls(
            meta=ObjectMeta.read(r),
            pod_name=r.str("spec.podName"),
            selected_node=r.str("spec.selectedNode"),
            received_resource_type=kind,
            received_gpu_count=r.int("spec.receivedGPU.count", 0) or 0,
            received_gpu_portion=portion_value,
            selected_gpu_groups=tuple(str(g) for g in r.list("spec.selectedGPUGroups")),
            backoff_limit=r.int("spec.backoffLimit"),
            phase=phase,
            reason=r.str("status.reason"),
            failed_attempts=r.int("status.failedAttempts", 0) or 0,
            resource_claim_allocations=_claim_allocations(r),
        )

    def to_dict(self) -> JSON:
        spec: dict[str, Any] = {
            "podName": self.pod_name,
            "selectedNode": self.selected_node,
            "receivedResourceType": self.received_resource_type,
            "receivedGPU": {"count": self.received_gpu_count, "portion": f"{self.received_gpu_portion:.2f}"},
        }
        if self.selected_gpu_groups:
            spec["selectedGPUGroups"] = list(self.selected_gpu_groups)
        if self.backoff_limit is not None:
            spec["backoffLimit"] = self.backoff_limit
        if self.resource_claim_allocations:
            spec["resourceClaimAllocations"] = [c.to_dict() for c in self.resource_claim_allocations]
        out: JSON = {
            "apiVersion": constants.BINDREQUEST_API_VERSION,
            "kind": "BindRequest",
            "metadata": self.meta.to_dict(),
            "spec": spec,
        }
        if self.phase:
            out["status"] = {"phase": self.phase, "reason": self.reason, "failedAttempts": self.failed_attempts}
        return out


def _claim_allocations(r: Reader) -> tuple[ClaimAllocation, ...]:
    out = []
    for i, raw in enumerate(r.list("spec.resourceClaimAllocations")):
        path = f"spec.resourceClaimAllocations[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise r.error(path, f"expected {{name, allocation}}, got {raw!r}")
        out.append(ClaimAllocation(raw["name"], dra.Allocation.read(r, f"{path}.allocation", raw.get("allocation"))))
    return tuple(out)


def for_pod(
    pod_meta: ObjectMeta,
    node: str,
    *,
    gpu_count: int,
    portion: float,
    groups: tuple[str, ...],
    resource_type: str,
    claims: tuple[ClaimAllocation, ...] = (),
) -> BindRequest:
    """A BindRequest named as the pod, owned by it, labelled with the selected node (§1.3)."""
    owner = OwnerReference("v1", "Pod", pod_meta.name, pod_meta.uid, controller=False)
    meta = ObjectMeta(
        name=pod_meta.name,
        namespace=pod_meta.namespace,
        labels={constants.LABEL_SELECTED_NODE: node},
        owner_references=(owner,),
    )
    return BindRequest(
        meta=meta,
        pod_name=pod_meta.name,
        selected_node=node,
        received_resource_type=resource_type,
        received_gpu_count=gpu_count,
        received_gpu_portion=portion,
        selected_gpu_groups=groups,
        resource_claim_allocations=claims,
    )
