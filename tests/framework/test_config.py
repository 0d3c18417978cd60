"""Scheduler configuration in KAI's ConfigMap shape (§1.5, §4, §9.3): defaults, KAI's example, and errors that
name the field. `load_config` parses against the plugins and actions this scheduler has, as the scheduler does.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kai_scheduler.framework.config import (
    DEFAULT_ACTIONS,
    DEFAULT_PLUGINS,
    ConfigError,
    Flags,
    PluginConfig,
    parse_flags,
)
from kai_scheduler.plugins import registry
from kai_scheduler.scheduler.scheduler import load_config

KAI_CONFIGMAP = """
actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"
tiers:
- plugins:
  - name: predicates
  - name: proportion
    arguments: {kValue: "1.0", relcaimerSaturationMultiplier: "1.2"}
  - name: nodeplacement
    arguments: {gpu: binpack, cpu: binpack}
  - name: minruntime
    arguments: {defaultPreemptMinRuntime: "10m", defaultReclaimMinRuntime: "10m", reclaimResolveMethod: lca}
queueDepthPerAction: {allocate: 25}
usageDBConfig:
  clientType: prometheus
  connectionString: http://prometheus-operated.kai-scheduler.svc.cluster.local:9090
  usageParams: {windowSize: 1w, windowType: sliding, halfLifePeriod: 10m}
