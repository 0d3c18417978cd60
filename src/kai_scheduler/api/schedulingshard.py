"""SchedulingShard (`kai.scheduler/v1`, cluster-scoped): one scheduler over one node pool (BEHAVIOR.md §1.5).

The operator renders each shard into a scheduler ConfigMap and Deployment (`framework.shard_config` renders the
configuration). `SchedulingShard.from_dict` checks every field it reads and raises an `ObjectError` naming the
field: an unparsable duration, a negative kValue, a bad placement strategy, a plugin or action name the caller
does not know (`known_plugins` / `known_actions`: the api layer knows no plugin, so the admission webhook and
the operator pass the registries' names). `args` are kept as written (`framework.shard_args` says what each
becomes). Defaults are KAI's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kai_scheduler.api import constants
from kai_scheduler.api.duration import DurationError, parse_duration
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta

KIND: Final = "SchedulingShard"
API_VERSION: Final = constants.KAI_V1_API_VERSION
BINPACK: Final = "binpack"
SPREAD: Final = "spread"
STRATEGIES: Final = (BINPACK, SPREAD)
DEFAULT_K_VALUE: Final = 1.0
DEFAULT_GO_MEM_LIMIT_RATIO: Final = 0.9
SEARCH_DURATION_MAPS: Final = ("maxActionSearchDuration", "maxGeneratorSearchDuration")
SEARCH_DURATIONS: Final = ("maxJobSearchDuration", "minJobSearchDuration")
SEARCH_ACTION_KEYS: Final = ("default", "reclaim", "preempt", "consolidation")
DEFAULT_MAX_JOB_SEARCH: Final = "4m"
# A shard's name ends up in its objects' names (`kai-scheduler-<name>-metrics`, a Service: a DNS-1035 label of at
# most 63 characters) and in a label value.
NAME: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_NAME: Final = 63 - len("kai-scheduler--metrics")


@dataclass(frozen=True, slots=True)
class PlacementStrategy:
    gpu: str = BINPACK
    cpu: str = BINPACK

    @property
    def spreads(self) -> bool:
        """Either resource spread: KAI then disables consolidation."""
        return SPREAD in (self.gpu, self.cpu)


@dataclass(frozen=True, slots=True)
class PluginOverride:
    """A `spec.plugins` entry: None leaves KAI's default; `arguments` given replace the defaults whole."""

    enabled: bool | None = None
    priority: int | None = None
    arguments: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ActionOverride:
    enabled: bool | None = None
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class MinRuntime:
    preempt: str | None = None  # Go durations, as written (checked)
    reclaim: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardSpec:
    partition_label_value: str = ""
    placement: PlacementStrategy = PlacementStrategy()
    queue_depth_per_action: Mapping[str, int] = field(default_factory=dict)
    min_runtime: MinRuntime = MinRuntime()
    k_value: float = DEFAULT_K_VALUE
    usage_db_config: Mapping[str, Any] = field(default_factory=dict)  # as written; the usagedb parser checks it
    scenario_search_budgets: Mapping[str, Any] = field(default_factory=dict)  # durations checked, as written
    plugins: Mapping[str, PluginOverride] = field(default_factory=dict)
    actions: Mapping[str, ActionOverride] = field(default_factory=dict)
    args: Mapping[str, str] = field(default_factory=dict)
    go_mem_limit_ratio: float = DEFAULT_GO_MEM_LIMIT_RATIO  # accepted for KAI manifests; no Go runtime here
    go_mem_limit: str = ""


