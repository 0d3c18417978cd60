"""KAI's Helm values (its chart's `values.yaml` and the keys its templates and docs read), as this install takes them.

A KAI user's `-f values.yaml` or `--set global.gpuSharing=true` works here unchanged. Each KAI key is one rule:

- the same key here (`global.gpuSharing`, `binder.runtimeClassName`): nothing to do, `values.py` has it;
- `Alias`: another name for one of this install's values (`operator.replicaCount` is `operator.replicas`); the
  chart reads the KAI key first (`dig`), `kai manifests` writes it into the value it names;
- `Ignored`: accepted, with one warning naming the key and why it changes nothing here.

A path ending in `.*` covers every key under it (free-form maps such as `global.nodeSelector`); `[n]` list indices
(`--set scheduler.additionalArgs[0]=…`) are matched without them. A key that is neither this install's nor KAI's
stays an error naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class Alias:
    """The KAI key sets this install's value `target` (a mapping target takes the KAI mapping leaf by leaf)."""

    target: str
    convert: Callable[[Any], Any] | None = None  # KAI's value → this install's; None: the same value
    helm: str | None = None  # with `convert`: the chart's expression, `{key}` the KAI value, `{inner}` this one's


@dataclass(frozen=True, slots=True)
class Ignored:
    """Accepted and changes nothing; `reason` completes "has no effect here: …"."""

    reason: str


Rule = Alias | Ignored

_IMAGE: Final = "one image runs every component here (image.repository, image.tag, image.pullPolicy)"
_POD: Final = "the components run with a restricted securityContext of their own here (not rendered)"
_HOOKS: Final = (
    "this chart has no install hooks: Helm applies crds/, and the operator applies the Config and the default "
    "shard rendered into the ConfigMap kai-config-manifest"
)
_PDB: Final = "no PodDisruptionBudgets are rendered here"
_PORTS: Final = "every component serves metrics and probes on :8080 here"
_ENABLED: Final = "every component is installed here; set its replicas to 0 to stop it"


def _json_log(value: Any) -> Any:
    return "json" if value is True else "text" if value is False else value


