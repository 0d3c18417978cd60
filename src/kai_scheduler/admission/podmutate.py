"""Pod mutating webhook (`/mutate--v1-pod`, create): KAI's admission plugins, in their order.

1. `gpusharing`: a fractional pod's fraction container reads its GPU from the shared-GPU ConfigMaps
   (`gpusharing` module). Skipped while GPU sharing is disabled (the validating webhook rejects the pod).
2. `hamicore` (with `--hami-core-enabled`): the fraction container's `CUDA_DEVICE_MEMORY_LIMIT` comes from its
   capabilities ConfigMap, where the binder writes the pod's GPU memory (`hamicore` module).
3. `deviceaccess` (with `--block-nvidia-visible-devices`): every container that asked for no GPU gets
   `NVIDIA_VISIBLE_DEVICES=void`, so the NVIDIA runtime shows it none.
4. `runtimeenforcement`: a fractional pod without `spec.runtimeClassName` gets the configured runtime class
   (`nvidia` by default; an empty setting turns this off).

Only pods with the KAI scheduler name are mutated. A pod the scheduler cannot parse is left alone: the
validating webhook, which runs after, rejects it with the parser's message.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from kai_scheduler.admission import gpusharing, hamicore, pod
from kai_scheduler.admission.review import JSON, Review, Verdict, allow
from kai_scheduler.api import constants
from kai_scheduler.api.errors import ObjectError

VALUE_VOID: Final = "void"
# Fields a mutation may change, as (JSON Pointer, path in the object).
_PATCHED_FIELDS: Final = (
    ("/metadata/annotations", ("metadata", "annotations")),
    ("/spec/runtimeClassName", ("spec", "runtimeClassName")),
    ("/spec/containers", ("spec", "containers")),
    ("/spec/initContainers", ("spec", "initContainers")),
)
_GPU_RESOURCE_PREFIXES: Final = (constants.RESOURCE_GPU, "nvidia.com/mig-")


def mutate(
    review: Review, settings: pod.PodSettings, suffix: gpusharing.RandomSuffix = gpusharing.random_suffix
) -> Verdict:
    if review.operation != "CREATE" or not pod.is_kai_pod(review.object, settings):
        return allow()
    try:
        parsed = pod.parse(review.object, review)
    except ObjectError:
        return allow()
    if not isinstance((review.object.get("spec") or {}).get("containers"), list):
        return allow()
    mutated: JSON = orjson.loads(orjson.dumps(review.object))
    shared = parsed.gpu.is_shared
    if shared and settings.gpu_sharing_enabled:
        gpusharing.mutate(mutated, suffix)
        if settings.hami_core_enabled:
            hamicore.mutate(mutated)
    if settings.block_nvidia_visible_devices:
        _block_device_access(mutated, gpusharing.fraction_container(mutated) if shared else None)
    if shared and settings.runtime_class_name and not mutated["spec"].get("runtimeClassName"):
        mutated["spec"]["runtimeClassName"] = settings.runtime_class_name
    return allow(patch=json_patch(review.object, mutated))


def _block_device_access(obj: JSON, fraction: tuple[str, int] | None) -> None:
    for key in ("containers", "initContainers"):
        for i, container in enumerate(obj["spec"].get(key) or []):
            if isinstance(container, dict) and (key, i) != fraction and not asks_for_gpu(container):
                gpusharing.set_env(container, {"name": gpusharing.ENV_VISIBLE_DEVICES, "value": VALUE_VOID})


def asks_for_gpu(container: JSON) -> bool:
    """Whether a container requests GPUs itself: whole GPUs, MIG instances, or resource claims (DRA)."""
    resources: Any = container.get("resources") or {}
    if resources.get("claims"):
        return True
    for section in ("limits", "requests"):
        for name in resources.get(section) or {}:
            if str(name).startswith(_GPU_RESOURCE_PREFIXES):
                return True
    return False


def json_patch(original: JSON, mutated: JSON) -> list[JSON]:
    """JSONPatch (RFC 6902) turning `original` into `mutated`, one whole-field operation per changed field."""
    ops: list[JSON] = []
    for top in ("metadata", "spec"):
        if not isinstance(original.get(top), dict) and mutated.get(top):
            ops.append({"op": "add", "path": f"/{top}", "value": {}})
    for pointer, (top, name) in _PATCHED_FIELDS:
        before = (original.get(top) or {}).get(name)
        after = (mutated.get(top) or {}).get(name)
        if after == before:
            continue
        if after is None:
            ops.append({"op": "remove", "path": pointer})
        else:
            ops.append({"op": "add" if before is None else "replace", "path": pointer, "value": after})
    return ops