@dataclass(slots=True, kw_only=True)
class SchedulingShard:
    meta: ObjectMeta
    generation: int
    spec: ShardSpec

    @classmethod
    def from_dict(
        cls,
        data: JSON,
        *,
        known_plugins: Collection[str] | None = None,
        known_actions: Collection[str] | None = None,
    ) -> SchedulingShard:
        """Parse and check a SchedulingShard; the `known_*` names, when given, are all a shard may name."""
        r = Reader(data, KIND)
        meta = ObjectMeta.read(r)
        if not NAME.fullmatch(meta.name) or len(meta.name) > MAX_NAME:
            raise r.error(
                "metadata.name",
                f"must be lower-case letters, digits and '-', start with a letter, at most {MAX_NAME} characters "
                "(it names the shard's Deployment and Service)",
            )
        spec = ShardSpec(
            partition_label_value=r.str("spec.partitionLabelValue"),
            placement=PlacementStrategy(gpu=_strategy(r, "gpu"), cpu=_strategy(r, "cpu")),
            queue_depth_per_action=_depths(r, known_actions),
            min_runtime=MinRuntime(
                preempt=_duration(r, "spec.minRuntime.preemptMinRuntime"),
                reclaim=_duration(r, "spec.minRuntime.reclaimMinRuntime"),
            ),
            k_value=_k_value(r),
            usage_db_config=r.map("spec.usageDBConfig"),
            scenario_search_budgets=_budgets(r),
            plugins=_plugins(r, known_plugins),
            actions=_actions(r, known_actions),
            args=_args(r),
            go_mem_limit_ratio=_ratio(r),
            go_mem_limit=_go_mem_limit(r),
        )
        return cls(meta=meta, generation=r.int("metadata.generation", 0) or 0, spec=spec)


def _strategy(r: Reader, resource: str) -> str:
    path = f"spec.placementStrategy.{resource}"
    value = r.str(path, BINPACK) or BINPACK
    if value not in STRATEGIES:
        raise r.error(path, f"unknown placement strategy {value!r}; want binpack or spread")
    return value


def _known(r: Reader, path: str, what: str, name: str, known: Collection[str] | None) -> None:
    if known is not None and name not in known:
        raise r.error(path, f"unknown {what} {name!r}; known: {', '.join(sorted(known))}")


def _depths(r: Reader, known: Collection[str] | None) -> dict[str, int]:
    out = {}
    for action, value in r.map("spec.queueDepthPerAction").items():
        path = f"spec.queueDepthPerAction.{action}"
        _known(r, path, "action", action, known)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise r.error(path, f"expected a positive integer, got {value!r}")
        out[str(action)] = value
    return out


def _duration(r: Reader, path: str) -> str | None:
    value = r.get(path)
    if value is None:
        return None
    if not isinstance(value, str):
        raise r.error(path, f'expected a duration string such as "10m", got {value!r}')
    try:
        seconds = parse_duration(value)
    except DurationError as err:
        raise r.error(path, str(err)) from None
    if seconds < 0:
        raise r.error(path, f"must not be negative, got {value!r}")
    return value