scenarioSearchBudgets: {maxJobSearchDuration: 4m}
"""

# KAI's fallback plugin list (§4), in its order; this scheduler runs those it implements and lists the rest.
KAI_FALLBACK_PLUGINS = (
    "predicates",
    "proportion",
    "priority",
    "elastic",
    "kubeflow",
    "ray",
    "nodeavailability",
    "gpusharingorder",
    "gpupack",
    "resourcetype",
    "subgrouporder",
    "taskorder",
    "nominatednode",
    "dynamicresources",
    "nodeplacement",
    "minruntime",
    "topology",
    "snapshot",
    "sg-nodelocalgreedy",
    "sg-multinodegang",
)
IMPLEMENTED = tuple(n for n in KAI_FALLBACK_PLUGINS if n in registry.BUILDERS)
NOT_IMPLEMENTED = tuple(n for n in KAI_FALLBACK_PLUGINS if n not in registry.BUILDERS)


def _tiers(*plugins: dict[str, Any]) -> dict[str, Any]:
    return {"tiers": [{"plugins": list(plugins)}]}


def test_defaults_are_kais_fallback_configuration() -> None:
    config = load_config(None)
    assert config.actions == DEFAULT_ACTIONS == ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
    assert tuple(name for name, _ in DEFAULT_PLUGINS) == KAI_FALLBACK_PLUGINS
    assert tuple(p.name for p in config.plugins()) == IMPLEMENTED
    assert {"predicates", "proportion", "priority", "elastic", "nodeplacement"} <= set(IMPLEMENTED)
    assert config.plugin("nodeplacement") == PluginConfig("nodeplacement", {"gpu": "binpack", "cpu": "binpack"})
    assert config.ignored_plugins == NOT_IMPLEMENTED
    assert config.queue_depth_per_action == {}
    assert load_config({}) == config


def test_default_flags_are_kais() -> None:
    flags = load_config(None).flags
    assert flags == Flags()
    assert (flags.scheduler_name, flags.schedule_period, flags.partition_label_value) == ("kai-scheduler", 1.0, "")
    assert (
        flags.max_consolidation_preemptees,
        flags.default_staleness_grace_period,
        flags.stuck_in_releasing_threshold,
    ) == (16, 60.0, 120.0)
    assert flags.full_hierarchy_fairness and flags.allow_consolidating_reclaim and flags.use_scheduling_signatures
    assert not flags.restrict_node_scheduling and not flags.update_pod_eviction_condition
    # this scheduler's own options, off: KAI's rules
    assert not (flags.pipelined_claims or flags.reclaim_protects_deserved or flags.preemptor_placed_first)
    assert not flags.queue_access_control


def test_kais_configmap_example_loads_unchanged() -> None:
    config = load_config(yaml.safe_load(KAI_CONFIGMAP))
    assert config.actions == DEFAULT_ACTIONS
    written = ["predicates", "proportion", "nodeplacement", "minruntime"]
    assert [p.name for p in config.plugins()] == [n for n in written if n in registry.BUILDERS]
    assert config.plugin("proportion") == PluginConfig(
        "proportion", {"kValue": "1.0", "relcaimerSaturationMultiplier": "1.2"}
    )
    assert config.ignored_plugins == tuple(n for n in ("minruntime",) if n not in registry.BUILDERS)
    assert config.queue_depth_per_action == {"allocate": 25}
    assert config.usage_db_config["clientType"] == "prometheus"
    assert config.scenario_search_budgets == {"maxJobSearchDuration": "4m"}


def test_every_configured_plugin_can_be_built() -> None:
    for plugin in load_config(yaml.safe_load(KAI_CONFIGMAP)).plugins():
        assert registry.build(plugin.name, plugin.arguments).name == plugin.name


def test_arguments_are_strings_as_in_a_configmap() -> None:
    config = load_config(_tiers({"name": "proportion", "arguments": {"kValue": 2}}))
    assert config.plugin("proportion") == PluginConfig("proportion", {"kValue": "2"})


def test_tiers_keep_their_order() -> None:
    config = load_config(
        {"tiers": [{"plugins": [{"name": "priority"}]}, {"plugins": [{"name": "proportion"}, {"name": "predicates"}]}]}
    )
    assert [p.name for p in config.plugins()] == ["priority", "proportion", "predicates"]
    assert len(config.tiers) == 2


ERRORS = [
    pytest.param({"actions": "allocate, shuffle"}, "config actions: unknown action 'shuffle'", id="an unknown action"),
    pytest.param(
        {"actions": "allocate, reclame"},
        "config actions: unknown action 'reclame' (did you mean reclaim?); known:",
        id="a misspelt action is given the near name",
    ),
    pytest.param(
        _tiers({"name": "proportional"}),
        "config tiers[0].plugins[0].name: unknown plugin 'proportional' (did you mean proportion?); known:",
        id="a misspelt plugin is given the near name",
    ),
    pytest.param(
        {"actions": ["allocate"]}, "config actions: expected a comma-separated string", id="actions as a list"
    ),
    pytest.param(
        _tiers({"name": "predicates"}, {"name": "magic"}),
        "config tiers[0].plugins[1].name: unknown plugin 'magic'",
        id="an unknown plugin",
    ),
    pytest.param(
        _tiers({"arguments": {}}), "config tiers[0].plugins[0].name: missing plugin name", id="a plugin without name"
    ),
    pytest.param(
        _tiers({"name": "proportion", "arguments": ["kValue"]}),
        "config tiers[0].plugins[0].arguments: expected a mapping",
        id="arguments not a mapping",
    ),
    pytest.param({"tiers": {"plugins": []}}, "config tiers: expected a list", id="tiers not a list"),
    pytest.param(
        {"tiers": [{"plugin": []}]}, "config tiers[0].plugins: expected a list of plugins", id="a tier without plugins"
    ),
    pytest.param({"flags": {"fast-mode": True}}, "config flags.fast-mode: unknown flag", id="an unknown flag"),
    pytest.param(
        {"flags": {"max-consolidation-preemptees": "many"}},
        "config flags.max-consolidation-preemptees: expected an integer, got 'many'",
        id="an integer flag given a word",
    ),
    pytest.param(
        {"flags": {"full-hierarchy-fairness": "sometimes"}},
        "config flags.full-hierarchy-fairness: expected true or false, got 'sometimes'",
        id="a boolean flag given a word",
    ),
    pytest.param(
        {"flags": {"default-staleness-grace-period": "a minute"}},
        "config flags.default-staleness-grace-period: invalid duration 'a minute'",
        id="a duration flag given words",
    ),
    pytest.param(
        {"queueDepthPerAction": {"allocate": 0}},
        "config queueDepthPerAction.allocate: expected a positive integer, got 0",
        id="a depth of 0",
    ),
    pytest.param(
        {"queueDepthPerAction": {"shuffle": 3}},
        "config queueDepthPerAction.shuffle: unknown action",
        id="a depth for an unknown action",
    ),
    pytest.param({"tier": []}, "config: unknown field 'tier'", id="an unknown top-level field"),
    pytest.param(
        {"usageDBConfig": "prometheus"}, "config usageDBConfig: expected a mapping", id="usageDBConfig not a mapping"
    ),
    pytest.param(
        _tiers({"name": "proportion", "arguments": {"kValue": "abc"}}),
        "plugin proportion argument kValue: expected a number, got 'abc'",
        id="a bad plugin argument fails at load, not in the first cycle",
    ),
]


@pytest.mark.parametrize("raw, message", ERRORS)
def test_errors_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(raw)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_plugin_error_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_tiers({"name": "magic"}))
    assert str(err.value).endswith("known: " + ", ".join(sorted(registry.BUILDERS)))


@pytest.mark.parametrize(
    "raw, want",
    [
        pytest.param({"schedule-period": "5s"}, {"schedule_period": 5.0}, id="a duration flag as a Go duration"),
        pytest.param({"schedule_period": 2}, {"schedule_period": 2.0}, id="underscore names and plain seconds"),
        pytest.param({"max-consolidation-preemptees": -1}, {"max_consolidation_preemptees": -1}, id="-1 means no cap"),
        pytest.param(
            {"allow-consolidating-reclaim": "false"}, {"allow_consolidating_reclaim": False}, id="a boolean as a string"
        ),
        pytest.param({"partition-label-value": "pool-a"}, {"partition_label_value": "pool-a"}, id="a string flag"),
    ],
)
def test_flags(raw: dict[str, Any], want: dict[str, Any]) -> None:
    flags = parse_flags(raw)
    for name, value in want.items():
        assert getattr(flags, name) == value


@pytest.mark.parametrize(
    "placement, actions",
    [
        pytest.param(
            {"gpu": "spread", "cpu": "binpack"},
            ("allocate", "reclaim", "preempt", "stalegangeviction"),
            id="spread on GPU drops consolidation",
        ),
        pytest.param(
            {"gpu": "binpack", "cpu": "spread"},
            ("allocate", "reclaim", "preempt", "stalegangeviction"),
            id="spread on CPU drops consolidation",
        ),
        pytest.param({"gpu": "binpack", "cpu": "binpack"}, DEFAULT_ACTIONS, id="binpack keeps consolidation"),
    ],
)
def test_spread_drops_consolidation(placement: dict[str, str], actions: tuple[str, ...]) -> None:
    config = load_config(_tiers({"name": "nodeplacement", "arguments": placement}))
    assert config.actions == actions


def test_actions_written_out_are_kept_even_with_spread() -> None:
    raw = {"actions": "allocate, consolidation", **_tiers({"name": "nodeplacement", "arguments": {"gpu": "spread"}})}
    assert load_config(raw).actions == ("allocate", "consolidation")


def test_kai_plugins_not_implemented_are_accepted_and_listed_once() -> None:
    first, second = sorted(registry.KAI_PLUGINS)[:2]
    config = load_config(
        {
            "tiers": [
                {"plugins": [{"name": first}, {"name": "proportion"}]},
                {"plugins": [{"name": second}, {"name": first}]},
            ]
        }
    )
    assert [p.name for p in config.plugins()] == ["proportion"]
    assert config.ignored_plugins == (first, second)


def test_kai_plugins_this_scheduler_ignores_are_none_it_implements() -> None:
    assert not registry.KAI_PLUGINS & registry.BUILDERS.keys()
    assert registry.KAI_PLUGINS  # a KAI ConfigMap naming them still loads
