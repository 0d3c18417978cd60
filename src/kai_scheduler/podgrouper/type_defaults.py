"""Default priority class and preemptibility per workload kind, from a ConfigMap (KAI's pod grouper flags
`--default-priorities-configmap-name` and `--default-priorities-configmap-namespace`, the Config fields
`podGrouper.args.defaultPrioritiesConfigMapName` and `...Namespace`).

The ConfigMap's `data.types` is a JSON list, one entry per kind:

    [{"typeName": "Deployment", "group": "apps", "priorityName": "inference", "preemptibility": "non-preemptible"}]

An entry applies to the owners of that kind and group (`Kind.group`, as Kubernetes writes a GroupKind; an entry
whose `group` is empty applies to that kind in any group). A pod's PodGroup takes them when neither its owner nor
the pod says otherwise (`podgrouper.default`): the first owner from the pod up whose kind has an entry naming a
PriorityClass that exists, and the first whose entry has a preemptibility.

The ConfigMap is read once per reconcile pass that groups pods, so an edit applies to the next pods grouped. A
ConfigMap that is missing or unreadable leaves the built-in defaults in force, as KAI's grouper does, and an entry
with an unknown preemptibility keeps its priority class alone; a problem is logged once, and again only when it
changes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.errors import UserError
from kai_scheduler.store.interface import ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

TYPES_KEY = "types"  # KAI's DefaultPrioritiesConfigMapTypesKey
PREEMPTIBILITIES = (constants.PREEMPTIBLE, constants.NON_PREEMPTIBLE)


@dataclass(frozen=True, slots=True)
class TypeDefault:
    """One kind's defaults; "" where the entry sets none."""

    priority_class: str = ""
    preemptibility: str = ""


TypeDefaults = Mapping[str, TypeDefault]  # "Kind.group" (or "Kind") → its defaults


def key(group: str, kind: str) -> str:
    """A GroupKind as Kubernetes writes it: `Deployment.apps`, `Pod` for the core group."""
    return f"{kind}.{group}" if group else kind


def for_kind(defaults: TypeDefaults, group: str, kind: str) -> TypeDefault | None:
    """The entry of `kind` in `group`, else the entry written for the kind alone."""
    return defaults.get(key(group, kind)) or defaults.get(kind)


def parse(configmap: Mapping[str, Any]) -> tuple[dict[str, TypeDefault], list[str]]:
    """The defaults of a ConfigMap, and the problems of entries taken in part (a preemptibility that is neither
    value is left out, as KAI's grouper leaves it); a UserError naming the ConfigMap and the field when it cannot
    be read at all."""
    meta = configmap.get("metadata") or {}
    where = f"ConfigMap {meta.get('namespace', '')}/{meta.get('name', '')} data.{TYPES_KEY}"
    data = configmap.get("data")
    text = data.get(TYPES_KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        raise UserError(f"{where}: missing")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{where}: not JSON: {err}") from None
    if not isinstance(entries, list):
        raise UserError(f"{where}: expected a list of entries, got {type(entries).__name__}")
    defaults: dict[str, TypeDefault] = {}
    problems: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise UserError(f"{where}[{i}]: expected an object, got {type(entry).__name__}")
        fields = {name: entry.get(name) or "" for name in ("typeName", "group", "priorityName", "preemptibility")}
        for name, value in fields.items():
            if not isinstance(value, str):
                raise UserError(f"{where}[{i}].{name}: expected a string, got {value!r}")
        if not fields["typeName"]:
            problems.append(f"{where}[{i}].typeName: missing; entry ignored")
            continue
        preemptibility = fields["preemptibility"].lower()
        if preemptibility and preemptibility not in PREEMPTIBILITIES:
            problems.append(
                f"{where}[{i}].preemptibility: unknown value {fields['preemptibility']!r}; want "
                f"{' or '.join(PREEMPTIBILITIES)}; ignored"
            )
            preemptibility = ""
        defaults[key(fields["group"], fields["typeName"])] = TypeDefault(fields["priorityName"], preemptibility)
    return defaults, problems


class Source:
    """Reads the defaults ConfigMap `namespace/name` from the store (none configured: no defaults)."""

    def __init__(self, store: ClusterStore, namespace: str = "", name: str = "") -> None:
        self.store = store
        self.namespace = namespace
        self.name = name
        self._problem = ""  # the last problem logged, so that it is logged once

    def read(self) -> TypeDefaults:
        if not self.name:
            return {}
        try:
            defaults, problems = parse(self.store.get("configmaps", self.name, self.namespace))
        except NotFound:
            self._report(f"ConfigMap {self.namespace}/{self.name}: not found; the built-in defaults apply")
            return {}
        except (StoreError, UserError) as err:
            self._report(f"{err}; the built-in defaults apply")
            return {}
        self._report("; ".join(problems))
        return defaults

    def _report(self, problem: str) -> None:
        """Log a problem once, and once more when it changes or is gone."""
        if problem == self._problem:
            return
        if problem:
            log.warning("default priorities: %s", problem)
        else:
            log.info("default priorities ConfigMap %s/%s read without problems", self.namespace, self.name)
        self._problem = problem
