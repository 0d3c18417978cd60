"""The operator install's Config `kai-config` and SchedulingShard `default`, rendered from the values as KAI's chart
renders them (its templates/_helpers.tpl "kai-scheduler.kai-config" and templates/default-shard.yaml), and the
ConfigMap `kai-config-manifest` that carries both to the operator.

Why a ConfigMap: a custom resource cannot be in the `kubectl apply` pass that creates its CRD, and the webhook that
checks the two refuses them until the admission component serves, which the operator renders. KAI's chart hands its
Config to a post-install Job through a ConfigMap of this name; here the operator is that Job (`operator.install`):
it applies what the ConfigMap holds, so `kai manifests` and the chart carry the values alike.

The Config has a field for every value its table here names, in KAI's spelling where KAI's Config has the field
(`admission.gpuSharing`, `binder.service.resources`); `kaiconfig.FIELDS` reads each back to the same value. The
shard takes KAI's scheduler values: `placementStrategy` for gpu and cpu, `args`, `plugins`, `actions`,
`scenarioSearchBudgets`, and this install's `scheduler.partitionLabelValue`.
"""

from __future__ import annotations

from typing import Any, Final

from kai_scheduler.api import kaiconfig, schedulingshard
from kai_scheduler.install import render
from kai_scheduler.install.objects import OPERATOR_ONLY, InstallObject, namespaced
from kai_scheduler.install.source import Concrete, Source
from kai_scheduler.install.values import FREE_FORM, STRING_MAPS, Values

CONFIG_MAP: Final = "kai-config-manifest"  # KAI's name for the ConfigMap its Config deployer reads
CONFIG_KEY: Final = "kai-config.yaml"
SHARD_KEY: Final = "default-shard.yaml"  # "" when defaultShard.enabled is false
DEFAULT_SHARD: Final = "default"
CONFIG_TEMPLATE: Final = "kai-scheduler.kai-config"  # the chart's named templates (templates/_kai-config.tpl)
SHARD_TEMPLATE: Final = "kai-scheduler.default-shard"

# Config spec path → install value path.
FIELDS: Final = (
    ("namespace", "namespace.name"),
    ("global.schedulerName", "global.schedulerName"),
    ("global.queueLabelKey", "global.queueLabelKey"),
    ("global.nodePoolLabelKey", "global.nodePoolLabelKey"),
    ("global.queueAccessControl", "global.queueAccessControl"),
    ("global.qps", "global.qps"),
    ("global.burst", "global.burst"),
    ("global.logFormat", "global.logFormat"),
    ("global.podLabelSelector", "global.podLabelSelector"),
    ("global.namespaceLabelSelector", "global.namespaceLabelSelector"),
    ("global.nodeSelector", "global.nodeSelector"),
    ("global.tolerations", "global.tolerations"),
    ("global.affinity", "global.affinity"),
    ("global.priorityClassName", "global.priorityClassName"),
    ("global.additionalImagePullSecrets", "global.imagePullSecrets"),
    ("global.image.repository", "image.repository"),
    ("global.image.tag", "image.tag"),
    ("global.image.pullPolicy", "image.pullPolicy"),
    ("scheduler.replicas", "scheduler.replicas"),
    ("scheduler.schedulePeriod", "scheduler.schedulePeriod"),
    ("scheduler.service.resources", "scheduler.resources"),
    ("binder.replicas", "binder.replicas"),
    ("binder.maxConcurrentReconciles", "binder.maxConcurrentReconciles"),
    ("binder.resourceReservation.namespace", "binder.resourceReservationNamespace"),
    ("binder.resourceReservation.runtimeClassName", "binder.runtimeClassName"),
    ("binder.resourceReservation.serviceAccountName", "binder.resourceReservationServiceAccount"),
    ("binder.resourceReservation.podResources", "binder.resourceReservationPodResources"),
    ("binder.resourceReservation.reservationPodSecurityContext", "binder.resourceReservationPodSecurityContext"),
    (
        "binder.resourceReservation.reservationContainerSecurityContext",
        "binder.resourceReservationContainerSecurityContext",
    ),
    ("binder.plugins.hamicore.enabled", "binder.plugins.hamicore.enabled"),
    ("binder.service.resources", "binder.resources"),
    ("podGrouper.replicas", "podgrouper.replicas"),
    ("podGrouper.maxConcurrentReconciles", "podgrouper.maxConcurrentReconciles"),
    ("podGrouper.args.gangScheduleKnative", "podgrouper.knativeGangSchedule"),
    ("podGrouper.args.defaultPrioritiesConfigMapName", "podgrouper.defaultPrioritiesConfigMapName"),
    ("podGrouper.args.defaultPrioritiesConfigMapNamespace", "podgrouper.defaultPrioritiesConfigMapNamespace"),
    ("podGrouper.service.resources", "podgrouper.resources"),
    ("controllers.replicas", "controllers.replicas"),
    ("controllers.maxConcurrentReconciles", "controllers.maxConcurrentReconciles"),
    ("controllers.resources", "controllers.resources"),
    ("admission.replicas", "admission.replicas"),
    ("admission.gpuSharing", "global.gpuSharing"),
    ("admission.blockNvidiaVisibleDevices", "admission.blockNvidiaVisibleDevices"),
    ("admission.gpuFractionRuntimeClassName", "admission.runtimeClassName"),
    ("admission.webhook.targetPort", "admission.webhookPort"),
    ("admission.service.resources", "admission.resources"),
    ("prometheus.enabled", "prometheus.enabled"),
)


