"""The components: their command lines, Deployments, Services and the scheduler's ConfigMap.

The one renderer of the components: `kai manifests` and the chart call `build`, the operator calls `shared` (the
components of the Config) and `scheduler_shard` (one scheduler per SchedulingShard, an `Instance`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kai_scheduler.api import flags
from kai_scheduler.api.selectors import check_match_labels, format_match_labels
from kai_scheduler.install import kai_values
from kai_scheduler.install.objects import (
    ADMISSION_SERVICE,
    COMPONENTS,
    CONFIG_DIR,
    CONFIG_FILE,
    CONFIG_MAP,
    LISTEN_PORT,
    OPERATOR,
    OPERATOR_ONLY,
    OPTIONAL,
    PLUGIN_SERVER_PORT,
    STATIC_ONLY,
    WEBHOOK_CONFIGURATION,
    InstallObject,
    labels,
    namespaced,
    resource_name,
    selector,
    values_key,
    when,
)
from kai_scheduler.install.source import Source, lookup
from kai_scheduler.install.values import STRING_MAPS

# Flags of each component: (flag, values path). Booleans are written --flag=true|false.
COMPONENT_FLAGS: dict[str, tuple[tuple[flags.Flag[Any], str], ...]] = {
    "scheduler": (
        (flags.SCHEDULER_NAME, "global.schedulerName"),
        (flags.SCHEDULE_PERIOD, "scheduler.schedulePeriod"),
        (flags.NODEPOOL_LABEL_KEY, "global.nodePoolLabelKey"),
        (flags.PARTITION_LABEL_VALUE, "scheduler.partitionLabelValue"),
        (flags.QUEUE_LABEL_KEY, "global.queueLabelKey"),
        (flags.RESTRICT_NODE_SCHEDULING, "scheduler.restrictNodeScheduling"),
        (flags.MAX_CONSOLIDATION_PREEMPTEES, "scheduler.maxConsolidationPreemptees"),
        (flags.DETAILED_FIT_ERRORS, "scheduler.detailedFitErrors"),
        (flags.UPDATE_POD_EVICTION_CONDITION, "scheduler.updatePodEvictionCondition"),
        (flags.USE_SCHEDULING_SIGNATURES, "scheduler.useSchedulingSignatures"),
        (flags.FULL_HIERARCHY_FAIRNESS, "scheduler.fullHierarchyFairness"),
        (flags.ALLOW_CONSOLIDATING_RECLAIM, "scheduler.allowConsolidatingReclaim"),
        (flags.DEFAULT_STALENESS_GRACE_PERIOD, "scheduler.defaultStalenessGracePeriod"),
        (flags.STUCK_IN_RELEASING_THRESHOLD, "scheduler.stuckInReleasingThreshold"),
        (flags.QUEUE_ACCESS_CONTROL, "global.queueAccessControl"),
        (flags.METRICS_NAMESPACE, "scheduler.metricsNamespace"),
        (flags.DASHBOARD_ADDRESS, "scheduler.dashboardAddress"),
        (flags.PLUGIN_SERVER_PORT, "scheduler.pluginServerPort"),
    ),
    "binder": (
        (flags.RECONCILE_PERIOD, "binder.reconcilePeriod"),
        (flags.MAX_CONCURRENT_RECONCILES, "binder.maxConcurrentReconciles"),
        (flags.RESOURCE_RESERVATION_NAMESPACE, "binder.resourceReservationNamespace"),
        (flags.RESOURCE_RESERVATION_SERVICE_ACCOUNT, "binder.resourceReservationServiceAccount"),
        (flags.RESOURCE_RESERVATION_POD_IMAGE, "binder.resourceReservationPodImage"),
        (flags.RESOURCE_RESERVATION_ALLOCATION_TIMEOUT, "binder.resourceReservationAllocationTimeout"),
        (flags.RUNTIME_CLASS_NAME, "binder.runtimeClassName"),
        (flags.HAMI_CORE_ENABLED, "binder.plugins.hamicore.enabled"),
    ),
    "podgrouper": (
        (flags.RECONCILE_PERIOD, "podgrouper.reconcilePeriod"),
        (flags.SCHEDULER_NAME, "global.schedulerName"),
        (flags.QUEUE_LABEL_KEY, "global.queueLabelKey"),
        (flags.NODEPOOL_LABEL_KEY, "global.nodePoolLabelKey"),
        (flags.KNATIVE_GANG_SCHEDULE, "podgrouper.knativeGangSchedule"),
        (flags.MAX_CONCURRENT_RECONCILES, "podgrouper.maxConcurrentReconciles"),
        (flags.DEFAULT_PRIORITIES_CONFIGMAP_NAME, "podgrouper.defaultPrioritiesConfigMapName"),
        (flags.DEFAULT_PRIORITIES_CONFIGMAP_NAMESPACE, "podgrouper.defaultPrioritiesConfigMapNamespace"),
    ),
    "controllers": (
        (flags.RECONCILE_PERIOD, "controllers.reconcilePeriod"),
        (flags.MAX_CONCURRENT_RECONCILES, "controllers.maxConcurrentReconciles"),
        (flags.SCHEDULER_NAME, "global.schedulerName"),
        (flags.QUEUE_LABEL_KEY, "global.queueLabelKey"),
        (flags.NODEPOOL_LABEL_KEY, "global.nodePoolLabelKey"),
        (flags.CREATE_DEFAULT_QUEUES, "defaultQueues.create"),
    ),
    "operator": (
        (flags.RECONCILE_PERIOD, "operator.reconcilePeriod"),
        (flags.NAMESPACE, "namespace.name"),
        (flags.CREATE_DEFAULTS, "operator.createDefaults"),
    ),
    "node-scale-adjuster": (
        (flags.RECONCILE_PERIOD, "nodeScaleAdjuster.reconcilePeriod"),
        (flags.SCHEDULER_NAME, "global.schedulerName"),
        (flags.SCALE_ADJUST_NAMESPACE, "nodeScaleAdjuster.scalingPodNamespace"),
        (flags.SCALING_POD_IMAGE, "nodeScaleAdjuster.scalingPodImage"),
        (flags.GPU_MEMORY_TO_FRACTION_RATIO, "nodeScaleAdjuster.gpuMemoryToFractionRatio"),
        (flags.COOL_DOWN_SECONDS, "nodeScaleAdjuster.coolDownSeconds"),
    ),
    "admission": (
        (flags.WEBHOOK_ADDR, "admission.webhookPort"),
        (flags.NAMESPACE, "namespace.name"),
        (flags.SECRET_NAME, "admission.secretName"),
        (flags.SCHEDULER_NAME, "global.schedulerName"),
        (flags.GPU_SHARING_ENABLED, "global.gpuSharing"),
        (flags.HAMI_CORE_ENABLED, "binder.plugins.hamicore.enabled"),
        (flags.BLOCK_NVIDIA_VISIBLE_DEVICES, "admission.blockNvidiaVisibleDevices"),
        (flags.GPU_FRACTION_RUNTIME_CLASS_NAME, "admission.runtimeClassName"),
        (flags.QUEUE_LABEL_KEY, "global.queueLabelKey"),
        (flags.QUEUE_ACCESS_CONTROL, "global.queueAccessControl"),
    ),
}


def text(value: Any) -> str:
    """A value as it appears in a flag: booleans lower-case, as Go and the `kai` parsers read them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class Instance:
    """One of several Deployments of the scheduler (a SchedulingShard's): its names, the flags after the
    install's (a later flag wins), and the labels and pod-template annotations it adds."""

    name: str  # of the Deployment and the Service (prefix of)
    config_map: str
    args: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def args(src: Source, component: str) -> list[str]:
    key = values_key(component)
    replicas = f"{key}.replicas"
    out = [
        f"--log-format={text(src.value('global.logFormat'))}",
        component,
        _flag(flags.LISTEN_ADDRESS, f":{LISTEN_PORT}"),
        _flag(flags.QPS, src.value("global.qps")),
        _flag(flags.BURST, src.value("global.burst")),
        _flag(
            flags.LEADER_ELECT,
            src.computed(
                lambda v: v["global"]["leaderElection"] or lookup(v, replicas) > 1,
                f"or .Values.global.leaderElection (gt (int {kai_values.helm_expression(replicas)}) 1)",
            ),
        ),
        _flag(flags.LEADER_ELECT_NAMESPACE, src.value("namespace.name")),
        _flag(flags.LEADER_ELECT_LEASE_DURATION, src.value("leaderElection.leaseDuration")),
        _flag(flags.LEADER_ELECT_RENEW_DEADLINE, src.value("leaderElection.renewDeadline")),
        _flag(flags.LEADER_ELECT_RETRY_PERIOD, src.value("leaderElection.retryPeriod")),
    ]
    out += [_flag(flag, src.value(path)) for flag, path in COMPONENT_FLAGS[component]]
    if component == "podgrouper":
        out += [_selector_flag(src, flag, path) for flag, path in SELECTOR_FLAGS]
    if component == "binder":
        out += [_json_flag(src, flag, path) for flag, path in RESERVATION_POD_FLAGS]
    if component == "scheduler":
        out.append(_flag(flags.SCHEDULER_CONF, f"{CONFIG_DIR}/{CONFIG_FILE}"))
    if component == "admission":
        out += [
            _flag(flags.SERVICE_NAME, ADMISSION_SERVICE),
            _flag(flags.WEBHOOK_CONFIGURATION_NAME, WEBHOOK_CONFIGURATION),
        ]
    if component == OPERATOR:
        out.append(_flag(flags.IMAGE, f"{src.value('image.repository')}:{src.value('image.tag')}"))
    return out


