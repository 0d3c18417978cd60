"""Scheduler configuration in KAI's ConfigMap shape (§1.5, §4, §9.3): actions, tiers, arguments, flags.

`parse(raw)` validates the shape at load: an unknown action or plugin, a bad argument type or an unknown
flag is a `ConfigError` naming the field. What another layer judges (plugin arguments, search budgets,
`usageDBConfig` through `usagedb.usage_config`) `scheduler.load_config` checks right after. Plugins that KAI
ships but this scheduler does not implement are accepted and reported in `ignored_plugins`, so a KAI ConfigMap
works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kai_scheduler.api import constants, duration
from kai_scheduler.api.booleans import parse_bool
from kai_scheduler.api.errors import UserError, did_you_mean

DEFAULT_ACTIONS = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")

# KAI's fallback plugin list (§4), in its order; arguments as KAI's defaults.
DEFAULT_PLUGINS: tuple[tuple[str, dict[str, str]], ...] = (
    ("predicates", {}),
    ("proportion", {}),
    ("priority", {}),
    ("elastic", {}),
    ("kubeflow", {}),
    ("ray", {}),
    ("nodeavailability", {}),
    ("gpusharingorder", {}),
    ("gpupack", {}),
    ("resourcetype", {}),
    ("subgrouporder", {}),
    ("taskorder", {}),
    ("nominatednode", {}),
    ("dynamicresources", {}),
    ("nodeplacement", {"gpu": "binpack", "cpu": "binpack"}),
    ("minruntime", {}),
    ("topology", {}),
    ("snapshot", {}),
    ("sg-nodelocalgreedy", {}),
    ("sg-multinodegang", {}),
)


class ConfigError(UserError):
    """A scheduler configuration that cannot be used; the message names the field.

    `path` is where in the configuration mapping the problem is (keys and list indices, as far as known), so
    a reader that kept the file's line numbers can say `file:line`."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.path = path

    def at(self, *path: str | int) -> ConfigError:
        """The same error, located at `path` unless it already knows a place."""
        return self if self.path else ConfigError(str(self), tuple(path))


def plugin_path(raw: Mapping[str, Any] | None, name: str) -> tuple[str | int, ...]:
    """Where plugin `name` is written in a raw configuration: ("tiers", i, "plugins", j), else ("tiers",)."""
    tiers = (raw or {}).get("tiers")
    for i, tier in enumerate(tiers if isinstance(tiers, list) else []):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        for j, plugin in enumerate(plugins if isinstance(plugins, list) else []):
            if isinstance(plugin, Mapping) and plugin.get("name") == name:
                return ("tiers", i, "plugins", j)
    return ("tiers",) if tiers is not None else ()


def no_arguments(plugin: str, arguments: Mapping[str, str]) -> None:
    """The check of every plugin that takes no `arguments`: any given is a configuration error naming it."""
    if arguments:
        raise ConfigError(f"plugin {plugin}: takes no arguments, got {sorted(arguments)[0]!r}")


@dataclass(frozen=True, slots=True)
class Flags:
    """The scheduler flags of §9.3 that change decisions, by their CLI name with underscores."""

    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    schedule_period: float = 1.0
    nodepool_label_key: str = constants.DEFAULT_NODE_POOL_LABEL_KEY
    partition_label_value: str = ""
    queue_label_key: str = constants.DEFAULT_QUEUE_LABEL_KEY
    restrict_node_scheduling: bool = False
    max_consolidation_preemptees: int = 16
    detailed_fit_errors: bool = False
    update_pod_eviction_condition: bool = False
    use_scheduling_signatures: bool = True
    full_hierarchy_fairness: bool = True
    allow_consolidating_reclaim: bool = True
    reclaim_protects_deserved: bool = False  # not KAI's: see docs/configuration.md "Departures from KAI"
    pipelined_claims: bool = False  # true is not KAI's: see docs/configuration.md "Departures from KAI"
    preemptor_placed_first: bool = False  # true is not KAI's: see docs/configuration.md "Departures from KAI"
    default_staleness_grace_period: float = 60.0
    stuck_in_releasing_threshold: float = 120.0
    queue_access_control: bool = False  # not KAI's: see docs/queue-access.md


