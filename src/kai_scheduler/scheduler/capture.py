"""The `snapshot` plugin's capture (KAI `plugins/snapshot`, §4, §9.2): the scheduler's view as `snapshot.zip`.

`snapshot_zip(scheduler)` copies the references of every object in the scheduler's cache under its lock (so it
sees the cache between two syncs, never half of one), then, without the lock, writes them out as Kubernetes
JSON with the configuration and the flags (`scenario.snapshot_zip` has the layout). Objects the cache could not
parse are not in it (they are not in the scheduler's view either; its log names them).
"""

from __future__ import annotations

from typing import Any

from kai_scheduler.framework import config as configs
from kai_scheduler.scenario import snapshot_zip as layout
from kai_scheduler.scheduler.scheduler import Scheduler

PLUGIN = "snapshot"

# resource → rawObjects key.
RAW_KEYS = {resource: key for key, resource in layout.RAW_OBJECTS.items()}


def enabled(config: configs.SchedulerConfig) -> bool:
    """Whether the configuration names the `snapshot` plugin (which serves `/get-snapshot`)."""
    return config.plugin(PLUGIN) is not None


def snapshot_zip(scheduler: Scheduler) -> bytes | None:
    """The zip of the scheduler's cache now, or None when no cycle has synced it yet."""
    held = scheduler.held()
    if held is None:
        return None
    raw: dict[str, list[dict[str, Any]]] = {}
    for resource, pairs in held.items():
        pairs.sort(key=lambda pair: pair[0])
        raw[RAW_KEYS[resource]] = [obj.to_dict() for _, obj in pairs]  # type: ignore[attr-defined]
    config = scheduler.config
    return layout.encode(config_json(config), layout.params_json(config.flags), raw)


def config_json(config: configs.SchedulerConfig) -> dict[str, Any]:
    """The configuration in its config.yaml shape, as `framework.config.parse` reads it back to an equal one
    (the flags are in schedulerParams). Plugins accepted and not run are written at the end of the last tier."""
    tiers: list[dict[str, Any]] = [{"plugins": [_plugin(p.name, p.arguments) for p in tier]} for tier in config.tiers]
    if config.ignored_plugins:
        if not tiers:
            tiers.append({"plugins": []})
        tiers[-1]["plugins"].extend({"name": name} for name in config.ignored_plugins)
    return {
        "actions": ", ".join(config.actions),
        "tiers": tiers,
        **configs.optional_sections(
            config.queue_depth_per_action, config.usage_db_config, config.scenario_search_budgets
        ),
    }


def _plugin(name: str, arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": dict(arguments)} if arguments else {"name": name}
