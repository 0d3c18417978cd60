"""The per-pod shared-GPU ConfigMaps: the names the admission webhook wires into a fractional pod and the
binder fills at bind time (KAI's `gpusharing` admission and binder plugins; BEHAVIOR.md §6).

A fractional pod (`gpu-fraction` or `gpu-memory`) learns which GPU it got and its portion only at bind time:

- the webhook gives the pod the annotation `runai/shared-gpu-configmap: <base>-<7 random chars>` (kept if already
  set), where `<base>` is the pod's name (or generateName) cut to 40 characters;
- per fraction container, the capabilities ConfigMap is `<annotation>-shared-gpu-<index>` (`init-<index>` for an
  init container) and the direct env-vars ConfigMap is that name plus `-evar`;
- the container's env `NVIDIA_VISIBLE_DEVICES` and `RUNAI_NUM_OF_GPUS` come from the capabilities ConfigMap
  (keys of the same names), and the container gets an `envFrom` of the env-vars ConfigMap;
- the binder writes both ConfigMaps before the binding: the GPU indices of the pod's reservation pods and the
  portion, owned by the pod so they go with it;
- with HAMi-core isolation on (KAI's `hamicore` plugins), the container's env also has `CUDA_DEVICE_MEMORY_LIMIT`
  from the capabilities ConfigMap (an optional key), which the binder fills with the pod's GPU memory in MiB.

The fraction container is the one named by `gpu-fraction-container-name`, else the first container.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

from kai_scheduler.api import constants

JSON = dict[str, Any]

ANNOTATION_SHARED_GPU_CONFIGMAP: Final = "runai/shared-gpu-configmap"
ENV_VISIBLE_DEVICES: Final = "NVIDIA_VISIBLE_DEVICES"
ENV_NUM_OF_GPUS: Final = "RUNAI_NUM_OF_GPUS"
ENV_GPU_MEMORY: Final = "RUNAI_GPU_MEMORY_MIB"
# HAMi-core's per-container GPU memory limit (its libvgpu reads it): with KAI's `hamicore` plugins on, the fraction
# container's env names this key of its capabilities ConfigMap (optional) and the binder writes it at bind time.
ENV_CUDA_DEVICE_MEMORY_LIMIT: Final = "CUDA_DEVICE_MEMORY_LIMIT"
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
