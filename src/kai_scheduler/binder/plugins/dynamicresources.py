"""The binder plugin `dynamicresources` (KAI's, §8.1): before the pod binding, write each claim's
`status.allocation` (the devices the scheduler chose, from the BindRequest's `resourceClaimAllocations`) and add
the pod to its `status.reservedFor`; if the binding then fails, take both back.

A claim already allocated keeps its allocation (a shared claim); one allocated to other devices than the
BindRequest says is a failed bind, named by the claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kai_scheduler.api import dra
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.binder.plugins.interface import BindingState
from kai_scheduler.store.interface import JSON, ClusterStore, StoreError


class DynamicResources:
    name: Final = "dynamicresources"

    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def is_relevant(self, request: BindRequest) -> bool:
        return bool(request.resource_claim_allocations)

    def pre_bind(self, state: BindingState) -> None:
        reserved = reserve(self.store, state.request, state.pod)
        state.rollbacks.append(lambda: release(self.store, reserved))


class ClaimError(StoreError):
    reason = "ResourceClaimError"


@dataclass(frozen=True, slots=True)
class Reserved:
    """What one claim was given, to be taken back: the claim and whether its allocation was written here."""

    namespace: str
    name: str
    pod_uid: str
    allocated_here: bool


def reserve(store: ClusterStore, br: BindRequest, pod: JSON) -> list[Reserved]:
    """Allocate and reserve every claim of the BindRequest for the pod; on a failure, undo those done."""
    done: list[Reserved] = []
    ns = br.meta.namespace
    meta = pod.get("metadata", {})
    uid, pod_name = str(meta.get("uid", "")), str(meta.get("name", br.pod_name))
    names = _claim_names(pod)
    try:
        for made in br.resource_claim_allocations:
            claim_name = names.get(made.name)
            if claim_name is None:
                raise ClaimError(f"pod {ns}/{pod_name} has no resource claim {made.name!r} with a ResourceClaim")
            done.append(_reserve_one(store, ns, claim_name, pod_name, uid, made.allocation))
    except StoreError as err:
        release(store, done)
        if isinstance(err, ClaimError):
            raise
        # A claim gone or changed meanwhile is a failed bind to retry, not the pod's own NotFound or Conflict.
        raise ClaimError(f"resource claims of pod {ns}/{pod_name}: {err.reason}: {err}") from err
    return done


def release(store: ClusterStore, reserved: list[Reserved]) -> None:
    """Take the pod out of each claim's reservedFor, and the allocation written here off a claim nobody holds."""
    for r in reversed(reserved):
        try:
            claim = store.get("resourceclaims", r.name, r.namespace)
            status = dict(claim.get("status") or {})
            users = [c for c in status.get("reservedFor") or [] if c.get("uid") != r.pod_uid]
            status["reservedFor"] = users
            if r.allocated_here and not users:
                status.pop("allocation", None)
            if not users:
                status.pop("reservedFor")
            store.update_status({**claim, "status": status})
        except StoreError:
            continue  # the claim is gone or changed: the resourceclaim controller frees what is left


def _reserve_one(
    store: ClusterStore, namespace: str, claim_name: str, pod_name: str, uid: str, allocation: dra.Allocation
) -> Reserved:
    claim = store.get("resourceclaims", claim_name, namespace)
    status = dict(claim.get("status") or {})
    allocated_here = False
    current = status.get("allocation")
    if current is None:
        status["allocation"] = allocation.to_dict()
        allocated_here = True
    elif _devices(current) != _devices(allocation.to_dict()):
        raise ClaimError(f"ResourceClaim {namespace}/{claim_name} is allocated to other devices")
    users = list(status.get("reservedFor") or [])
    if not any(c.get("uid") == uid for c in users):
        if len(users) >= dra.MAX_RESERVED_FOR:
            raise ClaimError(f"ResourceClaim {namespace}/{claim_name} is reserved for {len(users)} pods already")
        users.append({"resource": "pods", "name": pod_name, "uid": uid})
    status["reservedFor"] = users
    store.update_status({**claim, "status": status})
    return Reserved(namespace, claim_name, uid, allocated_here)


def _claim_names(pod: JSON) -> dict[str, str]:
    """Pod claim name → ResourceClaim name (its own, or the one made from its template)."""
    made = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if isinstance(s, dict) and s.get("resourceClaimName")
    }
    out = {}
    for c in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = c.get("name")
        target = c.get("resourceClaimName") or made.get(name)
        if name and target:
            out[str(name)] = str(target)
    return out


def _devices(allocation: JSON) -> list[tuple[str, str, str]]:
    results = (allocation.get("devices") or {}).get("results") or []
    return sorted((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results)
