"""A shard's scheduler configuration and objects as the operator renders them (BEHAVIOR.md §1.5), one test per
rule, and one golden config.yaml."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from kai_scheduler.admission.operator import parse_shard
from kai_scheduler.api import kaiconfig
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.framework.shard_config import render as render_config
from kai_scheduler.operator import render
from kai_scheduler.scheduler.scheduler import load_config
from tests.operator.builders import config, shard

JSON = dict[str, Any]


def rendered(**spec: Any) -> JSON:
    return render_config(parse_shard(shard(**spec)).spec)


def plugins(raw: JSON) -> list[str]:
    return [p["name"] for p in raw["tiers"][0]["plugins"]]


def arguments(raw: JSON, name: str) -> dict[str, str] | None:
    found = [p for p in raw["tiers"][0]["plugins"] if p["name"] == name]
    return found[0].get("arguments", {}) if found else None


GOLDEN = """\
actions: allocate, reclaim, preempt, stalegangeviction
tiers:
  - plugins:
      - name: predicates
      - name: proportion
        arguments:
          kValue: '2.0'
      - name: priority
      - name: nodeavailability
      - name: resourcetype
      - name: podaffinity
      - name: elastic
      - name: kubeflow
      - name: ray
      - name: subgrouporder
      - name: taskorder
      - name: nominatednode
      - name: dynamicresources
      - name: minruntime
        arguments:
          defaultPreemptMinRuntime: 10m
          defaultReclaimMinRuntime: 5m
      - name: topology
      - name: snapshot
      - name: sg-nodelocalgreedy
      - name: sg-multinodegang
      - name: gpupack
      - name: nodeplacement
        arguments:
          gpu: binpack
          cpu: binpack
      - name: gpusharingorder
      - name: reflectjoborder
queueDepthPerAction:
  allocate: 25
  reclaim: 8