def config(src: Source) -> dict[str, Any]:
    """The Config `kai-config` of these values."""
    spec: dict[str, Any] = {}
    for field, path in FIELDS:
        *parents, last = field.split(".")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = _field(src, path)
    url = src.value("prometheus.externalPrometheusUrl")
    spec["prometheus"].update(src.optional("prometheus.externalPrometheusUrl", "externalPrometheusUrl", url))
    return {
        "apiVersion": kaiconfig.API_VERSION,
        "kind": kaiconfig.KIND,
        "metadata": {"name": kaiconfig.NAME},
        "spec": spec,
    }


def _field(src: Source, path: str) -> Any:
    if path.endswith(".resources"):
        return src.tree(path)
    if path in STRING_MAPS:
        return src.mapping(path, strings=True)
    if path == "global.imagePullSecrets":  # KAI's Config names the Secrets
        helm = (
            "$pull_secrets := list }}{{ range .Values.global.imagePullSecrets }}"
            "{{ $pull_secrets = append $pull_secrets .name }}{{ end }}{{ toJson $pull_secrets"
        )
        return src.computed(lambda v: [s["name"] for s in v["global"]["imagePullSecrets"]], helm)
    if path in FREE_FORM or path == "global.tolerations":  # a list: not free-form, written whole
        return src.mapping(path)
    return src.value(path)


def default_shard(src: Source) -> dict[str, Any]:
    """The SchedulingShard `default` of these values (KAI's templates/default-shard.yaml)."""
    strategy = src.value("scheduler.placementStrategy")
    return {
        "apiVersion": schedulingshard.API_VERSION,
        "kind": schedulingshard.KIND,
        "metadata": {"name": DEFAULT_SHARD},
        "spec": {
            "partitionLabelValue": src.value("scheduler.partitionLabelValue"),
            "placementStrategy": {"gpu": strategy, "cpu": strategy},
            "args": src.mapping("scheduler.args", strings=True),
            "plugins": src.mapping("scheduler.plugins"),
            "actions": src.mapping("scheduler.actions"),
            "scenarioSearchBudgets": src.mapping("scheduler.scenarioSearchBudgets"),
        },
    }


def _config_text(values: Values) -> str:
    return render.dump(config(Concrete(values)))


def _shard_text(values: Values) -> str:
    return render.dump(default_shard(Concrete(values))) if values["defaultShard"]["enabled"] else ""


def build(src: Source) -> list[InstallObject]:
    """The ConfigMap `kai-config-manifest` (operator install only): the Config and the default shard as YAML."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": namespaced(src, CONFIG_MAP),
        "data": {
            CONFIG_KEY: src.computed(_config_text, f'include "{CONFIG_TEMPLATE}" . | quote'),
            SHARD_KEY: src.computed(_shard_text, f'include "{SHARD_TEMPLATE}" . | quote'),
        },
    }
    return [InstallObject("config", body, when=OPERATOR_ONLY)]


def objects(values: Values) -> list[dict[str, Any]]:
    """The Config and (when enabled) the default shard of these values."""
    out = [config(Concrete(values))]
    if values["defaultShard"]["enabled"]:
        out.append(default_shard(Concrete(values)))
    return out
