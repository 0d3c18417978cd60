"""What the install creates besides the components: namespaces, default queues, priority classes (§1.1, §2)."""

from __future__ import annotations

from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.install.objects import InstallObject, cluster_scoped
from kai_scheduler.install.source import Source

_DESCRIPTIONS = {
    "train": "Preemptible training workloads.",
    "build-preemptible": "Preemptible interactive workloads.",
    "build": "Non-preemptible interactive workloads.",
    "inference": "Non-preemptible inference workloads.",
}

# Created by Helm on first install only: an upgrade leaves the queues as their users changed them.
FIRST_INSTALL = {"helm.sh/hook": "post-install", "helm.sh/hook-weight": "0"}


def namespaces(src: Source) -> list[InstallObject]:
    return [
        InstallObject("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": src.value("namespace.name")}}, when="namespace.create"),
        InstallObject("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": src.value("binder.resourceReservationNamespace")}}),
    ]


def _queue_resources() -> dict[str, Any]:
    unlimited = {"quota": 0, "overQuotaWeight": 1, "limit": -1}
    return {"gpu": dict(unlimited), "cpu": dict(unlimited), "memory": dict(unlimited)}


def queues() -> list[InstallObject]:
    parent = {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue",
              "metadata": cluster_scoped(constants.DEFAULT_PARENT_QUEUE_NAME),
              "spec": {"resources": _queue_resources()}}
    child = {"apiVersion": constants.QUEUE_API_VERSION, "kind": "Queue",
             "metadata": cluster_scoped(constants.DEFAULT_QUEUE_NAME),
             "spec": {"parentQueue": constants.DEFAULT_PARENT_QUEUE_NAME, "resources": _queue_resources()}}
    return [InstallObject("queues", parent, when="defaultQueues.create", helm_annotations=dict(FIRST_INSTALL)),
            InstallObject("queues", child, when="defaultQueues.create",
                          helm_annotations={**FIRST_INSTALL, "helm.sh/hook-weight": "1"})]


def priority_classes() -> list[InstallObject]:
    return [
        InstallObject("priorityclasses", {
            "apiVersion": constants.PRIORITYCLASS_API_VERSION, "kind": "PriorityClass",
            "metadata": cluster_scoped(name), "value": value, "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority", "description": _DESCRIPTIONS.get(name, ""),
        }, when="priorityClasses.create")
        for name, value in constants.SHIPPED_PRIORITY_CLASSES
    ]
