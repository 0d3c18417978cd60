"""One install object and the names every builder shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kai_scheduler.install import kai_values
from kai_scheduler.install.source import Source

COMPONENTS = ("scheduler", "binder", "podgrouper", "controllers", "admission", "node-scale-adjuster")
# Components installed only when a boolean value says so: component → values path. The operator does not render
# them: in both install modes they are static objects.
OPTIONAL: dict[str, str] = {"node-scale-adjuster": "nodeScaleAdjuster.enabled"}
OPERATOR = "operator"
# `when` of the objects the operator renders in its place (see `InstallObject.when`), and of the operator's own.
STATIC_ONLY = "!operator.enabled"
OPERATOR_ONLY = "operator.enabled"
PART_OF = "kai-scheduler"
LISTEN_PORT = 8080
PLUGIN_SERVER_PORT = 8081  # the scheduler's --plugin-server-port by default (KAI's)
ADMISSION_SERVICE = "kai-admission"
WEBHOOK_CONFIGURATION = "kai-admission"
CONFIG_MAP = "kai-scheduler-config"
CONFIG_DIR = "/etc/kai"
CONFIG_FILE = "config.yaml"

# The order `kai manifests` prints categories in (and the chart's template files).
CATEGORIES = ("crds", "namespaces", "rbac", "config", "services", "deployments", "webhooks", "priorityclasses")


@dataclass(slots=True)
class InstallObject:
    category: str
    body: dict[str, Any]
    when: str | None = None  # values path of a boolean that must be true to install it; "!path": false

    @property
    def kind(self) -> str:
        return str(self.body["kind"])


def chosen(when: str | None, value: Callable[[str], Any]) -> bool:
    """Whether an object with `when` is installed, `value` reading a values path."""
    if when is None:
        return True
    return not value(when[1:]) if when.startswith("!") else bool(value(when))


def helm_condition(when: str) -> str:
    """The Go template condition of a `when`."""
    if when.startswith("!"):
        return f"not {kai_values.helm_expression(when[1:])}"
    return kai_values.helm_expression(when)


def resource_name(component: str) -> str:
    """The Deployment, ServiceAccount, Service and RBAC name of a component."""
    return f"kai-{component}"


def values_key(component: str) -> str:
    """The top-level values key of a component's settings (`replicas`, `resources`, its flags)."""
    head, *rest = component.split("-")
    return head + "".join(part.capitalize() for part in rest)


def when(component: str) -> str | None:
    """The boolean value that installs the component's objects, None when it is always installed."""
    return OPTIONAL.get(component)


def labels(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": resource_name(component),
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/component": component,
    }


def selector(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": resource_name(component)}


def namespaced(src: Source, name: str, component: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": src.value("namespace.name")}
    meta["labels"] = labels(component) if component else {"app.kubernetes.io/part-of": PART_OF}
    return meta


def cluster_scoped(name: str, component: str | None = None) -> dict[str, Any]:
    return {"name": name, "labels": labels(component) if component else {"app.kubernetes.io/part-of": PART_OF}}
