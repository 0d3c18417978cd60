"""A SchedulingShard's scheduler configuration, in KAI's ConfigMap shape (BEHAVIOR.md §1.5), as the operator
renders it into `config.yaml`.

The rules, in order:
1. Start from KAI's default plugin and action priorities (`PLUGIN_PRIORITIES`, `ACTION_PRIORITIES`), every one
   enabled except gpuspread, numa and reflectjoborder.
2. `placementStrategy.gpu`: binpack enables gpupack and gpusharingorder and disables gpuspread; spread the
   reverse. `nodeplacement` gets the arguments `gpu`/`cpu` of the strategy. Either strategy `spread` disables
   the consolidation action.
3. `minRuntime` becomes the minruntime plugin's `defaultPreemptMinRuntime`/`defaultReclaimMinRuntime`; `kValue`
   the proportion plugin's `kValue`.
4. `spec.plugins` and `spec.actions` entries override: `enabled` and `priority` when given, `arguments` replace
   the defaults whole. A name not in the defaults is enabled with priority 0 unless its entry says otherwise.
5. `actions` is the enabled actions by priority (highest first), as one comma-separated string;
   `tiers[0].plugins` the enabled plugins by priority, then name. `queueDepthPerAction`, `usageDBConfig` and
   `scenarioSearchBudgets` are copied when set.

Pure data: it names plugins but builds none (the operator loads the result with `scheduler.load_config`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final

from kai_scheduler.api.schedulingshard import BINPACK, ShardSpec
from kai_scheduler.framework.config import Flags, optional_sections

PLUGIN_PRIORITIES: Final[dict[str, int]] = {
    "predicates": 1900,
    "proportion": 1800,
    "priority": 1700,
    "nodeavailability": 1600,
    "resourcetype": 1500,
    "podaffinity": 1400,
    "elastic": 1300,
    "kubeflow": 1200,
    "ray": 1100,
    "subgrouporder": 1000,
    "taskorder": 900,
    "nominatednode": 800,
    "dynamicresources": 700,
    "minruntime": 600,
    "topology": 500,
    "snapshot": 400,
    "sg-nodelocalgreedy": 360,
    "sg-multinodegang": 350,
    "gpupack": 300,
    "gpuspread": 300,
    "nodeplacement": 200,
    "gpusharingorder": 100,
    # Registered, off unless a shard enables them.
    "numa": 0,
    "reflectjoborder": 0,
}
OFF_BY_DEFAULT: Final = frozenset({"numa", "reflectjoborder"})
ACTION_PRIORITIES: Final[dict[str, int]] = {
    "allocate": 500,
    "consolidation": 400,
    "reclaim": 300,
    "preempt": 200,
    "stalegangeviction": 100,
}

# What `spec.args` may name: the scheduler's decision flags and the process flags a shard may want to tune.
SHARD_ARGS: Final = frozenset(
    {f.name.replace("_", "-") for f in fields(Flags)} | {"metrics-namespace", "dashboard-address", "qps", "burst"}
)


@dataclass(slots=True)
class _Entry:
    enabled: bool
    priority: int
    arguments: dict[str, str]


def _override(entries: dict[str, _Entry], name: str, enabled: bool | None, priority: int | None) -> _Entry:
    """A shard's `enabled`/`priority` over a plugin's or action's entry; a name not among the defaults is on,
    at priority 0 (§1.5)."""
    entry = entries.setdefault(name, _Entry(True, 0, {}))
    if enabled is not None:
        entry.enabled = enabled
    if priority is not None:
        entry.priority = priority
    return entry


def render(spec: ShardSpec) -> dict[str, Any]:
    """The configuration mapping of `spec` (what `config.yaml` holds), keys in KAI's order."""
    plugins = _default_plugins(spec)
    for name, override in spec.plugins.items():
        entry = _override(plugins, name, override.enabled, override.priority)
        if override.arguments is not None:
            entry.arguments = dict(override.arguments)
    actions = {name: _Entry(True, priority, {}) for name, priority in ACTION_PRIORITIES.items()}
    if spec.placement.spreads:
        actions["consolidation"].enabled = False
    for name, action in spec.actions.items():
        _override(actions, name, action.enabled, action.priority)
    return {
        "actions": ", ".join(_ordered(actions)),
        "tiers": [{"plugins": [_plugin(name, plugins[name]) for name in _ordered(plugins)]}],
        **optional_sections(spec.queue_depth_per_action, spec.usage_db_config, spec.scenario_search_budgets),
    }


def _default_plugins(spec: ShardSpec) -> dict[str, _Entry]:
    plugins = {name: _Entry(name not in OFF_BY_DEFAULT, p, {}) for name, p in PLUGIN_PRIORITIES.items()}
    packs = spec.placement.gpu == BINPACK
    plugins["gpupack"].enabled = packs
    plugins["gpusharingorder"].enabled = packs
    plugins["gpuspread"].enabled = not packs
    plugins["nodeplacement"].arguments = {"gpu": spec.placement.gpu, "cpu": spec.placement.cpu}
    plugins["proportion"].arguments = {"kValue": format_number(spec.k_value)}
    runtime = {
        "defaultPreemptMinRuntime": spec.min_runtime.preempt,
        "defaultReclaimMinRuntime": spec.min_runtime.reclaim,
    }
    plugins["minruntime"].arguments = {k: v for k, v in runtime.items() if v is not None}
    return plugins


def _ordered(entries: dict[str, _Entry]) -> list[str]:
    """The enabled names, highest priority first, ties by name."""
    return [name for name, e in sorted(entries.items(), key=lambda i: (-i[1].priority, i[0])) if e.enabled]


def _plugin(name: str, entry: _Entry) -> dict[str, Any]:
    return {"name": name, "arguments": dict(entry.arguments)} if entry.arguments else {"name": name}


def format_number(value: float) -> str:
    """A float as KAI writes plugin arguments: "1.0", "2.5", "0.75"."""
    text = repr(float(value))
    return text if "e" not in text else f"{value:f}".rstrip("0").rstrip(".")
