"""The GPU-sharing pod mutation (KAI's admission `gpusharing` plugin): the fraction container reads its GPU from
the per-pod shared-GPU ConfigMaps that the binder fills at bind time (names and layout: `api/shared_gpu.py`)."""

from __future__ import annotations

from kai_scheduler.admission.review import JSON
from kai_scheduler.api.shared_gpu import (
    ANNOTATION_SHARED_GPU_CONFIGMAP,
    ENV_NUM_OF_GPUS,
    ENV_VISIBLE_DEVICES,
    RandomSuffix,
    capabilities_configmap_name,
    configmap_prefix,
    env_vars_configmap_name,
    fraction_container,
    random_suffix,
)


def mutate(pod: JSON, suffix: RandomSuffix = random_suffix) -> None:
    """Wire the fraction container of `pod` (a mutable copy) to its shared-GPU ConfigMaps."""
    where = fraction_container(pod)
    if where is None:
        return
    key, index = where
    prefix = configmap_prefix(pod, suffix)
    meta = pod.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_SHARED_GPU_CONFIGMAP: prefix}
    container = pod["spec"][key][index]
    capabilities = capabilities_configmap_name(prefix, key, index)
    for name in (ENV_VISIBLE_DEVICES, ENV_NUM_OF_GPUS):
        set_env(container, {"name": name, "valueFrom": {"configMapKeyRef": {"name": capabilities, "key": name}}})
    env_vars = env_vars_configmap_name(prefix, key, index)
    env_from = [e for e in container.get("envFrom") or [] if isinstance(e, dict)]
    if not any((e.get("configMapRef") or {}).get("name") == env_vars for e in env_from):
        env_from.append({"configMapRef": {"name": env_vars}})
    container["envFrom"] = env_from


def set_env(container: JSON, var: JSON) -> None:
    """Set one env var of a container, replacing an entry of the same name."""
    env = [e for e in container.get("env") or [] if not (isinstance(e, dict) and e.get("name") == var["name"])]
    env.append(var)
    container["env"] = env


__all__ = [
    "ANNOTATION_SHARED_GPU_CONFIGMAP",
    "ENV_VISIBLE_DEVICES",
    "RandomSuffix",
    "fraction_container",
    "mutate",
    "random_suffix",
    "set_env",
]
