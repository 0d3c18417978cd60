"""An in-memory cluster for the podgrouper tests: owners written as users write them (YAML), pods as their
controllers create them (`controller_pod`), the shipped priority classes, and one `PodGrouper`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.podgrouper.context import Config
from kai_scheduler.podgrouper.grouper import GroupOutcome, PodGrouper
from kai_scheduler.store.memory import MemoryStore

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Cluster:
    def __init__(self, *manifests: str, config: Config | None = None) -> None:
        self.store = MemoryStore(ManualClock(NOW))
        self.store.add_many(pc.to_dict() for pc in priorityclass.shipped())
        self.grouper = PodGrouper(self.store, config)
        for text in manifests:
            self.apply(text)

    def apply(self, text: str) -> list[JSON]:
        """Create every document of a YAML text; return them as stored."""
        return [self.store.create(doc) for doc in yaml.safe_load_all(text) if doc]

    def add(self, *objects: JSON) -> None:
        for obj in objects:
            self.store.create(obj)

    def owner(self, plural: str, name: str, namespace: str = "default") -> JSON:
        return self.store.get(plural, name, namespace)

    def group(self) -> GroupOutcome:
        return self.grouper.reconcile()

    def pod(self, name: str, namespace: str = "default") -> JSON:
        return self.store.get("pods", name, namespace)

    def podgroup_of(self, pod_name: str, namespace: str = "default") -> JSON:
        """The PodGroup the pod's `pod-group-name` annotation names."""
        pod = self.pod(pod_name, namespace)
        return self.store.get(
            "podgroups", pod["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME], namespace
        )

    def subgroup_of(self, pod_name: str, namespace: str = "default") -> str | None:
        labels: dict[str, str] = self.pod(pod_name, namespace)["metadata"].get("labels") or {}
        return labels.get(constants.LABEL_SUBGROUP_NAME)

    def podgroups(self, namespace: str | None = None) -> list[JSON]:
        return self.store.list("podgroups", namespace)[0]


def defaults_configmap(namespace: str, name: str, types: list[JSON]) -> JSON:
    """KAI's default priorities ConfigMap: `data.types` a JSON list of {typeName, group, priorityName,
    preemptibility}."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"types": json.dumps(types)},
    }


def controller_pod(
    name: str,
    owner: JSON,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gpus: int = 1,
    node: str = "",
    scheduler: str = constants.DEFAULT_SCHEDULER_NAME,
    priority_class: str = "",
) -> JSON:
    """A pod as `owner`'s controller creates it: a controller owner reference, the template's labels."""
    ref = {**reference(owner), "blockOwnerDeletion": True}
    return bare_pod(
        name,
        owner["metadata"].get("namespace", "default"),
        labels=labels,
        annotations=annotations,
        gpus=gpus,
        node=node,
        scheduler=scheduler,
        priority_class=priority_class,
        owners=[ref],
    )


def reference(owner: JSON) -> JSON:
    """A controller reference to `owner`."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def bare_pod(
    name: str,
    namespace: str = "default",
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gpus: int = 1,
    node: str = "",
    scheduler: str = constants.DEFAULT_SCHEDULER_NAME,
    priority_class: str = "",
    owners: list[JSON] | None = None,
) -> JSON:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owners:
        metadata["ownerReferences"] = owners
    resources = {"limits": {constants.RESOURCE_GPU: str(gpus)}} if gpus else {}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": resources}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def spec(podgroup: JSON) -> JSON:
    out: JSON = podgroup["spec"]
    return out
