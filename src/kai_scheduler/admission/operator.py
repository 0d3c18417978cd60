"""SchedulingShard and Config validating webhooks (`/validate-kai-scheduler-v1-schedulingshard`,
`/validate-kai-scheduler-v1-config`), BEHAVIOR.md §1.5.

Create and update. A SchedulingShard must parse (`api.schedulingshard`: placement strategies, durations, a kValue
not negative, queue depths) naming only plugins and actions this scheduler knows, with plugin `arguments` its
plugins accept, `args` whose values the scheduler takes (`framework.shard_args`; an arg not implemented is allowed
with a warning naming it) and a `usageDBConfig` the usage database reads (a prometheus client without a connection
string is allowed: the operator fills in the Config's Prometheus). A Config must be named `kai-config` and set the
fields `api.kaiconfig.FIELDS` lists with the right types (a field of KAI's Config not implemented here is allowed
with a warning naming it). A refusal is one line naming the object and the field; the operator applies the same
checks to what gets in while the webhook is off.
"""

from __future__ import annotations

from kai_scheduler.actions.registry import ACTIONS
from kai_scheduler.admission.review import Review, Verdict, allow, written
from kai_scheduler.api import kaiconfig, schedulingshard
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.framework import shard_args
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins import registry
from kai_scheduler.usagedb import usage_config

KNOWN_PLUGINS = frozenset(registry.BUILDERS) | registry.KAI_PLUGINS


# Stands in for the connection string the operator fills in, so that the rest of a usageDBConfig is checked.
_FILLED_IN = "http://prometheus.invalid:9090"


def parse_shard(obj: dict[str, object]) -> schedulingshard.SchedulingShard:
    """The shard, checked as the webhook checks it; ObjectError names the field."""
    shard = schedulingshard.SchedulingShard.from_dict(obj, known_plugins=KNOWN_PLUGINS, known_actions=set(ACTIONS))
    where = shard.meta.name
    shard_args_of(shard)
    for name, override in shard.spec.plugins.items():
        if override.arguments is None or name not in registry.BUILDERS:
            continue
        try:
            registry.build(name, override.arguments)
        except ConfigError as err:
            raise ObjectError(schedulingshard.KIND, where, f"spec.plugins.{name}.arguments", str(err)) from None
    try:
        usage_config.parse(usage_config.with_connection(shard.spec.usage_db_config, _FILLED_IN))
    except usage_config.UsageConfigError as err:
        raise ObjectError(schedulingshard.KIND, where, "spec.usageDBConfig", str(err)) from None
    return shard


def shard_args_of(shard: schedulingshard.SchedulingShard) -> shard_args.ShardArgs:
    """The flags of the shard's `args`; ObjectError names a refused one."""
    try:
        return shard_args.resolve(shard.spec.args)
    except shard_args.ArgError as err:
        raise ObjectError(schedulingshard.KIND, shard.meta.name, f"spec.args.{err.name}", str(err)) from None


def ignored_message(shard: schedulingshard.SchedulingShard) -> str:
    """One line naming the shard's args this project does not implement ("" when there are none)."""
    ignored = shard_args_of(shard).ignored
    if not ignored:
        return ""
    names = ", ".join(f"spec.args.{name}" for name in ignored)
    return f"{schedulingshard.KIND} {shard.meta.name}: not implemented by this project, ignored: {names}"


def validate_shard(review: Review) -> Verdict:
    shard = written(review, parse_shard)
    if isinstance(shard, Verdict):
        return shard
    message = ignored_message(shard)
    return allow(warnings=[message] if message else [])


def validate_config(review: Review) -> Verdict:
    config = written(review, kaiconfig.Config.from_dict)
    if isinstance(config, Verdict):
        return config
    return allow(warnings=config.warnings())
