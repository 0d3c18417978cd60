"""The GPU-sharing pod mutation (KAI's admission `gpusharing` plugin), and the names it shares with the binder.

A fractional pod (`gpu-fraction` or `gpu-memory`) learns which GPU it got and its portion only at bind time:
the binder's `gpusharing` plugin writes them into per-pod "shared-gpu" ConfigMaps (BEHAVIOR.md §6). At admission
the fraction container is made to read them:

- the pod gets the annotation `runai/shared-gpu-configmap: <base>-<7 random chars>` (kept if already set), where
  `<base>` is the pod's name (or generateName) cut to 40 characters;
- per fraction container, the capabilities ConfigMap is `<annotation>-shared-gpu-<index>` (`init-<index>` for an
  init container) and the direct env-vars ConfigMap is that name plus `-evar`;
- the container's env `NVIDIA_VISIBLE_DEVICES` and `RUNAI_NUM_OF_GPUS` come from the capabilities ConfigMap
  (keys of the same names), replacing any value the user set, and the container gets an `envFrom` of the
  env-vars ConfigMap.

The fraction container is the one named by `gpu-fraction-container-name`, else the first container.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

from kai_scheduler.admission.review import JSON
from kai_scheduler.api import constants

ANNOTATION_SHARED_GPU_CONFIGMAP: Final = "runai/shared-gpu-configmap"
ENV_VISIBLE_DEVICES: Final = "NVIDIA_VISIBLE_DEVICES"
ENV_NUM_OF_GPUS: Final = "RUNAI_NUM_OF_GPUS"
CAPABILITIES_SUFFIX: Final = "shared-gpu"
ENV_VARS_SUFFIX: Final = "evar"
MAX_BASE_LENGTH: Final = 40
RANDOM_LENGTH: Final = 7
# Kubernetes' utilrand alphabet: no vowels (no words) and no look-alike characters.
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"

RandomSuffix = Callable[[], str]


def random_suffix() -> str:
    return "".join(random.choice(_ALPHABET) for _ in range(RANDOM_LENGTH))


def fraction_container(pod: JSON) -> tuple[str, int] | None:
    """(`containers` or `initContainers`, index) of the container that receives the fractional GPU."""
    spec: Any = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    wanted = annotations.get(constants.ANNOTATION_GPU_FRACTION_CONTAINER_NAME)
    if wanted is None:
        return ("containers", 0) if spec.get("containers") else None
    for key in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, dict) and c.get("name") == wanted:
                return key, i
    return None


def configmap_prefix(pod: JSON, suffix: RandomSuffix = random_suffix) -> str:
    """The pod's shared-GPU ConfigMap prefix: its annotation, or a new `<base>-<random>`."""
    meta = pod.get("metadata") or {}
    existing = (meta.get("annotations") or {}).get(ANNOTATION_SHARED_GPU_CONFIGMAP)
    if existing:
        return str(existing)
    base = str(meta.get("name") or meta.get("generateName") or "pod")[:MAX_BASE_LENGTH].rstrip("-.") or "pod"
    return f"{base}-{suffix()}"


def capabilities_configmap_name(prefix: str, key: str, index: int) -> str:
    slot = str(index) if key == "containers" else f"init-{index}"
    return f"{prefix}-{CAPABILITIES_SUFFIX}-{slot}"


def env_vars_configmap_name(prefix: str, key: str, index: int) -> str:
    return f"{capabilities_configmap_name(prefix, key, index)}-{ENV_VARS_SUFFIX}"


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
