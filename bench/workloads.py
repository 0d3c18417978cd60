"""Synthetic clusters for the benchmarks, built directly as Kubernetes JSON (no YAML on the hot path)."""

from __future__ import annotations

import numpy as np

from kai_scheduler.api import constants, priorityclass

JSON = dict[str, object]
EPOCH = 1767225600.0


def node(name: str, gpus: int, cpu: str = "128", memory: str = "1Ti") -> JSON:
    alloc = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {constants.LABEL_HOSTNAME: name, constants.LABEL_GPU_MEMORY: "81920"},
        },
        "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def queue(name: str, gpu_quota: float, parent: str = "") -> JSON:
    spec: dict[str, object] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "overQuotaWeight": 1, "limit": -1},
            "cpu": {"quota": -1, "overQuotaWeight": 1, "limit": -1},
            "memory": {"quota": -1, "overQuotaWeight": 1, "limit": -1},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": constants.QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-q-{name}", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }


def gang(name: str, queue_name: str, size: int, gpus: int, created_s: int) -> list[JSON]:
    ts = f"2025-12-31T{created_s // 3600 % 24:02d}:{created_s // 60 % 60:02d}:{created_s % 60:02d}Z"
    return job(name, queue_name, size, gpus, ts, cpu="4", memory="32Gi")


def job(
    name: str, queue_name: str, size: int, gpus: int, created: str, *, cpu: str, memory: str, node: str = ""
) -> list[JSON]:
    """A PodGroup of `size` pods of `gpus` GPUs each; with a `node`, the pods run there, else they are pending."""
    objs: list[JSON] = [
        {
            "apiVersion": constants.PODGROUP_API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-pg-{name}", "creationTimestamp": created},
            "spec": {"queue": queue_name, "minMember": size, "priorityClassName": "train"},
        }
    ]
    for i in range(size):
        pod_name = f"{name}-{i}"
        pod: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": "bench",
                "uid": f"uid-{pod_name}",
                "creationTimestamp": created,
                "labels": {constants.LABEL_QUEUE: queue_name},
                "annotations": {constants.ANNOTATION_POD_GROUP_NAME: name},
            },
            "spec": {
                "schedulerName": constants.DEFAULT_SCHEDULER_NAME,
                "containers": [
                    {
                        "name": "main",
                        "image": "pause",
                        "resources": {
                            "requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)},
                            "limits": {"nvidia.com/gpu": str(gpus)},
                        },
                    }
                ],
            },
            "status": {"phase": "Running" if node else "Pending"},
        }
        if node:
            pod["spec"]["nodeName"] = node
        objs.append(pod)
    return objs


def priority_classes() -> list[JSON]:
    return [pc.to_dict() for pc in priorityclass.shipped()]


def cluster(n_nodes: int, n_queues: int, gang_sizes: list[int], gpus_per_pod: int = 1) -> list[JSON]:
    """`n_nodes` 8-GPU nodes, `n_queues` equal queues, one pending gang per entry of `gang_sizes`."""
    objs: list[JSON] = priority_classes()
    objs += [node(f"node-{i:05d}", 8) for i in range(n_nodes)]
    quota = n_nodes * 8 / n_queues
    objs += [queue(f"q-{i:03d}", quota) for i in range(n_queues)]
    for j, size in enumerate(gang_sizes):
        objs += gang(f"job-{j:06d}", f"q-{j % n_queues:03d}", size, gpus_per_pod, j)
    return objs


def mixed_gang_sizes(total_pods: int, seed: int = 7) -> list[int]:
    """Gang sizes 1–64 (log-uniform-ish, as real mixes skew small) summing to `total_pods`."""
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    remaining = total_pods
    while remaining > 0:
        size = int(min(remaining, 2 ** rng.integers(0, 7)))
        sizes.append(max(1, min(size, 64)))
        remaining -= sizes[-1]
    return sizes