"""


def test_the_behaviour_example_shard_renders_the_golden_config_yaml() -> None:
    example = parse_shard(
        shard(
            partitionLabelValue="",
            placementStrategy={"gpu": "binpack", "cpu": "binpack"},
            queueDepthPerAction={"allocate": 25, "reclaim": 8},
            minRuntime={"preemptMinRuntime": "10m", "reclaimMinRuntime": "5m"},
            kValue=1.0,
            plugins={"proportion": {"arguments": {"kValue": "2.0"}}, "reflectjoborder": {"enabled": True}},
            actions={"consolidation": {"enabled": False}},
        )
    )
    text = render.config_text(example)
    assert text == GOLDEN
    load_config(yaml.safe_load(text))  # the scheduler loads what the operator writes


def test_plugins_by_priority_then_name_and_actions_as_a_comma_string_in_priority_order() -> None:
    raw = rendered()
    assert raw["actions"] == "allocate, consolidation, reclaim, preempt, stalegangeviction"
    names = plugins(raw)
    assert names[:3] == ["predicates", "proportion", "priority"]
    assert names[-3:] == ["gpupack", "nodeplacement", "gpusharingorder"]
    assert "gpuspread" not in names and "numa" not in names and "reflectjoborder" not in names


@pytest.mark.parametrize(
    "strategy, on, off",
    [
        pytest.param({"gpu": "binpack"}, {"gpupack", "gpusharingorder"}, {"gpuspread"}, id="binpack packs"),
        pytest.param({"gpu": "spread"}, {"gpuspread"}, {"gpupack", "gpusharingorder"}, id="spread spreads"),
    ],
)
def test_gpu_placement_strategy_switches_gpupack_gpuspread_and_gpusharingorder(
    strategy: JSON, on: set[str], off: set[str]
) -> None:
    names = set(plugins(rendered(placementStrategy=strategy)))
    assert on <= names and not off & names


@pytest.mark.parametrize(
    "strategy, consolidation",
    [
        pytest.param({}, True, id="binpack keeps consolidation"),
        pytest.param({"gpu": "spread"}, False, id="gpu spread disables it"),
        pytest.param({"cpu": "spread"}, False, id="cpu spread disables it"),
    ],
)
def test_consolidation_is_disabled_under_spread(strategy: JSON, consolidation: bool) -> None:
    raw = rendered(placementStrategy=strategy)
    assert ("consolidation" in raw["actions"]) == consolidation


def test_nodeplacement_gets_the_strategy_as_arguments() -> None:
    raw = rendered(placementStrategy={"gpu": "spread", "cpu": "binpack"})
    assert arguments(raw, "nodeplacement") == {"gpu": "spread", "cpu": "binpack"}


def test_min_runtime_becomes_minruntime_arguments() -> None:
    raw = rendered(minRuntime={"reclaimMinRuntime": "90s"})
    assert arguments(raw, "minruntime") == {"defaultReclaimMinRuntime": "90s"}


def test_k_value_becomes_the_proportion_argument() -> None:
    assert arguments(rendered(kValue=0.5), "proportion") == {"kValue": "0.5"}
    assert arguments(rendered(), "proportion") == {"kValue": "1.0"}


def test_user_arguments_replace_the_defaults_whole() -> None:
    raw = rendered(kValue=3, plugins={"proportion": {"arguments": {"relcaimerSaturationMultiplier": "1.2"}}})
    assert arguments(raw, "proportion") == {"relcaimerSaturationMultiplier": "1.2"}


def test_plugin_enabled_and_priority_overrides() -> None:
    raw = rendered(plugins={"topology": {"priority": 5000}, "elastic": {"enabled": False}, "numa": {"enabled": True}})
    names = plugins(raw)
    assert names[0] == "topology" and "elastic" not in names and "numa" in names


def test_a_name_outside_the_defaults_is_enabled_at_priority_zero() -> None:
    names = plugins(rendered(plugins={"gpufrag": {}}))
    assert names[-1] == "gpufrag"  # after gpusharingorder (100)


def test_action_overrides_reorder_and_disable() -> None:
    raw = rendered(actions={"preempt": {"priority": 900}, "stalegangeviction": {"enabled": False}})
    assert raw["actions"] == "preempt, allocate, consolidation, reclaim"


def test_usage_db_config_and_search_budgets_are_copied() -> None:
    usage = {"clientType": "prometheus", "connectionString": "http://prometheus:9090"}
    budgets = {"maxJobSearchDuration": "1m", "maxActionSearchDuration": {"default": "2m"}}
    raw = rendered(usageDBConfig=usage, scenarioSearchBudgets=budgets)
    assert raw["usageDBConfig"] == usage and raw["scenarioSearchBudgets"] == budgets
    load_config(raw)


def _container(objects: dict[render.Key, JSON], name: str) -> JSON:
    container: JSON = objects[("deployments", name)]["spec"]["template"]["spec"]["containers"][0]
    return container


def test_a_shard_deployment_carries_the_flags_of_the_config_and_the_shard() -> None:
    cfg = kaiconfig.Config.from_dict(
        config(**{"global": {"schedulerName": "gpu-sched", "queueLabelKey": "team", "nodePoolLabelKey": "pool"}})
    )
    values = render.with_config(render.base_values("kai-scheduler", "reg/kai:1"), cfg)
    one = parse_shard(shard("pool-a", partitionLabelValue="a", args={"max-consolidation-preemptees": 4}))
    objects = render.shard_objects(values, one, None)
    args = _container(objects, "kai-scheduler-pool-a")["args"]
    for flag in (
        "--scheduler-name=gpu-sched",
        "--nodepool-label-key=pool",
        "--partition-label-value=a",
        "--queue-label-key=team",
        "--scheduler-conf=/etc/kai/config.yaml",
    ):
        assert flag in args
    assert args[-1] == "--max-consolidation-preemptees=4"  # the shard's own, after the install's: it wins
    assert _container(objects, "kai-scheduler-pool-a")["image"] == "reg/kai:1"
    deployment = objects[("deployments", "kai-scheduler-pool-a")]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": "kai-scheduler-config-pool-a"}} in volumes
    config_map = objects[("configmaps", "kai-scheduler-config-pool-a")]
    template = deployment["spec"]["template"]["metadata"]
    assert template["annotations"][render.ANNOTATION_CONFIG_HASH] == render.digest(config_map["data"]["config.yaml"])
    assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "kai-scheduler-pool-a"}
    assert deployment["metadata"]["labels"][render.LABEL_SHARD] == "pool-a"
    assert ("services", "kai-scheduler-pool-a-metrics") in objects


def test_the_config_sets_the_shared_components() -> None:
    cfg = kaiconfig.Config.from_dict(config(binder={"replicas": 2, "resources": {"limits": {"cpu": "2"}}}))
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    binder = objects[("deployments", "kai-binder")]
    assert binder["spec"]["replicas"] == 2
    assert binder["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "2"
    assert "--leader-elect=true" in binder["spec"]["template"]["spec"]["containers"][0]["args"]
    assert {k[1] for k in objects if k[0] == "deployments"} == {
        "kai-binder",
        "kai-podgrouper",
        "kai-controllers",
        "kai-admission",
    }


@pytest.mark.parametrize(
    ("admission", "flag"),
    [
        pytest.param({}, "--gpu-sharing-enabled=false", id="off by default, as KAI's"),
        pytest.param({"gpuSharing": True}, "--gpu-sharing-enabled=true", id="KAI's field"),
        pytest.param({"gpuSharingEnabled": True}, "--gpu-sharing-enabled=true", id="older name"),
    ],
)
def test_the_config_switches_gpu_sharing_in_admission(admission: JSON, flag: str) -> None:
    cfg = kaiconfig.Config.from_dict(config(admission=admission))
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    assert flag in objects[("deployments", "kai-admission")]["spec"]["template"]["spec"]["containers"][0]["args"]


def _args(cfg: kaiconfig.Config, deployment: str) -> list[str]:
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    args: list[str] = objects[("deployments", deployment)]["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


@pytest.mark.parametrize(("plugins", "flag"), [({}, "false"), ({"hamicore": {"enabled": True}}, "true")])
def test_the_configs_binder_plugin_hamicore_switches_the_binder_and_the_webhook(plugins: JSON, flag: str) -> None:
    """As KAI's operator: `binder.plugins.hamicore.enabled` is the binder's plugin and the admission's flag."""
    cfg = kaiconfig.Config.from_dict(config(binder={"plugins": plugins}))
    for deployment in ("kai-binder", "kai-admission"):
        assert f"--hami-core-enabled={flag}" in _args(cfg, deployment), deployment


