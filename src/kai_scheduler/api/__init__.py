"""Objects layer: typed Kubernetes and KAI objects parsed from and written to Kubernetes JSON.

No I/O here. Every parse error is an `ObjectError` naming the object and the field.
"""

from collections.abc import Callable
from typing import Any

from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.namespace import Namespace
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgang import PodGang
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue
from kai_scheduler.api.topology import Topology

KINDS: dict[str, type[Any]] = {
    "Node": Node,
    "Pod": Pod,
    "PodGroup": PodGroup,
    "Queue": Queue,
    "BindRequest": BindRequest,
    "Topology": Topology,
    "PriorityClass": PriorityClass,
    "DeviceClass": DeviceClass,
    "ResourceSlice": ResourceSlice,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "Namespace": Namespace,
    "PodGang": PodGang,
}

# Parsers by Kind: Kubernetes JSON → typed object (raises ObjectError).
PARSERS: dict[str, Callable[[dict[str, Any]], Any]] = {kind: cls.from_dict for kind, cls in KINDS.items()}

__all__ = [
    "KINDS",
    "PARSERS",
    "BindRequest",
    "DeviceClass",
    "Namespace",
    "Node",
    "ObjectError",
    "Pod",
    "PodGang",
    "PodGroup",
    "PriorityClass",
    "Queue",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "Topology",
]
