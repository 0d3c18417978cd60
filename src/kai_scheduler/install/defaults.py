"""What the install creates besides the components: namespaces and priority classes (§1.1, §2).

The default queues are not here: a Queue cannot be applied in the same pass as its CRD, so the controllers
component creates them (`controllers/default_queues.py`, switched by `defaultQueues.create`). Priority classes are
a built-in kind and go in the same stream."""

from __future__ import annotations

from kai_scheduler.api import priorityclass
from kai_scheduler.install.objects import InstallObject, cluster_scoped
from kai_scheduler.install.source import Source


def namespaces(src: Source) -> list[InstallObject]:
    return [
        InstallObject(
            "namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": src.value("namespace.name")}},
            when="namespace.create",
        ),
        InstallObject(
            "namespaces",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": src.value("binder.resourceReservationNamespace")},
            },
        ),
        InstallObject(
            "namespaces",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": src.value("nodeScaleAdjuster.scalingPodNamespace")},
            },
            when="nodeScaleAdjuster.enabled",
        ),
    ]


def priority_classes() -> list[InstallObject]:
    return [
        InstallObject(
            "priorityclasses",
            priorityclass.shipped_object(pc, cluster_scoped(pc.name)),
            when="priorityClasses.create",
        )
        for pc in priorityclass.SHIPPED
    ]