# Flags KAI has that this scheduler accepts only at their default (so a KAI ConfigMap or command line that
# spells out the default works), with what it does instead.
FIXED_FLAGS: dict[str, str] = {
    "restrict_node_scheduling": "any node may be used; label-based CPU/GPU worker restriction is not implemented",
    "detailed_fit_errors": "fit errors are always summarised per reason",
    "full_hierarchy_fairness": "resources are always divided over the whole queue tree",
}


def check_supported(flags: Flags, spelling: str = "config flags.{}") -> None:
    """A ConfigError for the first flag of FIXED_FLAGS set to other than its default, saying what applies."""
    for name, instead in FIXED_FLAGS.items():
        default = getattr(Flags(), name)
        if getattr(flags, name) != default:
            key = name.replace("_", "-")
            raise ConfigError(
                f"{spelling.format(key)}: only {str(default).lower()} is supported ({instead})", ("flags", key)
            )


@dataclass(frozen=True, slots=True)
class PluginConfig:
    name: str
    arguments: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    actions: tuple[str, ...] = DEFAULT_ACTIONS
    tiers: tuple[tuple[PluginConfig, ...], ...] = ()
    queue_depth_per_action: Mapping[str, int] = field(default_factory=dict)
    flags: Flags = Flags()
    usage_db_config: Mapping[str, Any] = field(default_factory=dict)  # as written; checked by load_config
    scenario_search_budgets: Mapping[str, Any] = field(default_factory=dict)
    ignored_plugins: tuple[str, ...] = ()

    def plugins(self) -> list[PluginConfig]:
        """Every configured plugin in tier order."""
        return [p for tier in self.tiers for p in tier]

    def plugin(self, name: str) -> PluginConfig | None:
        return next((p for p in self.plugins() if p.name == name), None)


def parse(
    raw: Mapping[str, Any] | None, *, known_plugins: set[str], known_actions: set[str], kai_plugins: set[str]
) -> SchedulerConfig:
    """Validate a ConfigMap-shaped mapping; omitted parts take KAI's defaults."""
    raw = dict(raw or {})
    unknown = set(raw) - {"actions", "tiers", "queueDepthPerAction", "flags", "usageDBConfig", "scenarioSearchBudgets"}
    if unknown:
        raise ConfigError(f"config: unknown field {sorted(unknown)[0]!r}", (sorted(unknown)[0],))
    actions = _actions(raw.get("actions"), known_actions)
    tiers, ignored = _tiers(raw.get("tiers"), known_plugins, kai_plugins)
    placement = next((p.arguments for t in tiers for p in t if p.name == "nodeplacement"), {})
    if "spread" in placement.values() and "consolidation" in actions and "actions" not in raw:
        actions = tuple(a for a in actions if a != "consolidation")  # §1.5: consolidation off with spread
    return SchedulerConfig(
        actions=actions,
        tiers=tiers,
        queue_depth_per_action=_depths(raw.get("queueDepthPerAction"), known_actions),
        flags=parse_flags(raw.get("flags")),
        usage_db_config=_mapping(raw.get("usageDBConfig"), "usageDBConfig"),
        scenario_search_budgets=_mapping(raw.get("scenarioSearchBudgets"), "scenarioSearchBudgets"),
        ignored_plugins=ignored,
    )


def optional_sections(
    queue_depth_per_action: Mapping[str, int],
    usage_db_config: Mapping[str, Any],
    scenario_search_budgets: Mapping[str, Any],
) -> dict[str, Any]:
    """The optional sections of a config.yaml, as `parse` reads them; an empty one is left out."""
    sections = {
        "queueDepthPerAction": queue_depth_per_action,
        "usageDBConfig": usage_db_config,
        "scenarioSearchBudgets": scenario_search_budgets,
    }
    return {key: dict(value) for key, value in sections.items() if value}


