"""The components: their command lines, Deployments, Services and the scheduler's ConfigMap."""

from __future__ import annotations

from typing import Any

from kai_scheduler.install.objects import (
    ADMISSION_SERVICE,
    COMPONENTS,
    CONFIG_DIR,
    CONFIG_FILE,
    CONFIG_MAP,
    LISTEN_PORT,
    WEBHOOK_CONFIGURATION,
    InstallObject,
    labels,
    namespaced,
    resource_name,
    selector,
    values_key,
    when,
)
from kai_scheduler.install.source import Source

# Flags of each component: (flag, values path). Booleans are written --flag=true|false.
COMPONENT_FLAGS: dict[str, tuple[tuple[str, str], ...]] = {
    "scheduler": (
        ("scheduler-name", "global.schedulerName"),
        ("schedule-period", "scheduler.schedulePeriod"),
        ("nodepool-label-key", "global.nodePoolLabelKey"),
        ("partition-label-value", "scheduler.partitionLabelValue"),
        ("queue-label-key", "global.queueLabelKey"),
        ("restrict-node-scheduling", "scheduler.restrictNodeScheduling"),
        ("max-consolidation-preemptees", "scheduler.maxConsolidationPreemptees"),
        ("detailed-fit-errors", "scheduler.detailedFitErrors"),
        ("update-pod-eviction-condition", "scheduler.updatePodEvictionCondition"),
        ("use-scheduling-signatures", "scheduler.useSchedulingSignatures"),
        ("full-hierarchy-fairness", "scheduler.fullHierarchyFairness"),
        ("allow-consolidating-reclaim", "scheduler.allowConsolidatingReclaim"),
        ("default-staleness-grace-period", "scheduler.defaultStalenessGracePeriod"),
        ("stuck-in-releasing-threshold", "scheduler.stuckInReleasingThreshold"),
        ("queue-access-control", "global.queueAccessControl"),
        ("metrics-namespace", "scheduler.metricsNamespace"),
        ("dashboard-address", "scheduler.dashboardAddress"),
    ),
    "binder": (
        ("reconcile-period", "binder.reconcilePeriod"),
        ("max-concurrent-reconciles", "binder.maxConcurrentReconciles"),
        ("resource-reservation-namespace", "binder.resourceReservationNamespace"),
    ),
    "podgrouper": (
        ("reconcile-period", "podgrouper.reconcilePeriod"),
        ("scheduler-name", "global.schedulerName"),
        ("queue-label-key", "global.queueLabelKey"),
    ),
    "controllers": (
        ("reconcile-period", "controllers.reconcilePeriod"),
        ("scheduler-name", "global.schedulerName"),
        ("queue-label-key", "global.queueLabelKey"),
        ("create-default-queues", "defaultQueues.create"),
    ),
    "node-scale-adjuster": (
        ("reconcile-period", "nodeScaleAdjuster.reconcilePeriod"),
        ("scheduler-name", "global.schedulerName"),
        ("scaling-pod-namespace", "nodeScaleAdjuster.scalingPodNamespace"),
        ("scaling-pod-image", "nodeScaleAdjuster.scalingPodImage"),
        ("gpu-memory-to-fraction-ratio", "nodeScaleAdjuster.gpuMemoryToFractionRatio"),
        ("cool-down-seconds", "nodeScaleAdjuster.coolDownSeconds"),
    ),
    "admission": (
        ("webhook-port", "admission.webhookPort"),
        ("namespace", "namespace.name"),
        ("secret-name", "admission.secretName"),
        ("scheduler-name", "global.schedulerName"),
        ("gpu-sharing-enabled", "admission.gpuSharingEnabled"),
        ("block-nvidia-visible-devices", "admission.blockNvidiaVisibleDevices"),
        ("runtime-class-name", "admission.runtimeClassName"),
        ("queue-label-key", "global.queueLabelKey"),
        ("queue-access-control", "global.queueAccessControl"),
    ),
}


