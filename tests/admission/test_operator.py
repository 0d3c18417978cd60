"""SchedulingShard and Config validating webhooks (BEHAVIOR.md §1.5): a bad CR is refused with one line naming
the object and the field."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.admission import operator as hook
from kai_scheduler.admission import webhooks
from kai_scheduler.api import kaiconfig
from kai_scheduler.api.errors import ObjectError
from tests.admission import builders
from tests.operator.builders import config, shard

JSON = dict[str, Any]


@pytest.mark.parametrize(
    "spec, want",
    [
        pytest.param(
            {"plugins": {"gpumagic": {}}},
            "SchedulingShard s spec.plugins.gpumagic: unknown plugin 'gpumagic'; known: ",
            id="unknown plugin",
        ),
        pytest.param(
            {"actions": {"shuffle": {"enabled": True}}},
            "SchedulingShard s spec.actions.shuffle: unknown action 'shuffle'; known: allocate,",
            id="unknown action",
        ),
        pytest.param(
            {"minRuntime": {"preemptMinRuntime": "ten minutes"}},
            "SchedulingShard s spec.minRuntime.preemptMinRuntime: invalid duration 'ten minutes'",
            id="unparsable duration",
        ),
        pytest.param(
            {"kValue": -1}, "SchedulingShard s spec.kValue: must not be negative, got -1", id="negative kValue"
        ),
        pytest.param(
            {"placementStrategy": {"gpu": "pack"}},
            "SchedulingShard s spec.placementStrategy.gpu: unknown placement strategy 'pack'; want binpack or spread",
            id="bad placement strategy",
        ),
        pytest.param(
            {"queueDepthPerAction": {"allocate": 0}},
            "SchedulingShard s spec.queueDepthPerAction.allocate: expected a positive integer, got 0",
            id="zero queue depth",
        ),
        pytest.param(
            {"queueDepthPerAction": {"shuffle": 3}},
            "SchedulingShard s spec.queueDepthPerAction.shuffle: unknown action 'shuffle'",
            id="queue depth of an unknown action",
        ),
        pytest.param(
            {"plugins": {"proportion": {"arguments": {"kValue": "lots"}}}},
            "SchedulingShard s spec.plugins.proportion.arguments: ",
            id="argument a plugin refuses",
        ),
        pytest.param(
            {"plugins": {"elastic": {"priority": "high"}}},
            "SchedulingShard s spec.plugins.elastic.priority: expected an integer, got 'high'",
            id="priority not an integer",
        ),
        pytest.param(
            {"plugins": {"elastic": {"weight": 3}}},
            "SchedulingShard s spec.plugins.elastic.weight: unknown field; known: enabled, priority, arguments",
            id="unknown plugin field",
        ),
        pytest.param(
            {"scenarioSearchBudgets": {"maxJobSearchDuration": "soon"}},
            "SchedulingShard s spec.scenarioSearchBudgets.maxJobSearchDuration: invalid duration 'soon'",
            id="bad search budget",
        ),
        pytest.param(
            {"scenarioSearchBudgets": {"minJobSearchDuration": "1m", "maxJobSearchDuration": "1m"}},
            "SchedulingShard s spec.scenarioSearchBudgets.minJobSearchDuration: must be less than "
            "maxJobSearchDuration (1m >= 1m)",
            id="a minimum job search budget not below the maximum",
        ),
        pytest.param(
            {"scenarioSearchBudgets": {"minJobSearchDuration": "5m"}},
            "SchedulingShard s spec.scenarioSearchBudgets.minJobSearchDuration: must be less than "
            "maxJobSearchDuration (5m >= 4m)",
            id="a minimum job search budget not below the default maximum",
        ),
        pytest.param(
            {"scenarioSearchBudgets": {"maxActionSearchDuration": {"allocate": "1m"}}},
            "SchedulingShard s spec.scenarioSearchBudgets.maxActionSearchDuration.allocate: not an action key; "
            "known: default, reclaim, preempt, consolidation",
            id="a search budget for an action that does not search",
        ),
        pytest.param(
            {"args": {"max-consolidation-preemptes": "8"}},
            "SchedulingShard s spec.args.max-consolidation-preemptes: unknown scheduler flag (did you mean "
            "max-consolidation-preemptees?)",
            id="a typo of a scheduler flag",
        ),
        pytest.param(
            {"args": {"max-consolidation-preemptees": "lots"}},
            "SchedulingShard s spec.args.max-consolidation-preemptees: expected an integer, got 'lots'",
            id="a scheduler flag's bad integer",
        ),
        pytest.param(
            {"args": {"leader-elect": "maybe"}},
            "SchedulingShard s spec.args.leader-elect: expected true or false, got 'maybe'",
            id="a scheduler flag's bad boolean",
        ),
        pytest.param(
            {"args": {"schedule-period": "often"}},
            "SchedulingShard s spec.args.schedule-period: invalid duration 'often'",
            id="a scheduler flag's bad duration",
        ),
        pytest.param(
            {"args": {"v": "loud"}},
            "SchedulingShard s spec.args.v: expected a verbosity level (an integer), got 'loud'",
            id="a verbosity that is not a level",
        ),
        pytest.param(
            {"args": {"v": ["4"]}},
            "SchedulingShard s spec.args.v: expected a flag value, got ['4']",
            id="an arg that is not a value",
        ),
        pytest.param(
            {"goMemLimit": "lots"},
            "SchedulingShard s spec.goMemLimit: ",
            id="memory limit not a quantity",
        ),
        pytest.param(
            {"goMemLimit": 0},
            "SchedulingShard s spec.goMemLimit: must be above zero, got 0",
            id="memory limit zero",
        ),
        pytest.param(
            {"usageDBConfig": {"clientType": "influx"}},
            "SchedulingShard s spec.usageDBConfig: ",
            id="usage database the scheduler cannot read",
        ),
        pytest.param(
            {"goMemLimitRatio": 1.5},
            "SchedulingShard s spec.goMemLimitRatio: must be above 0 and at most 1, got 1.5",
            id="memory ratio above 1",
        ),
    ],
)
def test_a_bad_shard_is_refused_naming_the_field(spec: JSON, want: str) -> None:
    with pytest.raises(ObjectError) as caught:
        hook.parse_shard(shard("s", **spec))
    message = str(caught.value)
    assert message.startswith(want) and "\n" not in message
    verdict = hook.validate_shard(builders.rev(shard("s", **spec)))
    assert not verdict.allowed and verdict.message == message


@pytest.mark.parametrize("name", ["Pool-A", "pool.a", "1pool", "p" * 42])
def test_a_shard_name_that_cannot_name_its_objects_is_refused(name: str) -> None:
    verdict = hook.validate_shard(builders.rev(shard(name)))
    assert not verdict.allowed and verdict.message.startswith(f"SchedulingShard {name} metadata.name: must be")


def test_a_shard_with_kai_names_is_admitted_and_defaults_apply() -> None:
    parsed = hook.parse_shard(
        shard(
            "s",
            plugins={"reflectjoborder": {"enabled": True}, "sg-multinodegang": {}},
            actions={"consolidation": {"enabled": False}},
            args={"--allow-consolidating-reclaim": False},
        )
    )
    assert parsed.spec.k_value == 1.0 and parsed.spec.go_mem_limit_ratio == 0.9
    assert parsed.spec.placement.gpu == parsed.spec.placement.cpu == "binpack"
    assert hook.shard_args_of(parsed).scheduler == ("--allow-consolidating-reclaim=false",)
    assert hook.validate_shard(builders.rev(shard("s", kValue=2.5))).allowed


@pytest.mark.parametrize(
    "obj, want",
    [
        pytest.param(
            {**config(), "metadata": {"name": "other"}},
            "Config other metadata.name: the Config is a singleton named 'kai-config'",
            id="not the singleton",
        ),
        pytest.param(
            config(colour={}), "Config kai-config spec.colour: unknown section; known: ", id="unknown section"
        ),
        pytest.param(
            config(binder={"replicas": -1}),
            "Config kai-config spec.binder.replicas: expected an integer of at least 0, got -1",
            id="negative replicas",
        ),
        pytest.param(
            config(binder={"replica": 3}),
            "Config kai-config spec.binder.replica: unknown field (did you mean replicas?); known: "
            "maxConcurrentReconciles, plugins, replicas, resourceReservation, resources, service",
            id="a typo of a field",
        ),
        pytest.param(
            config(scheduler={"schedulePeriod": "often"}),
            "Config kai-config spec.scheduler.schedulePeriod: invalid duration 'often'",
            id="unparsable period",
        ),
        pytest.param(
            config(admission={"resources": {"limits": {"cpu": "lots"}}}),
            "Config kai-config spec.admission.resources.limits.cpu: ",
            id="bad quantity",
        ),
        pytest.param(
            config(**{"global": {"image": {"pullPolicy": "Sometimes"}}}),
            "Config kai-config spec.global.image.pullPolicy: want one of Always, IfNotPresent, Never",
            id="bad pull policy",
        ),
    ],
)
def test_a_bad_config_is_refused_naming_the_field(obj: JSON, want: str) -> None:
    verdict = hook.validate_config(builders.rev(obj))
    assert not verdict.allowed and verdict.message.startswith(want), verdict.message
    assert "\n" not in verdict.message


def test_a_field_of_kais_config_not_implemented_here_is_allowed_with_a_warning_naming_it() -> None:
    verdict = hook.validate_config(builders.rev(config(binder={"speed": 3}, prometheus={"retentionPeriod": "2w"})))
    assert verdict.allowed
    assert verdict.warnings == (
        "Config kai-config: not implemented by this project, ignored: spec.binder.speed, "
        "spec.prometheus.retentionPeriod",
    )
    assert hook.validate_config(builders.rev(config(binder={"replicas": 2}))).warnings == ()


def test_a_config_enabling_prometheus_is_allowed_with_a_warning_that_none_is_deployed() -> None:
    verdict = hook.validate_config(builders.rev(config(prometheus={"enabled": True, "instanceName": "usage"})))
    assert verdict.allowed
    assert verdict.warnings == (
        "Config kai-config spec.prometheus.enabled: the operator renders the Service usage-prometheus for a "
        "Prometheus named 'usage' and does not deploy one (see docs/operator.md)",
    )
    external = config(prometheus={"enabled": False, "externalPrometheusUrl": "http://tsdb:9090"})
    assert hook.validate_config(builders.rev(external)).warnings == ()


def test_a_shards_args_kai_has_and_this_scheduler_does_not_are_allowed_with_a_warning_naming_them() -> None:
    """KAI's operator drops an arg its scheduler has no flag for; here it is dropped too, and said."""
    args = {"enable-profiler": "true", "pyroscope-address": "http://p:4040", "leader-elect": "true"}
    verdict = hook.validate_shard(builders.rev(shard("s", args={**args, "detailed-fit-errors": "true"})))
    assert verdict.allowed
    assert verdict.warnings == (
        "SchedulingShard s: not implemented by this project, ignored: spec.args.detailed-fit-errors, "
        "spec.args.enable-profiler, spec.args.pyroscope-address",
    )
    assert hook.validate_shard(builders.rev(shard("s", args={"leader-elect": "true"}))).warnings == ()