def _actions(raw: Any, known: set[str]) -> tuple[str, ...]:
    if raw is None:
        return tuple(a for a in DEFAULT_ACTIONS if a in known)
    if not isinstance(raw, str):
        raise ConfigError(f"config actions: expected a comma-separated string, got {raw!r}", ("actions",))
    names = tuple(a.strip() for a in raw.split(",") if a.strip())
    for name in names:
        if name not in known:
            raise ConfigError(
                f"config actions: unknown action {name!r}{did_you_mean(name, known)}; "
                f"known: {', '.join(sorted(known))}",
                ("actions",),
            )
    return names


def _tiers(raw: Any, known: set[str], kai: set[str]) -> tuple[tuple[tuple[PluginConfig, ...], ...], tuple[str, ...]]:
    if raw is None:
        entries: list[Any] = [{"plugins": [{"name": n, "arguments": a} for n, a in DEFAULT_PLUGINS]}]
    elif isinstance(raw, list):
        entries = raw
    else:
        raise ConfigError(f"config tiers: expected a list, got {raw!r}", ("tiers",))
    tiers, ignored = [], []
    for i, tier in enumerate(entries):
        if not isinstance(tier, Mapping) or not isinstance(tier.get("plugins"), list):
            raise ConfigError(f"config tiers[{i}].plugins: expected a list of plugins", ("tiers", i))
        plugins = []
        for j, p in enumerate(tier["plugins"]):
            where = f"config tiers[{i}].plugins[{j}]"
            if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
                raise ConfigError(f"{where}.name: missing plugin name", ("tiers", i, "plugins", j))
            name = p["name"]
            if name not in known:
                if name in kai:
                    ignored.append(name)
                    continue
                raise ConfigError(
                    f"{where}.name: unknown plugin {name!r}{did_you_mean(name, known)}; "
                    f"known: {', '.join(sorted(known))}",
                    ("tiers", i, "plugins", j, "name"),
                )
            args = p.get("arguments") or {}
            if not isinstance(args, Mapping):
                raise ConfigError(
                    f"{where}.arguments: expected a mapping, got {args!r}", ("tiers", i, "plugins", j, "arguments")
                )
            plugins.append(PluginConfig(name, {str(k): str(v) for k, v in args.items()}))
        tiers.append(tuple(plugins))
    return tuple(tiers), tuple(dict.fromkeys(ignored))


def _depths(raw: Any, known: set[str]) -> dict[str, int]:
    depths = _mapping(raw, "queueDepthPerAction")
    for action, value in depths.items():
        if action not in known:
            raise ConfigError(f"config queueDepthPerAction.{action}: unknown action", ("queueDepthPerAction", action))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"config queueDepthPerAction.{action}: expected a positive integer, got {value!r}",
                ("queueDepthPerAction", action),
            )
    return {str(k): int(v) for k, v in depths.items()}


def _mapping(raw: Any, name: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config {name}: expected a mapping, got {raw!r}", (name,))
    return dict(raw)


def parse_flags(raw: Any, base: Flags | None = None) -> Flags:
    """Flags by CLI name ("max-consolidation-preemptees") or underscore name; durations as Go strings."""
    flags = base or Flags()
    values = _mapping(raw, "flags")
    by_name = {f.name: f for f in fields(Flags)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        name = str(key).replace("-", "_")
        spec = by_name.get(name)
        if spec is None:
            known = ", ".join(sorted(f.replace("_", "-") for f in by_name))
            raise ConfigError(f"config flags.{key}: unknown flag; known: {known}", ("flags", key))
        default = getattr(Flags(), name)
        try:
            changes[name] = _flag_value(key, value, default)
        except ConfigError as err:
            raise err.at("flags", key) from None
    out = replace(flags, **changes)
    try:
        check_supported(out)
    except ConfigError as err:  # located at the key as written (dashes or underscores)
        written = {str(k).replace("-", "_"): k for k in values}
        name = str(err.path[-1]).replace("-", "_")
        raise ConfigError(str(err), ("flags", written.get(name, err.path[-1]))) from None
    return out


def _flag_value(key: str, value: Any, default: Any) -> Any:
    where = f"config flags.{key}"
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        parsed = parse_bool(str(value))
        if parsed is not None:
            return parsed
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        try:
            return duration.parse_duration(str(value))
        except duration.DurationError as err:
            raise ConfigError(f"{where}: {err}") from err
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value