def text(value: Any) -> str:
    """A value as it appears in a flag: booleans lower-case, as Go and the `kai` parsers read them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def args(src: Source, component: str) -> list[str]:
    key = values_key(component)
    replicas = f"{key}.replicas"
    out = [
        f"--log-format={text(src.value('global.logFormat'))}",
        component,
        f"--listen-address=:{LISTEN_PORT}",
        f"--qps={text(src.value('global.qps'))}",
        f"--burst={text(src.value('global.burst'))}",
        "--leader-elect=" + text(src.computed(lambda v: v[key]["replicas"] > 1, f"gt (int .Values.{replicas}) 1")),
        f"--leader-elect-namespace={text(src.value('namespace.name'))}",
        f"--leader-elect-lease-duration={text(src.value('leaderElection.leaseDuration'))}",
        f"--leader-elect-renew-deadline={text(src.value('leaderElection.renewDeadline'))}",
        f"--leader-elect-retry-period={text(src.value('leaderElection.retryPeriod'))}",
    ]
    out += [f"--{flag}={text(src.value(path))}" for flag, path in COMPONENT_FLAGS[component]]
    if component == "scheduler":
        out.append(f"--scheduler-conf={CONFIG_DIR}/{CONFIG_FILE}")
    if component == "admission":
        out += [f"--service-name={ADMISSION_SERVICE}", f"--webhook-configuration-name={WEBHOOK_CONFIGURATION}"]
    return out


def deployment(src: Source, component: str) -> InstallObject:
    name = resource_name(component)
    probe = {"httpGet": {"path": "/healthz", "port": LISTEN_PORT}, "periodSeconds": 10, "failureThreshold": 3}
    container: dict[str, Any] = {
        "name": component,
        "image": f"{src.value('image.repository')}:{src.value('image.tag')}",
        "imagePullPolicy": src.value("image.pullPolicy"),
        "args": args(src, component),
        "ports": [{"name": "metrics", "containerPort": LISTEN_PORT, "protocol": "TCP"}],
        "livenessProbe": {**probe, "initialDelaySeconds": 10},
        "readinessProbe": {**probe, "httpGet": {"path": "/readyz", "port": LISTEN_PORT}},
        "resources": src.tree(f"{values_key(component)}.resources"),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}]
    if component == "scheduler":
        container["volumeMounts"].append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": CONFIG_MAP}})
    if component == "admission":
        container["ports"].append(
            {"name": "webhook", "containerPort": src.value("admission.webhookPort"), "protocol": "TCP"}
        )
    return InstallObject(
        "deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": namespaced(src, name, component),
            "spec": {
                "replicas": src.value(f"{values_key(component)}.replicas"),
                "selector": {"matchLabels": selector(component)},
                "template": {
                    "metadata": {"labels": labels(component)},
                    "spec": {
                        "serviceAccountName": name,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 10001,
                            "runAsGroup": 10001,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [container],
                        "volumes": volumes,
                    },
                },
            },
        },
        when=when(component),
    )


def metrics_service(src: Source, component: str) -> InstallObject:
    return InstallObject(
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": namespaced(src, f"{resource_name(component)}-metrics", component),
            "spec": {
                "selector": selector(component),
                "ports": [{"name": "metrics", "port": LISTEN_PORT, "targetPort": "metrics", "protocol": "TCP"}],
            },
        },
        when=when(component),
    )


def admission_service(src: Source) -> InstallObject:
    return InstallObject(
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": namespaced(src, ADMISSION_SERVICE, "admission"),
            "spec": {
                "selector": selector("admission"),
                "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}],
            },
        },
    )


def service_monitor(src: Source) -> InstallObject:
    return InstallObject(
        "services",
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": namespaced(src, "kai-scheduler"),
            "spec": {
                "selector": {
                    "matchExpressions": [
                        {"key": "app.kubernetes.io/component", "operator": "In", "values": list(COMPONENTS)}
                    ],
                    "matchLabels": {"app.kubernetes.io/part-of": "kai-scheduler"},
                },
                "endpoints": [
                    {"port": "metrics", "path": "/metrics", "interval": src.value("serviceMonitor.interval")}
                ],
            },
        },
        when="serviceMonitor.enabled",
    )


def config_map(src: Source) -> InstallObject:
    return InstallObject(
        "config",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": namespaced(src, CONFIG_MAP, "scheduler"),
            "data": {CONFIG_FILE: src.value("scheduler.config")},
        },
    )


def build(src: Source) -> list[InstallObject]:
    return [
        config_map(src),
        *(metrics_service(src, c) for c in COMPONENTS),
        admission_service(src),
        service_monitor(src),
        *(deployment(src, c) for c in COMPONENTS),
    ]
