"""SchedulingShard and Config validating webhooks (`/validate-kai-scheduler-v1-schedulingshard`,
`/validate-kai-scheduler-v1-config`), BEHAVIOR.md §1.5.

Create and update. A SchedulingShard must parse (`api.schedulingshard`: placement strategies, durations, a kValue
not negative, queue depths) naming only plugins, actions and scheduler flags this scheduler knows, with plugin
`arguments` its plugins accept and a `usageDBConfig` the usage database reads. A Config must be named `kai-config`
and set the fields `api.kaiconfig.FIELDS` lists with the right types (a field of KAI's Config not implemented here is
allowed with a warning naming it). A refusal is one line naming the object and the field; the
operator applies the same checks to what gets in while the webhook is off.
"""

from __future__ import annotations

from kai_scheduler.actions.registry import ACTIONS
from kai_scheduler.admission.review import Review, Verdict, allow, written
from kai_scheduler.api import kaiconfig, schedulingshard
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.shard_config import SHARD_ARGS
from kai_scheduler.plugins import registry
from kai_scheduler.usagedb import usage_config

KNOWN_PLUGINS = frozenset(registry.BUILDERS) | registry.KAI_PLUGINS


def parse_shard(obj: dict[str, object]) -> schedulingshard.SchedulingShard:
    """The shard, checked as the webhook checks it; ObjectError names the field."""
    shard = schedulingshard.SchedulingShard.from_dict(
        obj, known_plugins=KNOWN_PLUGINS, known_actions=set(ACTIONS), known_args=SHARD_ARGS
    )
    where = shard.meta.name
    for name, override in shard.spec.plugins.items():
        if override.arguments is None or name not in registry.BUILDERS:
            continue
        try:
            registry.build(name, override.arguments)
        except ConfigError as err:
            raise ObjectError(schedulingshard.KIND, where, f"spec.plugins.{name}.arguments", str(err)) from None
    try:
        usage_config.parse(shard.spec.usage_db_config)
    except usage_config.UsageConfigError as err:
        raise ObjectError(schedulingshard.KIND, where, "spec.usageDBConfig", str(err)) from None
    return shard


def validate_shard(review: Review) -> Verdict:
    shard = written(review, parse_shard)
    return shard if isinstance(shard, Verdict) else allow()


def validate_config(review: Review) -> Verdict:
    config = written(review, kaiconfig.Config.from_dict)
    if isinstance(config, Verdict):
        return config
    return allow(warnings=[config.ignored_message()] if config.ignored else [])
