"""PluginBase: what every plugin shares, checked over the whole registry."""

from __future__ import annotations

import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins import registry
from kai_scheduler.plugins.base import PluginBase

# Plugins that read arguments; every other one takes none.
WITH_ARGUMENTS = {"minruntime", "nodeplacement", "proportion"}
ARGUMENTLESS = sorted(set(registry.BUILDERS) - WITH_ARGUMENTS)


@pytest.mark.parametrize("name", sorted(registry.BUILDERS))
def test_a_built_plugin_carries_its_configmap_name(name: str) -> None:
    plugin = registry.build(name, {})
    assert plugin.name == name
    assert isinstance(plugin, PluginBase)


@pytest.mark.parametrize("name", ARGUMENTLESS)
def test_an_argumentless_plugin_rejects_any_argument_naming_itself(name: str) -> None:
    with pytest.raises(ConfigError, match=f"^plugin {name}: takes no arguments, got 'x'$"):
        registry.build(name, {"x": "1"})
