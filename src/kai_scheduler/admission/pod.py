"""Pod validating webhook (`/validate--v1-pod`, create and update): the GPU request rules of BEHAVIOR.md §2, §6.

KAI's `pkg/admission/webhook/v1alpha2/gpusharing` validator and the pod parts of `resources`. Only pods whose
`spec.schedulerName` is the KAI scheduler's are checked. The pod is first parsed with the scheduler's own parser
(`api.Pod`), so the webhook rejects exactly what the scheduler would not accept, with the same message; then the
rules only admission applies:

- `gpu-fraction` must be strictly below 1 (the scheduler accepts 1, admission asks for `nvidia.com/gpu: 1`);
- `mps: "true"` needs a fractional request (`gpu-fraction` or `gpu-memory`);
- `gpu-fraction-container-name` must name one of the pod's containers;
- fractional requests are rejected while GPU sharing is disabled;
- with `--queue-access-control`, the queue named by the pod's queue label must admit its namespace
  (`admission.access`; a pod without the label is left to the podgrouper and the scheduler).

On UPDATE a pod that the rules already rejected before the update (e.g. GPU sharing was disabled after it was
created) is let through with a warning, so that label and annotation updates of running pods keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kai_scheduler.admission import access
from kai_scheduler.admission.defaults import DEFAULT_RUNTIME_CLASS_NAME as DEFAULT_RUNTIME_CLASS_NAME
from kai_scheduler.admission.review import JSON, Review, Verdict, allow, deny
from kai_scheduler.api import Pod, constants
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.store.interface import ClusterStore


@dataclass(frozen=True, slots=True)
class PodSettings:
    """The pod webhooks' flags (`kai admission`)."""

    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    gpu_sharing_enabled: bool = False  # KAI's default (its chart's global.gpuSharing)
    block_nvidia_visible_devices: bool = False
    runtime_class_name: str = DEFAULT_RUNTIME_CLASS_NAME  # "" = do not set a runtime class
    queue_access_control: bool = False  # not KAI's: refuse pods whose queue does not admit their namespace
    queue_label_key: str = constants.DEFAULT_QUEUE_LABEL_KEY
    hami_core_enabled: bool = False  # KAI's binder.plugins.hamicore.enabled: CUDA_DEVICE_MEMORY_LIMIT injected


def is_kai_pod(obj: JSON, settings: PodSettings) -> bool:
    spec = obj.get("spec")
    return isinstance(spec, dict) and spec.get("schedulerName") == settings.scheduler_name


def parse(obj: JSON, review: Review) -> Pod:
    """The pod as the scheduler reads it. A pod being created may have only a generateName (or no namespace
    yet): the review's name and namespace stand in, so messages name the pod as the user wrote it."""
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if not meta.get("name"):
        meta["name"] = review.name or meta.get("generateName") or "?"
    if not meta.get("namespace") and review.namespace:
        meta["namespace"] = review.namespace
    return Pod.from_dict({**obj, "metadata": meta})


def validate(review: Review, settings: PodSettings, store: ClusterStore | None = None) -> Verdict:
    if not is_kai_pod(review.object, settings):
        return allow()
    problem = _problem(review.object, review, settings, store)
    if problem is None:
        return allow()
    old = review.old_object
    if (
        review.operation == "UPDATE"
        and old is not None
        and is_kai_pod(old, settings)
        and _problem(old, review, settings, store) == problem
    ):
        return allow(warnings=[f"{problem} (the pod already had this problem before the update)"])
    return deny(problem)


def _problem(obj: JSON, review: Review, settings: PodSettings, store: ClusterStore | None) -> str | None:
    """The first rule the pod breaks, as one line naming the pod and the field; None if it breaks none."""
    try:
        pod = parse(obj, review)
    except ObjectError as err:
        return str(err)
    annotations = pod.meta.annotations
    where = f"Pod {pod.meta.key} metadata.annotations"
    gpu = pod.gpu
    if gpu.fraction >= 1:
        raw = annotations.get(constants.ANNOTATION_GPU_FRACTION)
        return (
            f"{where}.{constants.ANNOTATION_GPU_FRACTION}: want a number in (0, 1), got {raw!r}; "
            f"ask for whole GPUs with {constants.RESOURCE_GPU} instead"
        )
    if annotations.get(constants.ANNOTATION_MPS) == "true" and not gpu.is_shared:
        return (
            f"{where}.{constants.ANNOTATION_MPS}: MPS needs a fractional GPU request "
            f"({constants.ANNOTATION_GPU_FRACTION} or {constants.ANNOTATION_GPU_MEMORY})"
        )
    container_name = annotations.get(constants.ANNOTATION_GPU_FRACTION_CONTAINER_NAME)
    if container_name is not None and container_name not in container_names(obj):
        names = ", ".join(container_names(obj)) or "none"
        return (
            f"{where}.{constants.ANNOTATION_GPU_FRACTION_CONTAINER_NAME}: no container named "
            f"{container_name!r}; the pod has {names}"
        )
    if gpu.is_shared and not settings.gpu_sharing_enabled:
        form = constants.ANNOTATION_GPU_FRACTION if gpu.fraction else constants.ANNOTATION_GPU_MEMORY
        return (
            f"{where}.{form}: GPU sharing is disabled in this cluster; ask for whole GPUs with {constants.RESOURCE_GPU}"
        )
    queue = pod.meta.labels.get(settings.queue_label_key)
    if settings.queue_access_control and store is not None and queue:
        refused = access.refusal(queue, pod.namespace, store)
        if refused is not None:
            return f"Pod {pod.meta.key} metadata.labels.{settings.queue_label_key}: {refused}"
    return None


def container_names(obj: JSON) -> list[str]:
    """Names of the pod's containers, then of its init containers."""
    spec: Any = obj.get("spec") or {}
    out: list[str] = []
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                out.append(c["name"])
    return out
