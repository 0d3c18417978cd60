"""HAMi-core GPU memory isolation at admission (KAI's admission `hamicore` plugin, on with `--hami-core-enabled`).

The fraction container of a fractional pod gets `CUDA_DEVICE_MEMORY_LIMIT` from its capabilities ConfigMap, the
key optional so that the container still starts when the binder wrote none (the node has no
`nvidia.com/gpu.memory` label). HAMi-core's `libvgpu`, preloaded into the container by a separate webhook
(kai-resource-isolator), enforces it. Runs after the `gpusharing` mutation, which names the ConfigMap on the pod.
"""

from __future__ import annotations

from kai_scheduler.admission.gpusharing import set_env
from kai_scheduler.admission.review import JSON
from kai_scheduler.api.shared_gpu import (
    ANNOTATION_SHARED_GPU_CONFIGMAP,
    ENV_CUDA_DEVICE_MEMORY_LIMIT,
    capabilities_configmap_name,
    fraction_container,
)


def mutate(pod: JSON) -> None:
    """Point the fraction container of `pod` (a mutable copy, already wired by `gpusharing.mutate`) at the memory
    limit the binder writes. A pod without the ConfigMap annotation is left as it is."""
    where = fraction_container(pod)
    prefix = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SHARED_GPU_CONFIGMAP)
    if where is None or not prefix:
        return
    key, index = where
    ref = {"name": capabilities_configmap_name(str(prefix), key, index), "key": ENV_CUDA_DEVICE_MEMORY_LIMIT}
    set_env(
        pod["spec"][key][index],
        {"name": ENV_CUDA_DEVICE_MEMORY_LIMIT, "valueFrom": {"configMapKeyRef": {**ref, "optional": True}}},
    )
