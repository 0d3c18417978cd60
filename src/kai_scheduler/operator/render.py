"""What the operator wants to exist: the objects of the Config and of each SchedulingShard, rendered with the
install's builders (`install.workloads`), labelled as the operator's and stamped with a hash of their rendering.

Pure: values in, object bodies out. A shard's scheduler configuration (`framework.shard_config.render`) must load
with `scheduler.load_config`, as the scheduler will load it; a `RenderError` says why not. A shard's `args` are
passed as `framework.shard_args` resolves them; a prometheus usage database without a connection string gets the
Config's Prometheus (`kaiconfig.Prometheus.usage_db_url`), as KAI's operator fills it in.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kai_scheduler.api import constants, kaiconfig, schedulingshard
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.api.schedulingshard import SchedulingShard
from kai_scheduler.framework import shard_args
from kai_scheduler.framework.shard_config import render as render_config
from kai_scheduler.install import values as install_values
from kai_scheduler.install import workloads
from kai_scheduler.install.objects import namespaced, resource_name
from kai_scheduler.install.render import dump
from kai_scheduler.install.source import Concrete
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.usagedb import usage_config

LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGER: Final = "kai-operator"
LABEL_SHARD: Final = "kai.scheduler/shard"  # on a shard's objects: the SchedulingShard's name
ANNOTATION_RENDERING_HASH: Final = "kai.scheduler/rendering-hash"  # on each object: hash of its rendering
ANNOTATION_CONFIG_HASH: Final = "kai.scheduler/config-hash"  # on a shard's pod template: hash of config.yaml
KINDS: Final = {
    "Deployment": "deployments",
    "Service": "services",
    "ConfigMap": "configmaps",
    "ServiceAccount": "serviceaccounts",
}
# The components whose ServiceAccounts the operator renders beside their Deployments, as KAI's operands do: the
# shards' scheduler and the shared components.
ACCOUNTS: Final = ("scheduler", *workloads.SHARED)

Key = tuple[str, str]  # (resource, name) in the operator's namespace
JSON = dict[str, Any]


class RenderError(UserError):
    """A shard whose configuration the scheduler would refuse; the message says why."""


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str
    name: str
    uid: str

    def reference(self) -> JSON:
        return {
            "apiVersion": constants.KAI_V1_API_VERSION,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": False,
        }


def base_values(namespace: str, image: str | None) -> install_values.Values:
    """The install's values for the operator's namespace and image (the chart's defaults otherwise)."""
    return install_values.resolve(namespace=namespace, image=image)


def with_config(base: install_values.Values, config: kaiconfig.Config | None) -> install_values.Values:
    """`base` with the Config's fields set (each row of `kaiconfig.FIELDS` names its value)."""
    values = copy.deepcopy(base)
    for path, value in (config.values if config else {}).items():
        node = values
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return values


def shard_names(shard: str) -> workloads.Instance:
    """The names of a shard's scheduler objects (labels and arguments added by `shard_objects`)."""
    return workloads.Instance(name=f"kai-scheduler-{shard}", config_map=f"kai-scheduler-config-{shard}")


def config_text(shard: SchedulingShard, usage_db_url: str = "") -> str:
    """The shard's `config.yaml`; RenderError when the scheduler would not load it. `usage_db_url`: the connection
    string of a prometheus usage database that has none (the Config's Prometheus; "" when it has none either)."""
    raw = render_config(dataclasses.replace(shard.spec, usage_db_config=_usage_db(shard, usage_db_url)))
    try:
        load_config(raw)
    except ValueError as err:
        raise RenderError(f"rendered configuration: {err}") from None
    return dump(raw)


def _usage_db(shard: SchedulingShard, url: str) -> dict[str, Any]:
    written = shard.spec.usage_db_config
    if not usage_config.needs_connection(written):
        return dict(written)
    if not url:
        raise ObjectError(
            schedulingshard.KIND,
            shard.meta.name,
            "spec.usageDBConfig.connectionString",
            "the prometheus client has no connection string and the Config names no Prometheus: set one, or "
            "spec.prometheus.enabled or spec.prometheus.externalPrometheusUrl of the Config",
        )
    return {**written, "connectionString": url}


def shard_objects(
    values: install_values.Values, shard: SchedulingShard, owner: Owner | None, *, usage_db_url: str = ""
) -> dict[Key, JSON]:
    """A shard's ConfigMap, metrics Service and Deployment."""
    text = config_text(shard, usage_db_url)
    own = copy.deepcopy(values)
    own["scheduler"]["partitionLabelValue"] = shard.spec.partition_label_value
    own["scheduler"]["config"] = text
    names = shard_names(shard.meta.name)
    flags = shard_args.resolve(shard.spec.args)
    # KAI appends --leader-elect=true after a shard's args when the Config runs more than one scheduler replica.
    elect = ("--leader-elect=true",) if values["scheduler"]["replicas"] > 1 else ()
    instance = workloads.Instance(
        name=names.name,
        config_map=names.config_map,
        args=(*flags.scheduler, *elect),
        labels={LABEL_SHARD: shard.meta.name},
        annotations={ANNOTATION_CONFIG_HASH: digest(text)},
    )
    bodies = [o.body for o in workloads.scheduler_shard(Concrete(own), instance)]
    for body in bodies:
        if body["kind"] == "Deployment" and flags.command:
            _before_subcommand(body, flags.command)
    return _finish(bodies, owner, shard=shard.meta.name)


def _before_subcommand(deployment: JSON, flags: tuple[str, ...]) -> None:
    """Put `kai`'s own flags (log level and format) before the container's subcommand, after those there."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    at = args.index("scheduler")
    container["args"] = [*args[:at], *flags, *args[at:]]


def shared_objects(
    values: install_values.Values, owner: Owner | None, prometheus: kaiconfig.Prometheus | None = None
) -> dict[Key, JSON]:
    """The binder's, podgrouper's, controllers' and admission's Deployments and Services, the ServiceAccounts of
    these and of the scheduler, and the Service of the Config's Prometheus when it is on."""
    src = Concrete(values)
    bodies = [*(_service_account(src, c) for c in ACCOUNTS), *(o.body for o in workloads.shared(src))]
    if prometheus is not None and prometheus.serves_usage:
        bodies.append(usage_prometheus_service(values["namespace"]["name"], prometheus.instance_name))
    return _finish(bodies, owner, shard=None)


def _service_account(src: Concrete, component: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": namespaced(src, resource_name(component), component),
    }


def usage_prometheus_service(namespace: str, instance: str) -> JSON:
    """KAI's `usage-prometheus` Service: port 9090 of the pods prometheus-operator runs for the Prometheus
    `instance` (its pods carry these two labels)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": kaiconfig.USAGE_PROMETHEUS_SERVICE, "namespace": namespace},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/instance": instance, "app.kubernetes.io/name": "prometheus"},
            "ports": [{"name": "web", "port": kaiconfig.PROMETHEUS_PORT, "protocol": "TCP"}],
        },
    }


def _finish(bodies: list[JSON], owner: Owner | None, *, shard: str | None) -> dict[Key, JSON]:
    out = {}
    for body in bodies:
        meta = body["metadata"]
        meta["labels"] = {**meta.get("labels", {}), LABEL_MANAGED_BY: MANAGER}
        if shard is not None:
            meta["labels"][LABEL_SHARD] = shard
        if owner is not None:
            meta["ownerReferences"] = [owner.reference()]
        meta["annotations"] = {**meta.get("annotations", {}), ANNOTATION_RENDERING_HASH: digest(body)}
        out[(KINDS[body["kind"]], meta["name"])] = body
    return out


def digest(value: str | Mapping[str, Any]) -> str:
    """A short stable hash of a text or a JSON value (keys sorted)."""
    data = value.encode() if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:16]
