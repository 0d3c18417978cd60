"""Pieces every built object shares: deterministic uids, metadata, and where in the file it came from.

Uids are uuid5 over kind/namespace/name so that two loads of one file give equal objects (tests, golden
output and the simulator's determinism rely on it), as a real cluster would give each object one uid.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kai_scheduler import api
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import format_time
from kai_scheduler.scenario.model import JSON

_UID_NAMESPACE = uuid.UUID("5f0c2a1e-6b8e-4d0c-9a47-6b2f4b1c7a10")

OWNER_API_VERSIONS = {
    "PyTorchJob": "kubeflow.org/v1",
    "TFJob": "kubeflow.org/v1",
    "XGBoostJob": "kubeflow.org/v1",
    "JAXJob": "kubeflow.org/v1",
    "Notebook": "kubeflow.org/v1",
    "MPIJob": "kubeflow.org/v2beta1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "RayCluster": "ray.io/v1",
    "RayJob": "ray.io/v1",
    "RayService": "ray.io/v1",
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Service": "serving.knative.dev/v1",
}
"""apiVersion of the workload kinds podgrouper knows (BEHAVIOR.md §9.1); any other kind gets "v1"."""


@dataclass(frozen=True, slots=True)
class Built:
    """One produced object and the `file:line` of the entry it came from (to locate validation errors)."""

    obj: JSON
    where: str


def uid(kind: str, namespace: str, name: str) -> str:
    """The object's uid: stable across loads, distinct per kind, namespace and name."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def metadata(
    kind: str,
    name: str,
    *,
    namespace: str = "",
    created: float | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> JSON:
    """ObjectMeta as the API server serves it: name, namespace, uid, then what is set."""
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["uid"] = uid(kind, namespace, name)
    if created is not None:
        out["creationTimestamp"] = format_time(created)
    if labels:
        out["labels"] = labels
    if annotations:
        out["annotations"] = annotations
    return out


def owner_reference(kind: str, api_version: str, namespace: str, name: str) -> JSON:
    """The controller reference a workload's pods carry; its uid is the one the owner would have."""
    return {
        "apiVersion": api_version or OWNER_API_VERSIONS.get(kind, "v1"),
        "kind": kind,
        "name": name,
        "uid": uid(kind, namespace, name),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def parse(built: Built) -> Any:
    """Parse the object with its api type (a cluster reader's checks); errors cite the entry it came from."""
    parser: Any = api.KINDS[built.obj["kind"]]  # the api types share `from_dict`, not a declared base
    try:
        return parser.from_dict(built.obj)
    except ObjectError as err:
        raise err.with_source(built.where) from None