def test_the_configs_label_selectors_scope_the_pod_grouper_as_kais_operator_does() -> None:
    selectors = {"podLabelSelector": {"app": "batch"}, "namespaceLabelSelector": {"team": "ml", "env": "prod"}}
    cfg = kaiconfig.Config.from_dict(config(**{"global": selectors}))
    assert cfg.ignored == []
    args = _args(cfg, "kai-podgrouper")
    assert "--pod-label-selector=app=batch" in args
    assert "--namespace-label-selector=env=prod,team=ml" in args  # keys sorted: the same rendering every pass
    assert "--pod-label-selector=" in _args(kaiconfig.Config.from_dict(config()), "kai-podgrouper")


def test_the_binders_other_plugin_settings_are_ignored_and_named() -> None:
    plugins = {"hamicore": {"enabled": True, "priority": 50}, "gpusharing": {"enabled": True, "priority": 100}}
    cfg = kaiconfig.Config.from_dict(config(binder={"plugins": plugins}))
    assert cfg.values == {"binder.plugins.hamicore.enabled": True}
    assert cfg.ignored == ["spec.binder.plugins.hamicore.priority", "spec.binder.plugins.gpusharing"]


def _controllers_container(cfg: kaiconfig.Config) -> tuple[int, dict[str, Any]]:
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    deployment = objects[("deployments", "kai-controllers")]
    return deployment["spec"]["replicas"], deployment["spec"]["template"]["spec"]["containers"][0]["resources"]


