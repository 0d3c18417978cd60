"""Config (`kai.scheduler/v1`, the cluster-scoped singleton `kai-config`): global settings and the settings of the
components the operator runs (BEHAVIOR.md §1.5).

Each field this project implements is one row of `FIELDS`: its path in `spec`, its type, and the install value
it sets (`install/values.py` holds the defaults; the operator renders the components with the same builders as
`kai manifests`). A field of the table of the wrong type is an `ObjectError` naming it.

A field KAI's Config has and this project does not implement (`prometheus`, a component's `service.image`,
`global.tolerations`, …) is accepted and ignored, and named in `Config.ignored`: the operator says so in its
status and the webhook as a warning, as the API server warns of a field a CRD's schema prunes. A Config written
for KAI then renders the components, not nothing. Refused are a top-level section KAI's Config does not have
and a field one typo away from one this project implements (`binder.maxConcurentReconciles`), which would
otherwise be ignored while the user expects it to apply.

`namespace` is where the components are rendered (KAI's `spec.namespace`; unset: the operator's `--namespace`).
`prometheus.enabled`, `.externalPrometheusUrl` and `.instanceName` are the operator's own settings
(`Config.prometheus`): they give a shard's prometheus usage database its default address, as KAI's operator does.

KAI's `queueController` and `podGroupController` sections are one component here, `controllers` (so is this
project's own `controllers` section): the replicas of the sections that set them give the larger count, and their
resources add up (one process does the work of KAI's two). A component's `resources` may also be written where
KAI's Config has them, under its `service` (`spec.binder.service.resources`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Final

from kai_scheduler.api import constants, quantity, reservation_pod
from kai_scheduler.api.duration import DurationError, parse_duration
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.selectors import check_match_labels

KIND: Final = "Config"
API_VERSION: Final = constants.KAI_V1_API_VERSION
NAME: Final = "kai-config"  # the singleton the operator reads; any other name is refused

# spec path → (type, install value path). Types: "str", "text" (a string, "" allowed), "namespace", "count" (integer
# ≥ 0), "positive" (integer ≥ 1), "port" (1 to 65535), "bool", "jsonlog" (a bool: json or text), "duration" (a Go
# duration string > 0), "labels" (a map of label keys to label values), "resources" (CPU and memory requests and
# limits, api/reservation_pod), "object" (any mapping, such as a securityContext), "list" (a list of objects, such
# as tolerations), "secret" / "secrets" (a Secret's name / a list of them: the pods' imagePullSecrets).
FIELDS: Final[dict[str, tuple[str, str]]] = {
    "namespace": ("namespace", "namespace.name"),
    "global.schedulerName": ("str", "global.schedulerName"),
    "global.queueLabelKey": ("str", "global.queueLabelKey"),
    "global.nodePoolLabelKey": ("str", "global.nodePoolLabelKey"),
    "global.queueAccessControl": ("bool", "global.queueAccessControl"),
    "global.qps": ("count", "global.qps"),
    "global.burst": ("positive", "global.burst"),
    "global.logFormat": ("str", "global.logFormat"),
    # KAI's selective monitoring: the pod grouper's selector flags and the pod webhooks' selectors.
    "global.podLabelSelector": ("labels", "global.podLabelSelector"),
    "global.namespaceLabelSelector": ("labels", "global.namespaceLabelSelector"),
    "global.jsonLog": ("jsonlog", "global.logFormat"),  # KAI's: true is json, false text
    # Where the components' pods run (every Deployment the operator renders).
    "global.nodeSelector": ("labels", "global.nodeSelector"),
    "global.tolerations": ("list", "global.tolerations"),
    "global.affinity": ("object", "global.affinity"),
    "global.priorityClassName": ("text", "global.priorityClassName"),
    "global.imagesPullSecret": ("secret", "global.imagePullSecrets"),
    "global.additionalImagePullSecrets": ("secrets", "global.imagePullSecrets"),
    "global.image.repository": ("str", "image.repository"),
    "global.image.tag": ("str", "image.tag"),
    "global.image.pullPolicy": ("str", "image.pullPolicy"),
    "scheduler.replicas": ("count", "scheduler.replicas"),
    "scheduler.schedulePeriod": ("duration", "scheduler.schedulePeriod"),
    "binder.replicas": ("count", "binder.replicas"),
    "binder.maxConcurrentReconciles": ("positive", "binder.maxConcurrentReconciles"),
    # KAI's binder plugin hamicore; it also turns on the admission's --hami-core-enabled, as KAI's operator does.
    "binder.plugins.hamicore.enabled": ("bool", "binder.plugins.hamicore.enabled"),
    "binder.resourceReservation.namespace": ("namespace", "binder.resourceReservationNamespace"),
    "binder.resourceReservation.runtimeClassName": ("text", "binder.runtimeClassName"),
    "binder.resourceReservation.serviceAccountName": ("str", "binder.resourceReservationServiceAccount"),
    "binder.resourceReservation.podResources": ("resources", "binder.resourceReservationPodResources"),
    "binder.resourceReservation.reservationPodSecurityContext": (
        "object",
        "binder.resourceReservationPodSecurityContext",
    ),
    "binder.resourceReservation.reservationContainerSecurityContext": (
        "object",
        "binder.resourceReservationContainerSecurityContext",
    ),
    "podGrouper.replicas": ("count", "podgrouper.replicas"),
    "podGrouper.maxConcurrentReconciles": ("positive", "podgrouper.maxConcurrentReconciles"),
    "podGrouper.args.gangScheduleKnative": ("bool", "podgrouper.knativeGangSchedule"),
    "podGrouper.args.defaultPrioritiesConfigMapName": ("text", "podgrouper.defaultPrioritiesConfigMapName"),
    "podGrouper.args.defaultPrioritiesConfigMapNamespace": ("text", "podgrouper.defaultPrioritiesConfigMapNamespace"),
    "controllers.replicas": ("count", "controllers.replicas"),
    "controllers.maxConcurrentReconciles": ("positive", "controllers.maxConcurrentReconciles"),
    "queueController.replicas": ("count", "controllers.replicas"),
    "podGroupController.replicas": ("count", "controllers.replicas"),
    # KAI's pod group controller's status writers; the queue controller (one worker in KAI) shares them here.
    "podGroupController.maxConcurrentReconciles": ("positive", "controllers.maxConcurrentReconciles"),
    "admission.replicas": ("count", "admission.replicas"),
    "admission.gpuSharing": ("bool", "global.gpuSharing"),
    "admission.gpuSharingEnabled": ("bool", "global.gpuSharing"),  # this project's older name of KAI's field
    "admission.blockNvidiaVisibleDevices": ("bool", "admission.blockNvidiaVisibleDevices"),
    "admission.gpuFractionRuntimeClassName": ("text", "admission.runtimeClassName"),
    "admission.gpuPodRuntimeClassName": ("text", "admission.runtimeClassName"),
    "admission.webhook.targetPort": ("port", "admission.webhookPort"),
}
# spec path → type of the settings the operator itself reads (`Config.prometheus`), not install values.
SETTINGS: Final[dict[str, str]] = {
    "prometheus.enabled": "bool",
    "prometheus.externalPrometheusUrl": "str",
    "prometheus.instanceName": "str",
}
# Sections whose `resources` ({requests, limits} × {cpu, memory}) set the component's container resources.
RESOURCE_SECTIONS: Final = {
    "scheduler": "scheduler",
    "binder": "binder",
    "podGrouper": "podgrouper",
    "controllers": "controllers",
    "queueController": "controllers",
    "podGroupController": "controllers",
    "admission": "admission",
}
# The top-level sections of KAI's Config (BEHAVIOR.md §1.5): those not in FIELDS are accepted and ignored.
KAI_SECTIONS: Final = frozenset(
    {
        "admission",
        "binder",
        "global",
        "namespace",
        "nodeScaleAdjuster",
        "numaPlacementExporter",
        "operator",
        "podGroupController",
        "podGrouper",
        "prometheus",
        "queueController",
        "scheduler",
    }
)
# How alike an unknown field's name must be to a known one to be taken as its typo (difflib's ratio).
TYPO_CUTOFF: Final = 0.85
PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
LOG_FORMATS: Final = ("text", "json")
NAMESPACE: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a DNS-1123 label
# KAI's Prometheus (pkg/apis/kai/v1/prometheus, pkg/operator/operands/prometheus): the instance's default name, the
# Service in front of it and its port; a shard's usage database reads from the Service.
PROMETHEUS_INSTANCE: Final = "prometheus"
USAGE_PROMETHEUS_SERVICE: Final = "usage-prometheus"
PROMETHEUS_PORT: Final = 9090


@dataclass(frozen=True, slots=True)
class Prometheus:
    """`spec.prometheus` as far as this project reads it."""

    enabled: bool = False
    external_url: str = ""
    instance_name: str = PROMETHEUS_INSTANCE

    @property
    def serves_usage(self) -> bool:
        """KAI renders the `usage-prometheus` Service: its own Prometheus is on, not an external one."""
        return self.enabled and not self.external_url

    def usage_db_url(self, namespace: str) -> str:
        """The connection string a shard's prometheus usage database gets when it has none ("" when none applies):
        KAI's operator takes its own Prometheus' Service when enabled, else the external URL."""
        if self.enabled:
            return f"http://{USAGE_PROMETHEUS_SERVICE}.{namespace}.svc.cluster.local:{PROMETHEUS_PORT}"
        return self.external_url


@dataclass(slots=True, kw_only=True)
class Config:
    meta: ObjectMeta
    generation: int
    # install value path → value, for every field the spec sets.
    values: dict[str, Any] = field(default_factory=dict)
    # `spec.…` paths of the fields set that this project does not implement (accepted, not rendered).
    ignored: list[str] = field(default_factory=list)
    prometheus: Prometheus = Prometheus()

    @classmethod
    def from_dict(cls, data: JSON) -> Config:
        r = Reader(data, KIND)
        meta = ObjectMeta.read(r)
        if meta.name != NAME:
            raise r.error("metadata.name", f"the Config is a singleton named {NAME!r}")
        values: dict[str, Any] = {}
        ignored: list[str] = []
        _walk(r, r.map("spec"), "", values, ignored)
        settings = {path: values.pop(path) for path in SETTINGS if path in values}
        prometheus = Prometheus(
            enabled=settings.get("prometheus.enabled", False),
            external_url=settings.get("prometheus.externalPrometheusUrl", ""),
            instance_name=settings.get("prometheus.instanceName", PROMETHEUS_INSTANCE),
        )
        generation = r.int("metadata.generation", 0) or 0
        return cls(meta=meta, generation=generation, values=values, ignored=ignored, prometheus=prometheus)

    def warnings(self) -> list[str]:
        """What the webhook warns of and the operator's Reconciled condition says: the fields set that are not
        implemented, and that the Prometheus this Config enables is not deployed here."""
        out = [self.ignored_message()] if self.ignored else []
        if self.prometheus.serves_usage:
            out.append(
                f"{KIND} {self.meta.name} spec.prometheus.enabled: the operator renders the Service "
                f"{USAGE_PROMETHEUS_SERVICE} for a Prometheus named {self.prometheus.instance_name!r} and does not "
                "deploy one (see docs/operator.md)"
            )
        return out

    def ignored_message(self) -> str:
        """One line naming the fields set that this project does not implement ("" when there are none)."""
        if not self.ignored:
            return ""
        return f"{KIND} {self.meta.name}: not implemented by this project, ignored: {', '.join(self.ignored)}"


def _walk(r: Reader, node: dict[str, Any], prefix: str, out: dict[str, Any], ignored: list[str]) -> None:
    for key, value in node.items():
        path = f"{prefix}{key}"
        if path in FIELDS:
            kind, target = FIELDS[path]
            typed = _typed(r, f"spec.{path}", kind, value)
            if kind == "count" and target in out:
                typed = max(out[target], typed)
            elif isinstance(typed, list) and isinstance(out.get(target), list):  # two fields, one list
                typed = out[target] + typed
            out[target] = typed
        elif path in SETTINGS:
            out[path] = _typed(r, f"spec.{path}", SETTINGS[path], value)  # popped into Config.prometheus
        elif prefix == "" and key not in _sections():
            if key not in KAI_SECTIONS:
                raise r.error(f"spec.{path}", f"unknown section; known: {', '.join(sorted(KAI_SECTIONS))}")
            ignored.append(f"spec.{path}")
        elif key == "resources" and prefix[:-1] in RESOURCE_SECTIONS:
            _resources(r, f"spec.{path}", value, f"{RESOURCE_SECTIONS[prefix[:-1]]}.resources", out, ignored)
        elif key == "service" and prefix[:-1] in RESOURCE_SECTIONS:
            if not isinstance(value, dict):
                raise r.error(f"spec.{path}", f"expected an object, got {value!r}")
            for name, inner in value.items():
                if name == "resources":
                    target = f"{RESOURCE_SECTIONS[prefix[:-1]]}.resources"
                    _resources(r, f"spec.{path}.resources", inner, target, out, ignored)
                else:
                    _unknown(r, f"{path}.", name, ["resources"], ignored)
        elif isinstance(value, dict) and any(p.startswith(f"{path}.") for p in (*FIELDS, *SETTINGS)):
            _walk(r, value, f"{path}.", out, ignored)
        else:
            _unknown(r, prefix, key, _known_under(prefix), ignored)


def _unknown(r: Reader, prefix: str, key: str, known: list[str], ignored: list[str]) -> None:
    """A field this project does not implement: refused when it looks like a typo of one it does, else ignored."""
    typo = difflib.get_close_matches(key, known, n=1, cutoff=TYPO_CUTOFF)
    if typo:
        raise r.error(f"spec.{prefix}{key}", f"unknown field (did you mean {typo[0]}?); known: {', '.join(known)}")
    ignored.append(f"spec.{prefix}{key}")


def _sections() -> set[str]:
    return {p.split(".")[0] for p in (*FIELDS, *SETTINGS)}


def _known_under(prefix: str) -> list[str]:
    names = {p[len(prefix) :].split(".")[0] for p in (*FIELDS, *SETTINGS) if p.startswith(prefix)}
    if prefix[:-1] in RESOURCE_SECTIONS:
        names.update(("resources", "service"))
    return sorted(names)


# Replica counts and concurrencies become int32 fields and flags of the rendered Deployments.
INT32_MAX = 2**31 - 1


def _typed(r: Reader, path: str, kind: str, value: Any) -> Any:
    if kind in ("bool", "jsonlog"):
        if not isinstance(value, bool):
            raise r.error(path, f"expected true or false, got {value!r}")
        return ("json" if value else "text") if kind == "jsonlog" else value
    if kind == "port":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise r.error(path, f"expected a port number (1 to 65535), got {value!r}")
        return value
    if kind == "labels":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise r.error(path, f"expected a map of label keys to string values, got {value!r}")
        try:
            return check_match_labels(value)
        except ValueError as err:
            raise r.error(path, str(err)) from None
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise r.error(path, f"expected a list of objects, got {value!r}")
        return value
    if kind in ("secret", "secrets"):
        names = [value] if kind == "secret" else value
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise r.error(path, f"expected {'a name' if kind == 'secret' else 'a list of names'}, got {value!r}")
        return [{"name": n} for n in names if n]
    if kind in ("resources", "object"):
        try:
            check = reservation_pod.resources if kind == "resources" else reservation_pod.as_object
            return check(path, value)
        except reservation_pod.SettingError as err:
            raise r.error(err.field, err.problem) from None
    if kind == "text":
        if not isinstance(value, str):
            raise r.error(path, f"expected a string, got {value!r}")
        return value
    if kind in ("count", "positive"):
        least = 0 if kind == "count" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise r.error(path, f"expected an integer of at least {least}, got {value!r}")
        if value > INT32_MAX:
            raise r.error(path, f"expected an integer of at most {INT32_MAX}, got {value}")
        return value
    if not isinstance(value, str) or not value:
        raise r.error(path, f"expected a non-empty string, got {value!r}")
    if kind == "namespace" and not NAMESPACE.fullmatch(value):
        raise r.error(path, f"expected a namespace name (lower-case letters, digits and '-'), got {value!r}")
    if kind == "duration":
        try:
            seconds = parse_duration(value)
        except DurationError as err:
            raise r.error(path, str(err)) from None
        if seconds <= 0:
            raise r.error(path, f"must be positive, got {value!r}")
    if path.endswith("pullPolicy") and value not in PULL_POLICIES:
        raise r.error(path, f"want one of {', '.join(PULL_POLICIES)}, got {value!r}")
    if path.endswith("logFormat") and value not in LOG_FORMATS:
        raise r.error(path, f"want text or json, got {value!r}")
    return value


def _resources(r: Reader, path: str, value: Any, target: str, out: dict[str, Any], ignored: list[str]) -> None:
    """A container's `requests` and `limits` of cpu and memory; its `claims` and other resources (KAI's Config takes a
    whole ResourceRequirements) are ignored and named."""
    if not isinstance(value, dict):
        raise r.error(path, f"expected requests and limits, got {value!r}")
    for bound, amounts in value.items():
        where = f"{path}.{bound}"
        if bound == "claims":
            ignored.append(where)
            continue
        if bound not in ("requests", "limits"):
            raise r.error(where, "unknown field; known: claims, limits, requests")
        if not isinstance(amounts, dict):
            raise r.error(where, f"expected cpu and memory, got {amounts!r}")
        for resource, amount in amounts.items():
            if resource not in ("cpu", "memory"):
                r.quantity(f"{where}.{resource}", amount)  # still a quantity, as the API server checks it
                ignored.append(f"{where}.{resource}")
                continue
            parsed = r.quantity(f"{where}.{resource}", amount)  # parses, or names the field
            key = f"{target}.{bound}.{resource}"
            if key in out:  # a second section of the same component (queueController and podGroupController)
                parsed += r.quantity(f"{where}.{resource}", out[key])
                out[key] = quantity.format_cpu(parsed) if resource == "cpu" else quantity.format_memory(parsed)
            else:
                out[key] = str(amount)