def _flag(flag: flags.Flag[Any], value: Any) -> str:
    return f"{flag.option}={text(value)}"


# The pod grouper's selective monitoring: a label map value as KAI's `key=value,key=value` flag ("" = none).
SELECTOR_FLAGS: Final = (
    (flags.POD_LABEL_SELECTOR, "global.podLabelSelector"),
    (flags.NAMESPACE_LABEL_SELECTOR, "global.namespaceLabelSelector"),
)


def _selector_flag(src: Source, flag: flags.Flag[str], path: str) -> str:
    expr, var = kai_values.helm_expression(path), "$" + flag.dest
    helm = (
        f'{var} := list }}}}{{{{ range $k, $v := {expr} }}}}{{{{ {var} = append {var} (printf "%s=%v" $k $v) }}}}'
        f'{{{{ end }}}}{{{{ join "," {var}'
    )
    joined = src.computed(lambda v: format_match_labels(check_match_labels(lookup(v, path))), helm)
    return _flag(flag, joined)


# The reservation pods' additions: a mapping value as the JSON object the binder's flag takes ("{}": none).
RESERVATION_POD_FLAGS: Final = (
    (flags.RESOURCE_RESERVATION_POD_RESOURCES, "binder.resourceReservationPodResources"),
    (flags.RESOURCE_RESERVATION_POD_SECURITY_CONTEXT, "binder.resourceReservationPodSecurityContext"),
    (flags.RESOURCE_RESERVATION_CONTAINER_SECURITY_CONTEXT, "binder.resourceReservationContainerSecurityContext"),
)


