"""The shared-GPU ConfigMaps of a fractional pod, filled by the binder plugin `gpusharing` before it is bound.

The admission webhook named them on the pod (annotation `runai/shared-gpu-configmap`) and pointed the fraction
container's env at them; here they get what is known only now (KAI's `common/gpusharingconfigmap`, §6):

- `<prefix>-shared-gpu-<i>`: `NVIDIA_VISIBLE_DEVICES` = the GPU indices the pod's reservation pods hold, in
  the order of the BindRequest's `selectedGPUGroups`, and `RUNAI_NUM_OF_GPUS` = the portion of each;
- `<prefix>-shared-gpu-<i>-evar`: `RUNAI_GPU_MEMORY_MIB` when the pod asked for GPU memory;
- with HAMi-core isolation on (the `hamicore` plugin), the capabilities ConfigMap also gets `CUDA_DEVICE_MEMORY_LIMIT`.

Both are owned by the pod, so the garbage collector removes them with it. A pod the webhook did not mutate
(no annotation: the webhook is not installed) has no ConfigMaps to fill and is bound as it is.
"""

from __future__ import annotations

from kai_scheduler.api import constants, shared_gpu
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore


def write(
    store: ClusterStore, pod: JSON, br: BindRequest, indices: dict[str, str], memory_limit: str | None = None
) -> list[str]:
    """Create or update the pod's two ConfigMaps; return their names (none when the pod names none).
    `memory_limit`: the `CUDA_DEVICE_MEMORY_LIMIT` to write (`hamicore.HamiCore.limit`), None for none."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    prefix = annotations.get(shared_gpu.ANNOTATION_SHARED_GPU_CONFIGMAP)
    where = shared_gpu.fraction_container(pod)
    if not prefix or where is None:
        return []
    key, index = where
    devices = ",".join(indices[group] for group in br.selected_gpu_groups if group in indices)
    capabilities = {shared_gpu.ENV_VISIBLE_DEVICES: devices, shared_gpu.ENV_NUM_OF_GPUS: f"{br.received_gpu_portion:g}"}
    if memory_limit is not None:
        capabilities[shared_gpu.ENV_CUDA_DEVICE_MEMORY_LIMIT] = memory_limit
    env_vars = {}
    if constants.ANNOTATION_GPU_MEMORY in annotations:
        env_vars[shared_gpu.ENV_GPU_MEMORY] = str(annotations[constants.ANNOTATION_GPU_MEMORY])
    owner = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name", ""), "uid": meta.get("uid", "")}
    names = [
        shared_gpu.capabilities_configmap_name(prefix, key, index),
        shared_gpu.env_vars_configmap_name(prefix, key, index),
    ]
    for name, data in zip(names, (capabilities, env_vars), strict=True):
        _upsert(
            store,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": meta.get("namespace", ""), "ownerReferences": [owner]},
                "data": data,
            },
        )
    return names


def _upsert(store: ClusterStore, configmap: JSON) -> None:
    try:
        store.create(configmap)
    except AlreadyExists:  # a retried bind: the pod may have moved to other GPUs meanwhile
        meta = configmap["metadata"]
        store.patch("configmaps", meta["name"], meta["namespace"], {"data": configmap["data"]})