def _number(r: Reader, path: str) -> float | None:
    value = r.get(path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise r.error(path, f"expected a number, got {value!r}")
    return float(value)


def _k_value(r: Reader) -> float:
    value = _number(r, "spec.kValue")
    if value is None:
        return DEFAULT_K_VALUE
    if value < 0:
        raise r.error("spec.kValue", f"must not be negative, got {value:g}")
    return value


def _ratio(r: Reader) -> float:
    value = _number(r, "spec.goMemLimitRatio")
    if value is None:
        return DEFAULT_GO_MEM_LIMIT_RATIO
    if not 0 < value <= 1:
        raise r.error("spec.goMemLimitRatio", f"must be above 0 and at most 1, got {value:g}")
    return value


def _budgets(r: Reader) -> dict[str, Any]:
    raw = r.map("spec.scenarioSearchBudgets")
    for key, value in raw.items():
        path = f"spec.scenarioSearchBudgets.{key}"
        if key in SEARCH_DURATIONS:
            _duration(r, path)
        elif key in SEARCH_DURATION_MAPS:
            if not isinstance(value, dict):
                raise r.error(path, f"expected a map of name to duration, got {value!r}")
            for name in value:
                if key == "maxActionSearchDuration" and name not in SEARCH_ACTION_KEYS:
                    raise r.error(f"{path}.{name}", f"not an action key; known: {', '.join(SEARCH_ACTION_KEYS)}")
                _duration(r, f"{path}.{name}")
        else:
            known = ", ".join((*SEARCH_DURATION_MAPS, *SEARCH_DURATIONS))
            raise r.error(path, f"unknown field; known: {known}")
    _job_budgets(r)
    return raw


def _job_budgets(r: Reader) -> None:
    """minJobSearchDuration below a non-zero maxJobSearchDuration (4m when not given), as the scheduler needs."""
    path = "spec.scenarioSearchBudgets"
    least = _duration(r, f"{path}.minJobSearchDuration")
    most = _duration(r, f"{path}.maxJobSearchDuration") or DEFAULT_MAX_JOB_SEARCH
    if least is not None and parse_duration(most) and parse_duration(least) >= parse_duration(most):
        raise r.error(f"{path}.minJobSearchDuration", f"must be less than maxJobSearchDuration ({least} >= {most})")


def _bool(r: Reader, path: str) -> bool | None:
    value = r.get(path)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise r.error(path, f"expected true or false, got {value!r}")
    return value


def _priority(r: Reader, path: str) -> int | None:
    value = r.get(path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise r.error(path, f"expected an integer, got {value!r}")
    return value


def _entries(r: Reader, path: str, allowed: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, entry in r.map(path).items():
        where = f"{path}.{name}"
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise r.error(where, f"expected an object ({', '.join(allowed)}), got {entry!r}")
        unknown = sorted(set(entry) - set(allowed))
        if unknown:
            raise r.error(f"{where}.{unknown[0]}", f"unknown field; known: {', '.join(allowed)}")
        out[str(name)] = entry
    return out


def _plugins(r: Reader, known: Collection[str] | None) -> dict[str, PluginOverride]:
    out = {}
    for name, entry in _entries(r, "spec.plugins", ("enabled", "priority", "arguments")).items():
        where = f"spec.plugins.{name}"
        _known(r, where, "plugin", name, known)
        arguments = entry.get("arguments")
        if arguments is not None:
            if not isinstance(arguments, dict):
                raise r.error(f"{where}.arguments", f"expected a map of strings, got {arguments!r}")
            for key, value in arguments.items():
                if not isinstance(value, str | int | float) or isinstance(value, bool):
                    raise r.error(f"{where}.arguments.{key}", f"expected a string, got {value!r}")
            arguments = {str(k): str(v) for k, v in arguments.items()}
        out[name] = PluginOverride(
            enabled=_bool(r, f"{where}.enabled"), priority=_priority(r, f"{where}.priority"), arguments=arguments
        )
    return out


def _actions(r: Reader, known: Collection[str] | None) -> dict[str, ActionOverride]:
    out = {}
    for name in _entries(r, "spec.actions", ("enabled", "priority")):
        where = f"spec.actions.{name}"
        _known(r, where, "action", name, known)
        out[name] = ActionOverride(enabled=_bool(r, f"{where}.enabled"), priority=_priority(r, f"{where}.priority"))
    return out


def _args(r: Reader) -> dict[str, str]:
    """The args as written, values as strings (KAI's map of strings; the caller decides what each becomes)."""
    out = {}
    for key, value in r.map("spec.args").items():
        if not isinstance(value, str | int | float | bool):
            raise r.error(f"spec.args.{key}", f"expected a flag value, got {value!r}")
        out[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _go_mem_limit(r: Reader) -> str:
    """A Kubernetes quantity above zero (KAI's `goMemLimit`), as written; "" when unset."""
    value = r.get("spec.goMemLimit")
    if value is None:
        return ""
    amount = r.quantity("spec.goMemLimit", value)
    if amount <= 0:
        raise r.error("spec.goMemLimit", f"must be above zero, got {value!r}")
    return str(value)