def test_a_prometheus_usage_database_without_a_connection_string_is_admitted() -> None:
    """The shard's webhook cannot see the Config, whose Prometheus the operator fills in; the rest is checked."""
    assert hook.validate_shard(builders.rev(shard("s", usageDBConfig={"clientType": "prometheus"}))).allowed
    bad = shard("s", usageDBConfig={"clientType": "prometheus", "usageParams": {"windowSize": "ever"}})
    verdict = hook.validate_shard(builders.rev(bad))
    assert not verdict.allowed
    assert verdict.message.startswith(
        "SchedulingShard s spec.usageDBConfig: config usageDBConfig.usageParams.windowSize"
    )


def test_a_config_maps_its_fields_to_install_values() -> None:
    cfg = kaiconfig.Config.from_dict(
        config(
            **{"global": {"schedulerName": "s", "image": {"tag": "2"}}},
            podGrouper={"replicas": 2, "resources": {"requests": {"memory": "1Gi"}}},
        )
    )
    assert cfg.values == {
        "global.schedulerName": "s",
        "image.tag": "2",
        "podgrouper.replicas": 2,
        "podgrouper.resources.requests.memory": "1Gi",
    }
    assert hook.validate_config(builders.rev(config())).allowed


@pytest.mark.parametrize(
    "path, obj",
    [
        pytest.param(webhooks.PATH_VALIDATE_SCHEDULINGSHARD, shard("s", kValue=-2), id="shard"),
        pytest.param(webhooks.PATH_VALIDATE_CONFIG, config(binder={"replicas": "two"}), id="config"),
    ],
)
def test_the_dispatcher_serves_both_at_their_paths(path: str, obj: JSON) -> None:
    hooks = webhooks.build(webhooks.pod.PodSettings())
    answer = webhooks.Dispatcher(hooks).handle(path, builders.body(obj))
    assert b'"allowed":false' in answer.body