def test_kais_queue_and_podgroup_controller_sections_set_the_controllers_component() -> None:
    """A KAI user's Config names `queueController` and `podGroupController` (BEHAVIOR §1.5); here both are the
    `controllers` component: the larger replica count, the resources added up."""
    cfg = kaiconfig.Config.from_dict(
        config(
            queueController={"replicas": 1, "service": {"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}},
            podGroupController={"replicas": 2, "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
        )
    )
    replicas, resources = _controllers_container(cfg)
    assert replicas == 2
    assert resources["requests"] == {"cpu": "350m", "memory": "1536Mi"}


def test_resources_under_a_components_service_as_kai_writes_them() -> None:
    cfg = kaiconfig.Config.from_dict(config(binder={"service": {"resources": {"limits": {"cpu": "2"}}}}))
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    container = objects[("deployments", "kai-binder")]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "2"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"queueController": {"replicas": -1}}, "spec.queueController.replicas: expected an integer of at least 0"),
        ({"binder": {"service": "big"}}, "spec.binder.service: expected an object, got 'big'"),
        (
            {"binder": {"maxConcurentReconciles": 4}},
            "spec.binder.maxConcurentReconciles: unknown field (did you mean maxConcurrentReconciles?); known: ",
        ),
        (
            {"binder": {"service": {"resource": {}}}},
            "spec.binder.service.resource: unknown field (did you mean resources?)",
        ),
        ({"schduler": {"replicas": 1}}, "spec.schduler: unknown section; known: admission, binder, global, "),
        (
            {"binder": {"plugins": {"hamicore": {"enabled": "yes"}}}},
            "spec.binder.plugins.hamicore.enabled: expected true or false, got 'yes'",
        ),
        (
            {"global": {"podLabelSelector": {"app": "a b"}}},
            "spec.global.podLabelSelector: label app: 'a b' is not a label value",
        ),
        (
            {"global": {"namespaceLabelSelector": {"team": 3}}},
            "spec.global.namespaceLabelSelector: expected a map of label keys to string values, got {'team': 3}",
        ),
        ({"global": {"podLabelSelector": "app=batch"}}, "spec.global.podLabelSelector: expected a map of label keys"),
        (
            {"binder": {"plugins": {"hamicor": {"enabled": True}}}},
            "spec.binder.plugins.hamicor: unknown field (did you mean hamicore?)",
        ),
    ],
)
def test_a_wrong_type_a_typo_of_a_field_or_a_section_kai_does_not_have_is_refused_by_name(
    section: dict[str, Any], message: str
) -> None:
    with pytest.raises(ObjectError, match=re.escape(message)):
        kaiconfig.Config.from_dict(config(**section))


def test_what_kais_config_has_and_is_not_implemented_here_is_ignored_and_named() -> None:
    """A Config written for KAI renders the components: its other fields are accepted, named, not rendered."""
    cfg = kaiconfig.Config.from_dict(
        config(
            prometheus={"enabled": True, "storageSize": "30Gi"},
            binder={"replicas": 3, "service": {"image": {"tag": "x"}}, "resourceReservation": {"appLabel": "r"}},
            podGroupController={"sidecar": 1},
            **{"global": {"daemonsetsTolerations": [{"key": "k"}], "schedulerName": "kai-scheduler"}},
        )
    )
    assert cfg.ignored == [
        "spec.prometheus.storageSize",
        "spec.binder.service.image",
        "spec.binder.resourceReservation.appLabel",
        "spec.podGroupController.sidecar",
        "spec.global.daemonsetsTolerations",
    ]
    assert cfg.values["binder.replicas"] == 3
    assert cfg.ignored_message() == (
        "Config kai-config: not implemented by this project, ignored: spec.prometheus.storageSize, "
        "spec.binder.service.image, "
        "spec.binder.resourceReservation.appLabel, spec.podGroupController.sidecar, spec.global.daemonsetsTolerations"
    )
    assert kaiconfig.Config.from_dict(config(binder={"replicas": 1})).ignored_message() == ""