RULES: Final[Mapping[str, Rule]] = {
    "openshift": Ignored("no SecurityContextConstraints are rendered here"),
    # global
    "global.registry": Ignored(_IMAGE),
    "global.tag": Ignored(_IMAGE),
    "global.fipsMode": Ignored(_IMAGE),
    "global.imagePullPolicy": Alias("image.pullPolicy"),
    "global.securityContext.*": Ignored(_POD),
    "global.podSecurityContext.*": Ignored(_POD),
    "global.requireDefaultPodAntiAffinityTerm": Ignored(_POD),
    "global.clusterAutoscaling": Alias("nodeScaleAdjuster.enabled"),
    "global.blockNvidiaVisibleDevices": Alias("admission.blockNvidiaVisibleDevices"),
    "global.jsonLog": Alias(
        "global.logFormat",
        _json_log,
        '(ternary "json" (ternary "text" {inner} (eq {key} "false")) (eq {key} "true"))',
    ),
    "global.vpa.*": Ignored("no VerticalPodAutoscalers are rendered here"),
    "global.resourceReservation.namespace": Alias("binder.resourceReservationNamespace"),
    "global.resourceReservation.serviceAccount": Alias("binder.resourceReservationServiceAccount"),
    "global.resourceReservation.appLabel": Ignored("the reservation pods' labels are fixed here"),
    "global.resourceReservation.namespaceLabels.*": Ignored("the reservation namespace's labels are fixed here"),
    "global.resourceReservation.createNamespace": Ignored("the install always creates the reservation namespace"),
    "global.resourceReservation.createServiceAccount": Ignored("the install always creates it"),
    # operator
    "operator.image.*": Ignored(_IMAGE),
    "operator.replicaCount": Alias("operator.replicas"),
    "operator.metricsBindAddress": Ignored(_PORTS),
    "operator.probeBindAddress": Ignored(_PORTS),
    "operator.qps": Ignored("global.qps applies to every component here, the operator included"),
    "operator.burst": Ignored("global.burst applies to every component here, the operator included"),
    "operator.logLevel": Ignored("log levels are not set per component here (global.logFormat sets the format)"),
    # podgrouper
    "podgrouper.enabled": Ignored(_ENABLED),
    "podgrouper.image.*": Ignored(_IMAGE),
    "podgrouper.queueLabelKey": Alias("global.queueLabelKey"),
    "podgrouper.genericKartaFallback": Ignored("the pod grouper's fallback for unknown owners is always on here"),
    "podgrouper.affinity.*": Ignored(_POD),
    "podgrouper.podDisruptionBudget.*": Ignored(_PDB),
    # KAI's two controllers are one component here
    "podgroupcontroller.enabled": Ignored(_ENABLED),
    "podgroupcontroller.image.*": Ignored(_IMAGE),
    "podgroupcontroller.affinity.*": Ignored(_POD),
    "podgroupcontroller.resources": Alias("controllers.resources"),
    "queuecontroller.enabled": Ignored(_ENABLED),
    "queuecontroller.image.*": Ignored(_IMAGE),
    "queuecontroller.affinity.*": Ignored(_POD),
    "queuecontroller.resources": Alias("controllers.resources"),
    # binder
    "binder.enabled": Ignored(_ENABLED),
    "binder.name": Ignored("the binder's name is fixed here (kai-binder)"),
    "binder.image.*": Ignored(_IMAGE),
    "binder.resourceReservationImage.*": Ignored("the reservation pods' image is binder.resourceReservationPodImage"),
    "binder.resourceReservation.runtimeClassName": Alias("binder.runtimeClassName"),  # KAI's GPU-sharing doc
    "binder.ports.*": Ignored(_PORTS),
    "binder.affinity.*": Ignored(_POD),
    "binder.plugins.*": Ignored(
        "the binder's plugins other than binder.plugins.hamicore.enabled are fixed here (always on, in KAI's order)"
    ),
    "binder.cdiEnabled": Ignored("GPU sharing does not use CDI device names here"),
    "binder.additionalArgs.*": Ignored("KAI's chart no longer reads it either; the binder's flags are binder.*"),
    # scheduler
    "scheduler.enabled": Ignored(_ENABLED),
    "scheduler.image.*": Ignored(_IMAGE),
    "scheduler.ports.*": Ignored(_PORTS),
    "scheduler.goMemLimitRatio": Ignored("a Go runtime setting"),
    "scheduler.goMemLimit": Ignored("a Go runtime setting"),
    "scheduler.affinity.*": Ignored(_POD),
    "scheduler.podDisruptionBudget.*": Ignored(_PDB),
    "scheduler.additionalArgs.*": Ignored(
        "KAI's chart no longer reads it either; the scheduler's flags are scheduler.*"
    ),
    "numaPlacementExporter.*": Ignored("this project has no NUMA placement exporter"),
    # admission
    "admission.enabled": Ignored(_ENABLED),
    "admission.name": Ignored("the admission component's names are fixed here (kai-admission)"),
    "admission.image.*": Ignored(_IMAGE),
    "admission.ports.webhookPort": Alias("admission.webhookPort"),
    "admission.ports.metricsPort": Ignored(_PORTS),
    "admission.ports.probePort": Ignored(_PORTS),
    "admission.cdi": Ignored("GPU sharing does not use CDI device names here"),
    "admission.gpuFractionRuntimeClassName": Alias("admission.runtimeClassName"),
    "admission.gpuPodRuntimeClassName": Alias("admission.runtimeClassName"),
    "admission.gpuSharingEnabled": Alias("global.gpuSharing"),  # this project's older name of KAI's value
    "admission.affinity.*": Ignored(_POD),
    "admission.podDisruptionBudget.*": Ignored(_PDB),
    # node-scale-adjuster (KAI's key is lower-case)
    "nodescaleadjuster.image.*": Ignored(_IMAGE),
    "nodescaleadjuster.scalingPodImage.*": Ignored("the scaling pods' image is nodeScaleAdjuster.scalingPodImage"),
    "nodescaleadjuster.scalingPodNamespace": Alias("nodeScaleAdjuster.scalingPodNamespace"),
    "nodescaleadjuster.resources": Alias("nodeScaleAdjuster.resources"),
    "nodescaleadjuster.affinity.*": Ignored(_POD),
    "nodescaleadjuster.labels.*": Ignored("the scaling pod namespace's labels are fixed here"),
    # install hooks
    "crdupgrader.*": Ignored(_HOOKS),
    "kaiConfig.*": Ignored(_HOOKS),
    "kaiConfigDeployer.*": Ignored(_HOOKS),
    "topologyMigration.*": Ignored("Kueue Topologies are not migrated by the install here"),
    "postCleanup.*": Ignored(_HOOKS),
    "defaultPriorityClasses.enabled": Alias("priorityClasses.create"),
    "prometheus.*": Ignored("KAI's chart reads only prometheus.enabled and prometheus.externalPrometheusUrl too"),
    "defaultQueue.createDefaultQueue": Alias("defaultQueues.create"),
    "defaultQueue.parentName": Ignored("the default queues are always default-parent-queue and default-queue here"),
    "defaultQueue.childName": Ignored("the default queues are always default-parent-queue and default-queue here"),
    "defaultQueue.parentResources.*": Ignored("the default queues' quotas are fixed here (0, no limit, weight 1)"),
    "defaultQueue.childResources.*": Ignored("the default queues' quotas are fixed here (0, no limit, weight 1)"),
}

_INDEX = re.compile(r"\[\d+\]")


def find(path: str) -> tuple[str, Rule] | None:
    """The rule of KAI key `path` (dotted, list indices allowed) and the key it is written under, or None."""
    plain = _INDEX.sub("", path)
    if plain in RULES:
        return plain, RULES[plain]
    parts = plain.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        rule = RULES.get(f"{prefix}.*")
        if rule is not None:
            return f"{prefix}.*", rule
        alias = RULES.get(prefix)
        if isinstance(alias, Alias) and i < len(parts):  # a key under a mapping alias (resources)
            return prefix, alias
    return None


def aliases_of(target: str) -> list[str]:
    """The KAI keys that set this install's value `target` as they are (no conversion), in table order; a
    mapping alias (`queuecontroller.resources`) gives the key under it (`queuecontroller.resources.limits.cpu`)."""
    out = []
    for key, rule in RULES.items():
        if not isinstance(rule, Alias) or rule.convert is not None:
            continue
        if rule.target == target:
            out.append(key)
        elif target.startswith(f"{rule.target}."):
            out.append(key + target[len(rule.target) :])
    return out


def helm_expression(path: str) -> str:
    """The Go template expression of value `path`: a KAI key that aliases it wins when the user sets it."""
    expr = f".Values.{path}"
    for kai in reversed(aliases_of(path)):
        expr = f"(dig {_keys(kai)} {expr} .Values.AsMap)"
    for kai, rule in RULES.items():
        if isinstance(rule, Alias) and rule.target == path and rule.helm is not None:
            expr = rule.helm.format(inner=expr, key=f'(dig {_keys(kai)} "" .Values.AsMap | toString)')
    return expr


def _keys(path: str) -> str:
    return " ".join(f'"{k}"' for k in path.split("."))
