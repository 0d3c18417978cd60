"""Invariants of a shard's rendered scheduler configuration over random overrides (hypothesis): plugins come by
priority then name, actions by priority; what is disabled is absent; spread never leaves consolidation on unless a
shard turns it on itself; and the scheduler always loads what the operator writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api.schedulingshard import ActionOverride, PlacementStrategy, PluginOverride, ShardSpec
from kai_scheduler.framework.shard_config import ACTION_PRIORITIES, PLUGIN_PRIORITIES, render
from kai_scheduler.scheduler.scheduler import load_config

PLUGINS = [*sorted(PLUGIN_PRIORITIES), "gpufrag"]
ACTIONS = sorted(ACTION_PRIORITIES)
strategy = st.sampled_from(["binpack", "spread"])
priority = st.none() | st.integers(-100, 3000)
enabled = st.none() | st.booleans()


@st.composite
def specs(draw: Any) -> ShardSpec:
    plugins = draw(
        st.dictionaries(
            st.sampled_from(PLUGINS), st.builds(PluginOverride, enabled=enabled, priority=priority), max_size=6
        )
    )
    actions = draw(
        st.dictionaries(
            st.sampled_from(ACTIONS), st.builds(ActionOverride, enabled=enabled, priority=priority), max_size=3
        )
    )
    return ShardSpec(
        placement=PlacementStrategy(gpu=draw(strategy), cpu=draw(strategy)),
        plugins=plugins,
        actions=actions,
        k_value=draw(st.floats(0, 10, allow_nan=False)),
    )


def _priority(spec: ShardSpec, name: str, table: dict[str, int], overrides: Any) -> int:
    given_priority = overrides[name].priority if name in overrides else None
    return given_priority if given_priority is not None else table.get(name, 0)


@settings(max_examples=200, deadline=None)
@given(specs())
def test_rendered_order_and_switches_hold(spec: ShardSpec) -> None:
    raw = render(spec)
    plugins = [p["name"] for p in raw["tiers"][0]["plugins"]]
    keys = [(-_priority(spec, n, PLUGIN_PRIORITIES, spec.plugins), n) for n in plugins]
    assert keys == sorted(keys)
    actions = [a.strip() for a in raw["actions"].split(",") if a.strip()]
    assert [-_priority(spec, a, ACTION_PRIORITIES, spec.actions) for a in actions] == sorted(
        -_priority(spec, a, ACTION_PRIORITIES, spec.actions) for a in actions
    )
    for name, override in spec.plugins.items():
        if override.enabled is False:
            assert name not in plugins
    consolidation = spec.actions.get("consolidation")
    if spec.placement.spreads and not (consolidation and consolidation.enabled):
        assert "consolidation" not in actions
    load_config(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.sampled_from(["", "spread", "10m", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from([*PLUGINS[:4], *ACTIONS[:2], "enabled", "priority", "arguments", "gpu", "default"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)
spec_keys = st.sampled_from(
    [
        "partitionLabelValue",
        "placementStrategy",
        "queueDepthPerAction",
        "minRuntime",
        "kValue",
        "usageDBConfig",
        "scenarioSearchBudgets",
        "plugins",
        "actions",
        "args",
        "goMemLimitRatio",
        "goMemLimit",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(spec_keys, json_values, max_size=5))
def test_any_spec_is_admitted_or_refused_with_one_line_never_a_crash(spec: dict[str, Any]) -> None:
    from kai_scheduler.admission.operator import parse_shard
    from kai_scheduler.api.errors import ObjectError

    obj = {"apiVersion": "kai.scheduler/v1", "kind": "SchedulingShard", "metadata": {"name": "s"}, "spec": spec}
    try:
        shard = parse_shard(obj)
    except ObjectError as err:
        assert str(err).startswith("SchedulingShard s spec.") and "\n" not in str(err)
        return
    load_config(render(shard.spec))  # what gets through renders into a configuration the scheduler loads
