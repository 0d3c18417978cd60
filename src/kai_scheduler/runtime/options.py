"""Settings of the long-running components, as typed values (the CLI turns flags into these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.binder import reservation
from kai_scheduler.nodescaleadjuster import pods as scaling
from kai_scheduler.runtime.leader import LeaderConfig

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
FALLBACK_NAMESPACE = "kai-scheduler"


def in_cluster_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The pod's namespace from its service account, else `kai-scheduler`."""
    try:
        return path.read_text(encoding="utf-8").strip() or FALLBACK_NAMESPACE
    except OSError:
        return FALLBACK_NAMESPACE


@dataclass(frozen=True, slots=True)
class ProcessOptions:
    """What every component process shares: the cluster connection, the endpoints and leader election."""

    kubeconfig: str | None = None
    context: str | None = None
    qps: float = 50.0
    burst: int = 300
    listen_address: str = ":8080"
    leader_elect: bool = False
    leader_elect_namespace: str = FALLBACK_NAMESPACE
    leader: LeaderConfig = field(default_factory=LeaderConfig)


PLUGIN_SERVER_PORT = 8081


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    scheduler_conf: str | None = None
    # `Flags` fields given on the command line (underscore names, typed values); they override the file's.
    flags: Mapping[str, Any] = field(default_factory=dict)
    metrics_namespace: str = "kai"
    # KAI's plugin server (/get-snapshot); 0 = off. The command line's default is KAI's 8081 (PLUGIN_SERVER_PORT).
    plugin_server_port: int = 0


@dataclass(frozen=True, slots=True)
class BinderOptions:
    reconcile_period: float = 0.2
    max_concurrent_reconciles: int = 10
    resource_reservation_namespace: str = constants.RESERVATION_NAMESPACE
    resource_reservation_service_account: str = constants.RESERVATION_SERVICE_ACCOUNT
    resource_reservation_pod_image: str = reservation.DEFAULT_IMAGE
    # Added to the reservation pods (api/reservation_pod): CPU and memory, the pod's and container's security context.
    resource_reservation_pod_resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    resource_reservation_pod_security_context: Mapping[str, Any] = field(default_factory=dict)
    resource_reservation_container_security_context: Mapping[str, Any] = field(default_factory=dict)
    resource_reservation_allocation_timeout: float = reservation.DEFAULT_ALLOCATION_TIMEOUT
    runtime_class_name: str = constants.DEFAULT_RESERVATION_RUNTIME_CLASS_NAME  # of the reservation pods; "" = none
    hami_core_enabled: bool = False  # KAI's binder.plugins.hamicore.enabled: write CUDA_DEVICE_MEMORY_LIMIT


@dataclass(frozen=True, slots=True)
class GrouperOptions:
    """The podgrouper's and the controllers' settings."""

    reconcile_period: float = 0.5
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    queue_label_key: str = constants.DEFAULT_QUEUE_LABEL_KEY
    node_pool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    migrate_from: frozenset[str] = frozenset()  # "volcano", "yunikorn": group their pods (podgrouper/foreign)
    queue_map: Mapping[str, str] = field(default_factory=dict)  # their queue names → ours
    create_default_queues: bool = True  # the controllers': create default-parent-queue/default-queue if missing
    max_concurrent_reconciles: int = 10  # the controllers': PodGroup and Queue status writes sent at once
    # The grouper's PodGroup and pod writes sent at once (`kai podgrouper --max-concurrent-reconciles`). Each pod
    # costs two round trips one after the other (the PodGroup, then the pod), and the grouper is the first stage:
    # with 10 writers it was the stage where pods queued at 50 pods/s offered on a loaded server (bench/README.md).
    grouper_writers: int = 20
    knative_gang_schedule: bool = True  # the grouper's: a Knative Revision's pods one gang of min-scale pods
    # The grouper's default priorities ConfigMap (podgrouper/type_defaults; "" = none).
    defaults_configmap_namespace: str = ""
    defaults_configmap_name: str = ""
    # The grouper's selective monitoring (--pod-label-selector, --namespace-label-selector): label → value.
    pod_label_selector: Mapping[str, str] = field(default_factory=dict)
    namespace_label_selector: Mapping[str, str] = field(default_factory=dict)
    # The queue controller's metrics (KAI's queue controller flags): the namespace prefixing their names, queue label
    # key → metric label, and queue label key → the value when a queue lacks the label.
    metrics_namespace: str = "kai"
    queue_label_to_metric_label: Mapping[str, str] = field(default_factory=dict)
    queue_label_to_default_metric_value: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScaleAdjusterOptions:
    """The node-scale-adjuster's settings (docs/node-scale-adjuster.md)."""

    reconcile_period: float = 1.0
    settings: scaling.Settings = field(default_factory=scaling.Settings)


@dataclass(frozen=True, slots=True)
class OperatorOptions:
    namespace: str = FALLBACK_NAMESPACE  # where the components are rendered
    image: str | None = None  # REPOSITORY:TAG of the components (None: the chart's default)
    reconcile_period: float = 1.0
    create_defaults: bool = True