def _json_flag(src: Source, flag: flags.Flag[str], path: str) -> str:
    # Helm's `quote` escapes the JSON's quotes for the double-quoted YAML string the flag stands in; the quotes it
    # adds around it are trimmed (the JSON object itself starts with `{` and ends with `}`).
    helm = f'toJson ({kai_values.helm_expression(path)} | default dict) | quote | trimAll "\\""'
    text = src.computed(lambda v: json.dumps(lookup(v, path) or {}, separators=(",", ":"), sort_keys=True), helm)
    return _flag(flag, text)


def _identity(component: str, instance: Instance | None) -> tuple[str, dict[str, str], dict[str, str]]:
    """Name, labels and selector of a component's objects (of one instance of it when given)."""
    if instance is None:
        return resource_name(component), labels(component), selector(component)
    own = {**labels(component), "app.kubernetes.io/name": instance.name, **instance.labels}
    return instance.name, own, {"app.kubernetes.io/name": instance.name}


def deployment(src: Source, component: str, instance: Instance | None = None) -> InstallObject:
    name, own_labels, own_selector = _identity(component, instance)
    probe = {"httpGet": {"path": "/healthz", "port": LISTEN_PORT}, "periodSeconds": 10, "failureThreshold": 3}
    container: dict[str, Any] = {
        "name": component,
        "image": f"{src.value('image.repository')}:{src.value('image.tag')}",
        "imagePullPolicy": src.value("image.pullPolicy"),
        "args": [*args(src, component), *(instance.args if instance else ())],
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
        volumes.append({"name": "config", "configMap": {"name": instance.config_map if instance else CONFIG_MAP}})
    if component == "scheduler":  # a declaration only: with the port 0 (off) nothing listens on KAI's default
        plugin_port = src.computed(
            lambda v: v["scheduler"]["pluginServerPort"] or PLUGIN_SERVER_PORT,
            f"int .Values.scheduler.pluginServerPort | default {PLUGIN_SERVER_PORT}",
        )
        container["ports"].append({"name": "plugin-server", "containerPort": plugin_port, "protocol": "TCP"})
    if component == "admission":
        container["ports"].append(
            {"name": "webhook", "containerPort": src.value("admission.webhookPort"), "protocol": "TCP"}
        )
    template_meta: dict[str, Any] = {"labels": own_labels}
    if instance is not None and instance.annotations:
        template_meta["annotations"] = dict(instance.annotations)
    return InstallObject(
        "deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**namespaced(src, name, component), "labels": own_labels},
            "spec": {
                "replicas": src.value(f"{values_key(component)}.replicas"),
                "selector": {"matchLabels": own_selector},
                "template": {
                    "metadata": template_meta,
                    "spec": {
                        "serviceAccountName": resource_name(component),
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 10001,
                            "runAsGroup": 10001,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [container],
                        "volumes": volumes,
                        **placement(src),
                    },
                },
            },
        },
        when=when(component),
    )


