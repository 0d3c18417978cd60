"""The install set: every object, from one values source, in the order it is applied."""

from __future__ import annotations

from typing import Any

import yaml

from kai_scheduler.api import kaiconfig, reservation_pod
from kai_scheduler.api.crd_manifests import load_crds
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.selectors import check_match_labels
from kai_scheduler.install import defaults, kai_config, rbac, webhooks, workloads
from kai_scheduler.install.objects import CATEGORIES, COMPONENTS, OPERATOR, InstallObject, chosen, values_key
from kai_scheduler.install.source import Concrete, Source, lookup
from kai_scheduler.install.values import LABEL_MAPS, Values, ValuesError


def build(src: Source) -> list[InstallObject]:
    """Everything but the CRDs, sorted by category (the builders keep their own order within one)."""
    objects = [
        *defaults.namespaces(src),
        *rbac.build(src),
        *kai_config.build(src),
        *workloads.build(src),
        *webhooks.build(src),
        *defaults.priority_classes(),
    ]
    return sorted(objects, key=lambda o: CATEGORIES.index(o.category))


def manifests(values: Values, *, skip_crds: bool = False) -> list[dict[str, Any]]:
    """The objects `kubectl apply` gets for `values`: CRDs first, then as `build` orders them."""
    check(values)
    crds = [] if skip_crds else load_crds()
    bodies = [o.body for o in build(Concrete(values)) if chosen(o.when, lambda path: lookup(values, path))]
    return [*crds, *bodies]


def check(values: Values) -> None:
    """Reject values that would install a broken scheduler: the scheduler config must load."""
    from kai_scheduler.scheduler.scheduler import load_config  # heavy (plugins, numpy): only when checking

    raw = lookup(values, "scheduler.config")
    try:
        loaded = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ValuesError("value 'scheduler.config': not valid YAML") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ValuesError("value 'scheduler.config': expected a mapping (actions, tiers, …)")
    try:
        load_config(loaded)
    except ValueError as err:
        raise ValuesError(f"value 'scheduler.config': {err}") from None
    if lookup(values, "global.logFormat") not in ("text", "json"):
        raise ValuesError(f"value 'global.logFormat': want text or json, got {lookup(values, 'global.logFormat')!r}")
    for component in (*COMPONENTS, OPERATOR):
        key = values_key(component)
        if lookup(values, f"{key}.replicas") < 0:
            raise ValuesError(f"value '{key}.replicas': must be 0 or more")
    for path in LABEL_MAPS:
        try:
            check_match_labels(lookup(values, path))
        except ValueError as err:
            raise ValuesError(f"value {path!r}: {err}") from None
    try:
        path = "binder.resourceReservationPodResources"
        reservation_pod.resources(path, lookup(values, path))
    except reservation_pod.SettingError as err:
        raise ValuesError(f"value {err}") from None
    _check_kai_config(values)
    ratio = lookup(values, "nodeScaleAdjuster.gpuMemoryToFractionRatio")
    try:
        good = 0 < float(ratio) <= 1
    except ValueError:
        good = False
    if not good:
        raise ValuesError(f"value 'nodeScaleAdjuster.gpuMemoryToFractionRatio': want a number in (0, 1], got {ratio!r}")


def _check_kai_config(values: Values) -> None:
    """The Config and the default shard the operator install hands the operator must pass its checks (those of the
    webhook): a bad one would be refused there, and the operator would keep its defaults."""
    if not values["operator"]["enabled"]:
        return
    from kai_scheduler.admission.operator import parse_shard  # heavy (plugins): only when checking

    config, *shard = kai_config.objects(values)
    try:
        kaiconfig.Config.from_dict(config)
        for obj in shard:
            parse_shard(obj)
    except ObjectError as err:
        raise ValuesError(f"{err} (rendered from the values: docs/install.md)") from None