@pytest.mark.parametrize("section", ["podGroupController", "controllers"])
def test_max_concurrent_reconciles_of_kais_pod_group_controller_sets_the_controllers_status_writers(
    section: str,
) -> None:
    """KAI's operator passes `podGroupController.maxConcurrentReconciles` as the controller's
    `--max-concurrent-reconciles`; here the controllers component takes it (both status passes share the writers)."""
    cfg = kaiconfig.Config.from_dict(config(**{section: {"maxConcurrentReconciles": 3}}))
    assert cfg.ignored == []
    assert "--max-concurrent-reconciles=3" in _args(cfg, "kai-controllers")
    assert "--max-concurrent-reconciles=10" in _args(kaiconfig.Config.from_dict(config()), "kai-controllers")


def test_max_concurrent_reconciles_of_kais_pod_grouper_sets_its_writers() -> None:
    cfg = kaiconfig.Config.from_dict(config(podGrouper={"maxConcurrentReconciles": 4}))
    assert cfg.ignored == []
    assert "--max-concurrent-reconciles=4" in _args(cfg, "kai-podgrouper")
    assert "--max-concurrent-reconciles=20" in _args(kaiconfig.Config.from_dict(config()), "kai-podgrouper")


def test_kais_pod_grouper_args_set_its_flags() -> None:
    args = {
        "gangScheduleKnative": False,
        "defaultPrioritiesConfigMapName": "kind-defaults",
        "defaultPrioritiesConfigMapNamespace": "kai-scheduler",
    }
    cfg = kaiconfig.Config.from_dict(config(podGrouper={"args": args}))
    assert cfg.ignored == []
    got = _args(cfg, "kai-podgrouper")
    assert "--knative-gang-schedule=false" in got
    assert "--default-priorities-configmap-name=kind-defaults" in got
    assert "--default-priorities-configmap-namespace=kai-scheduler" in got
    defaults = _args(kaiconfig.Config.from_dict(config()), "kai-podgrouper")
    assert "--knative-gang-schedule=true" in defaults
    assert "--default-priorities-configmap-name=" in defaults


def test_kais_reservation_pod_settings_become_the_binders_json_flags() -> None:
    reservation = {
        "serviceAccountName": "rr-sa",
        "podResources": {"requests": {"cpu": "10m"}},
        "reservationPodSecurityContext": {"runAsNonRoot": True},
    }
    cfg = kaiconfig.Config.from_dict(config(binder={"resourceReservation": reservation}))
    assert cfg.ignored == []
    got = _args(cfg, "kai-binder")
    assert "--resource-reservation-service-account=rr-sa" in got
    assert '--resource-reservation-pod-resources={"requests":{"cpu":"10m"}}' in got
    assert '--resource-reservation-pod-security-context={"runAsNonRoot":true}' in got
    assert "--resource-reservation-container-security-context={}" in got


def test_a_bad_reservation_pod_quantity_in_the_config_names_its_field() -> None:
    bad = config(binder={"resourceReservation": {"podResources": {"limits": {"memory": "lots"}}}})
    with pytest.raises(UserError) as err:
        kaiconfig.Config.from_dict(bad)
    assert "binder.resourceReservation.podResources.limits.memory" in str(err.value)
    assert "invalid quantity 'lots'" in str(err.value)


def test_kais_global_placement_reaches_the_components_the_operator_renders() -> None:
    placement = {
        "nodeSelector": {"node-role.kubernetes.io/system": "true"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {}},
        "priorityClassName": "system-cluster-critical",
        "imagesPullSecret": "regcred",
        "additionalImagePullSecrets": ["mirror"],
    }
    cfg = kaiconfig.Config.from_dict(config(**{"global": placement}))
    assert cfg.ignored == []
    objects = render.shared_objects(render.with_config(render.base_values("ns", None), cfg), None)
    spec = objects[("deployments", "kai-binder")]["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == placement["nodeSelector"]
    assert spec["tolerations"] == placement["tolerations"]
    assert spec["affinity"] == placement["affinity"]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]


def test_a_toleration_that_is_not_an_object_names_its_field() -> None:
    with pytest.raises(ObjectError, match=r"spec\.global\.tolerations: expected a list of objects"):
        kaiconfig.Config.from_dict(config(**{"global": {"tolerations": ["NoSchedule"]}}))
