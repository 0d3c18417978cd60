"""The pods the adjuster reads and writes: a demand from a pod's JSON, and a scaling pod's JSON and back.

A scaling pod (in `--scale-adjust-namespace`) carries, besides `app: scaling-pod`:
- `kai.scheduler/scaling-pod-group`: the group id (constraints and devices, `plan.group_id`);
- `scaling-pod.kai.scheduler/<uid>` for each pod it stands for (value: the pod's name where it is a valid
  label value), so `kubectl get pods -n kai-scale-adjust -l scaling-pod.kai.scheduler/<uid>` finds it;
- the annotation `kai.scheduler/scaling-pod-for`: the pods it stands for as `namespace/name` (comma-separated).
The labels are the adjuster's whole state: a restarted adjuster reads them back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from kai_scheduler.api import constants
from kai_scheduler.api.meta import is_label_value
from kai_scheduler.api.pod import Pod
from kai_scheduler.nodescaleadjuster.plan import Constraints, Demand, NewScalingPod, ScalingPod

JSON = dict[str, Any]

APP_LABEL: Final = "app"
APP_LABEL_VALUE: Final = "scaling-pod"
LABEL_GROUP: Final = "kai.scheduler/scaling-pod-group"
MEMBER_LABEL_PREFIX: Final = "scaling-pod.kai.scheduler/"
ANNOTATION_FOR: Final = "kai.scheduler/scaling-pod-for"
DEFAULT_NAMESPACE: Final = "kai-scale-adjust"
DEFAULT_IMAGE: Final = "registry.k8s.io/pause:3.10"
DEFAULT_GPU_MEMORY_RATIO: Final = 0.1
DEFAULT_COOL_DOWN_SECONDS: Final = 60
# The scaling pods are left to the default scheduler: it is the one a cluster autoscaler simulates, and ours
# never places them (docs/node-scale-adjuster.md, "Who schedules the scaling pods").
SCALING_POD_SCHEDULER: Final = "default-scheduler"


@dataclass(frozen=True, slots=True)
class Settings:
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    namespace: str = DEFAULT_NAMESPACE
    image: str = DEFAULT_IMAGE
    gpu_memory_to_fraction_ratio: float = DEFAULT_GPU_MEMORY_RATIO
    cool_down_seconds: float = DEFAULT_COOL_DOWN_SECONDS

    def check(self) -> None:
        if not 0 < self.gpu_memory_to_fraction_ratio <= 1:
            raise ValueError(
                f"--gpu-memory-to-fraction-ratio: want a number in (0, 1], got {self.gpu_memory_to_fraction_ratio:g}"
            )
        if self.cool_down_seconds < 0:
            raise ValueError(f"--cool-down-seconds: must be 0 or more, got {self.cool_down_seconds:g}")
        if not self.namespace:
            raise ValueError("--scale-adjust-namespace: must not be empty")
        if not self.image:
            raise ValueError("--scaling-pod-image: must not be empty")


def is_unschedulable(pod: JSON) -> bool:
    """Pending, unbound, not terminating, and PodScheduled=False with reason Unschedulable."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp") or spec.get("nodeName") or status.get("phase", "Pending") != "Pending":
        return False
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            return condition.get("status") == "False" and condition.get("reason") == "Unschedulable"
    return False


def might_want_scaling(pod: JSON, settings: Settings) -> bool:
    """The cheap checks before a pod is parsed: our scheduler's, not ours, unschedulable, sharing a GPU."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if spec.get("schedulerName") != settings.scheduler_name or meta.get("namespace") == settings.namespace:
        return False
    annotations = meta.get("annotations") or {}
    if constants.ANNOTATION_GPU_FRACTION not in annotations and constants.ANNOTATION_GPU_MEMORY not in annotations:
        return False
    return is_unschedulable(pod)


def demand_of(pod: JSON, settings: Settings) -> Demand | None:
    """The pod's demand, None when it needs no scaling pod; ObjectError naming the field for a bad pod."""
    if not might_want_scaling(pod, settings):
        return None
    parsed = Pod.from_dict(pod)
    gpu = parsed.gpu
    if not gpu.is_shared:
        return None
    portion = gpu.fraction if gpu.fraction > 0 else settings.gpu_memory_to_fraction_ratio
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    tolerations = spec.get("tolerations") or []
    constraints = Constraints(
        node_selector=dict(spec.get("nodeSelector") or {}),
        node_affinity=dict(node_affinity) if isinstance(node_affinity, dict) else {},
        tolerations=tuple(dict(t) for t in tolerations if isinstance(t, dict)),
    )
    return Demand(
        uid=parsed.meta.uid or "key-" + hashlib.sha256(parsed.meta.key.encode()).hexdigest()[:32],
        key=f"{parsed.namespace}/{parsed.name}",
        portion=portion,
        num_devices=gpu.num_devices,
        constraints=constraints,
    )


def is_scaling_pod(pod: JSON, settings: Settings) -> bool:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") == settings.namespace and (meta.get("labels") or {}).get(APP_LABEL) == APP_LABEL_VALUE


def read_scaling_pod(pod: JSON) -> ScalingPod:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    members = frozenset(k[len(MEMBER_LABEL_PREFIX) :] for k in labels if k.startswith(MEMBER_LABEL_PREFIX))
    return ScalingPod(
        name=str(meta.get("name", "")),
        group=str(labels.get(LABEL_GROUP, "")),
        members=members,
        bound=bool((pod.get("spec") or {}).get("nodeName")),
    )


def gpus_of(pod: JSON) -> int:
    """Whole GPUs a scaling pod requests (0 if unreadable: it is ours, written by `scaling_pod`)."""
    try:
        container = (pod.get("spec") or {}).get("containers", [])[0]
        return int(container["resources"]["requests"][constants.RESOURCE_GPU])
    except (IndexError, KeyError, TypeError, ValueError):
        return 0


def member_labels(members: tuple[Demand, ...] | list[Demand]) -> dict[str, str]:
    out = {}
    for d in members:
        name = d.key.partition("/")[2][:63]
        out[MEMBER_LABEL_PREFIX + d.uid] = name if is_label_value(name) else ""
    return out


def for_annotation(keys: list[str]) -> str:
    return ",".join(sorted(set(keys)))


def scaling_pod(new: NewScalingPod, settings: Settings) -> JSON:
    """The scaling pod's JSON: N whole GPUs, the members' constraints, the default scheduler."""
    spec: JSON = {
        "schedulerName": SCALING_POD_SCHEDULER,
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "scaling-pod",
                "image": settings.image,
                "resources": {
                    "requests": {constants.RESOURCE_GPU: str(new.num_devices)},
                    "limits": {constants.RESOURCE_GPU: str(new.num_devices)},
                },
            }
        ],
    }
    c = new.constraints
    if c.node_selector:
        spec["nodeSelector"] = dict(c.node_selector)
    if c.node_affinity:
        spec["affinity"] = {"nodeAffinity": dict(c.node_affinity)}
    if c.tolerations:
        spec["tolerations"] = [dict(t) for t in c.tolerations]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": new.name,
            "namespace": settings.namespace,
            "labels": {APP_LABEL: APP_LABEL_VALUE, LABEL_GROUP: new.group, **member_labels(new.members)},
            "annotations": {ANNOTATION_FOR: for_annotation([m.key for m in new.members])},
        },
        "spec": spec,
    }
