"""Builders for the victim-action tests: queues whose CPU and memory never constrain, jobs of whole-GPU pods,
and an embedded cluster (scheduler, binder, kubelet, workload controller) over them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b

JSON = dict[str, Any]
UNLIMITED = {"quota": -1, "overQuotaWeight": 1, "limit": -1}


def queue(name: str, *, gpu_quota: float = 0, gpu_weight: float = 1, parent: str = "", **fields: Any) -> JSON:
    """A queue whose CPU and memory are unlimited, so only GPUs decide; extra spec fields as written."""
    out = b.queue(name, gpu_quota=gpu_quota, gpu_weight=gpu_weight, parent=parent, cpu=UNLIMITED, memory=UNLIMITED)
    out["spec"].update(fields)
    return out


def job(
    name: str,
    *,
    queue: str,
    pods: int = 1,
    gpus: int = 1,
    node: str = "",
    min_member: int | None = None,
    priority_class: str = "train",
    created: float = 0.0,
    annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> list[JSON]:
    """A PodGroup (minMember = pods unless given) with `pods` pods of `gpus` GPUs, Running on `node` if given."""
    group = b.podgroup(
        name,
        queue=queue,
        min_member=pods if min_member is None else min_member,
        priority_class=priority_class,
        created=created,
        annotations=annotations,
        **spec,
    )
    return [
        group,
        *(
            b.pod(f"{name}-{i}", group=name, gpus=gpus, node=node, cpu="0", memory="0", created=created)
            for i in range(pods)
        ),
    ]


def priority_classes() -> list[JSON]:
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("train", 50), ("build-preemptible", 75), ("build", 100), ("inference", 125))
    ]


def cluster(objects: Sequence[JSON], *, config: Mapping[str, Any] | None = None, now: float = b.NOW) -> EmbeddedCluster:
    parsed: SchedulerConfig = load_config(dict(config) if config else None)
    return EmbeddedCluster([*priority_classes(), *objects], parsed, now=now)


def events(cluster: EmbeddedCluster, reason: str) -> list[JSON]:
    items, _ = cluster.store.list("events")
    return [e for e in items if e["reason"] == reason]


def annotations(cluster: EmbeddedCluster, podgroup: str) -> dict[str, str]:
    meta = cluster.store.get("podgroups", podgroup, b.NAMESPACE)["metadata"]
    return dict(meta.get("annotations", {}))


def load_config_for(raw: Mapping[str, Any]) -> SchedulerConfig:
    return load_config(dict(raw))