# KAI's global values of where the components' pods run: pod spec field → value (written only when not empty).
PLACEMENT: Final = (
    ("nodeSelector", "global.nodeSelector"),
    ("tolerations", "global.tolerations"),
    ("affinity", "global.affinity"),
    ("imagePullSecrets", "global.imagePullSecrets"),
)


def placement(src: Source) -> dict[str, Any]:
    """The pod spec fields of KAI's global placement values that are set: every component's, the operator's."""
    out: dict[str, Any] = {}
    for key, path in PLACEMENT:
        out.update(src.optional(path, key, src.mapping(path, strings=path in STRING_MAPS)))
    out.update(src.optional("global.priorityClassName", "priorityClassName", src.value("global.priorityClassName")))
    return out


def metrics_service(src: Source, component: str, instance: Instance | None = None) -> InstallObject:
    name, own_labels, own_selector = _identity(component, instance)
    return InstallObject(
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {**namespaced(src, f"{name}-metrics", component), "labels": own_labels},
            "spec": {
                "selector": own_selector,
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
                        {"key": "app.kubernetes.io/component", "operator": "In", "values": [*COMPONENTS, OPERATOR]}
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


def config_map(src: Source, instance: Instance | None = None) -> InstallObject:
    meta = namespaced(src, instance.config_map if instance else CONFIG_MAP, "scheduler")
    if instance is not None:
        meta["labels"] = {**meta["labels"], **instance.labels}
    return InstallObject(
        "config",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {CONFIG_FILE: src.value("scheduler.config")},
        },
    )


# One Deployment each, rendered by the operator from the Config; the optional components stay static objects.
SHARED = tuple(c for c in COMPONENTS if c != "scheduler" and c not in OPTIONAL)


def shared(src: Source) -> list[InstallObject]:
    """The components besides the scheduler: metrics Services, the webhook Service, Deployments."""
    return [
        *(metrics_service(src, c) for c in SHARED),
        admission_service(src),
        *(deployment(src, c) for c in SHARED),
    ]


def scheduler_shard(src: Source, instance: Instance) -> list[InstallObject]:
    """One scheduler: its ConfigMap (`scheduler.config`), metrics Service and Deployment."""
    return [
        config_map(src, instance),
        metrics_service(src, "scheduler", instance),
        deployment(src, "scheduler", instance),
    ]


def build(src: Source) -> list[InstallObject]:
    """The static install's components (left out with `operator.enabled`, which renders them) and the operator."""
    static = [
        config_map(src),
        *(metrics_service(src, c) for c in COMPONENTS),
        admission_service(src),
        *(deployment(src, c) for c in COMPONENTS),
    ]
    for obj in static:
        if obj.when is None:  # an optional component keeps its own switch, in both install modes
            obj.when = STATIC_ONLY
    operator = [metrics_service(src, OPERATOR), deployment(src, OPERATOR)]
    for obj in operator:
        obj.when = OPERATOR_ONLY
    return [*static, service_monitor(src), *operator]
