"""The operator applies the Config and the default SchedulingShard the install renders from its values (the ConfigMap
kai-config-manifest): created when missing, patched three ways when the install's rendering changes, a user's
change of a field kept until the install's rendering of that field changes; the values then reach the components'
flags through the operator's rendering."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler import install
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.install import kai_config
from kai_scheduler.operator.defaults import ANNOTATION_APPLIED, Defaults, three_way
from kai_scheduler.operator.reconciler import Reconciler
from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.memory import MemoryStore

JSON = dict[str, Any]
NS = "kai-scheduler"


def install_configmap(store: MemoryStore, *sets: str) -> None:
    """Apply the install's ConfigMap kai-config-manifest as `kai manifests --set …` prints it."""
    values = install.resolve(sets=list(sets))
    (body,) = [o for o in install.manifests(values, skip_crds=True) if o["metadata"]["name"] == kai_config.CONFIG_MAP]
    try:
        stored = store.get("configmaps", kai_config.CONFIG_MAP, NS)
    except NotFound:
        store.create(body)
        return
    store.update({**body, "metadata": {**body["metadata"], "resourceVersion": stored["metadata"]["resourceVersion"]}})


def args_of(store: MemoryStore, deployment: str) -> list[str]:
    args: list[str] = store.get("deployments", deployment, NS)["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore(ManualClock(0.0))


def test_the_install_values_reach_the_config_the_shard_and_the_components_flags(store: MemoryStore) -> None:
    install_configmap(
        store,
        "global.gpuSharing=true",
        "binder.plugins.hamicore.enabled=true",
        "global.jsonLog=true",
        "binder.resourceReservation.runtimeClassName=kata",
        "admission.gpuFractionRuntimeClassName=kata-fraction",
        "scheduler.replicas=2",
        "scheduler.placementStrategy=spread",
        "scheduler.args.v=5",
        "scheduler.args.max-consolidation-preemptees=8",
        "scheduler.actions.stalegangeviction.enabled=false",
    )
    Defaults(store, NS).ensure()
    config = store.get("configs", "kai-config")
    assert config["spec"]["admission"]["gpuSharing"] is True
    assert config["spec"]["binder"]["plugins"] == {"hamicore": {"enabled": True}}
    assert config["spec"]["namespace"] == NS
    shard = store.get("schedulingshards", "default")
    assert shard["spec"]["placementStrategy"] == {"gpu": "spread", "cpu": "spread"}
    assert shard["spec"]["args"] == {"v": "5", "max-consolidation-preemptees": "8"}
    assert ANNOTATION_APPLIED in shard["metadata"]["annotations"]

    Reconciler(store, NS, ManualClock(0.0)).reconcile()
    admission = args_of(store, "kai-admission")
    assert "--gpu-sharing-enabled=true" in admission and "--gpu-fraction-runtime-class-name=kata-fraction" in admission
    assert admission[0] == "--log-format=json"
    assert "--hami-core-enabled=true" in admission
    binder = args_of(store, "kai-binder")
    assert "--runtime-class-name=kata" in binder and "--hami-core-enabled=true" in binder
    scheduler = args_of(store, "kai-scheduler-default")
    assert scheduler[:2] == ["--log-format=json", "-vv"]  # KAI's v 5: debug
    assert scheduler[-2:] == ["--max-consolidation-preemptees=8", "--leader-elect=true"]  # replicas 2: elect
    assert store.get("deployments", "kai-scheduler-default", NS)["spec"]["replicas"] == 2
    text = store.get("configmaps", "kai-scheduler-config-default", NS)["data"]["config.yaml"]
    assert "gpuspread" in text and "stalegangeviction" not in text.splitlines()[0]


def test_an_unchanged_install_keeps_a_users_change_also_across_a_restart(store: MemoryStore) -> None:
    install_configmap(store, "global.gpuSharing=true")
    Defaults(store, NS).ensure()
    store.patch("configs", "kai-config", "", {"spec": {"binder": {"replicas": 3}, "admission": {"gpuSharing": False}}})
    Defaults(store, NS).ensure()  # a restarted operator, the same install
    spec = store.get("configs", "kai-config")["spec"]
    assert spec["binder"]["replicas"] == 3 and spec["admission"]["gpuSharing"] is False


def test_a_changed_install_sets_what_changed_removes_what_went_and_keeps_the_rest(store: MemoryStore) -> None:
    install_configmap(store, "scheduler.args.v=4", "scheduler.args.leader-elect=true")
    made = Defaults(store, NS)
    made.ensure()
    store.patch("configs", "kai-config", "", {"spec": {"binder": {"replicas": 3}}})
    store.patch("schedulingshards", "default", "", {"spec": {"kValue": 2}})
    install_configmap(store, "scheduler.args.v=4", "global.gpuSharing=true")  # a helm upgrade
    made.ensure()
    config = store.get("configs", "kai-config")["spec"]
    assert config["admission"]["gpuSharing"] is True and config["binder"]["replicas"] == 3
    shard = store.get("schedulingshards", "default")["spec"]
    assert shard["args"] == {"v": "4"} and shard["kValue"] == 2


def test_a_deleted_default_shard_comes_back_only_with_a_new_install_rendering(store: MemoryStore) -> None:
    install_configmap(store)
    made = Defaults(store, NS)
    made.ensure()
    store.delete("schedulingshards", "default")
    made.ensure()
    assert not store.list("schedulingshards")[0]
    install_configmap(store, "scheduler.placementStrategy=spread")
    made.ensure()
    assert store.get("schedulingshards", "default")["spec"]["placementStrategy"]["gpu"] == "spread"


def test_without_default_shard_only_the_config_is_applied(store: MemoryStore) -> None:
    install_configmap(store, "defaultShard.enabled=false")
    Defaults(store, NS).ensure()
    assert store.get("configs", "kai-config")
    assert not store.list("schedulingshards")[0]


def test_a_config_made_before_the_install_keeps_the_fields_the_install_does_not_render(store: MemoryStore) -> None:
    store.create(
        {
            "apiVersion": "kai.scheduler/v1",
            "kind": "Config",
            "metadata": {"name": "kai-config"},
            "spec": {"global": {"daemonsetsTolerations": [{"key": "k"}]}, "binder": {"replicas": 3}},
        }
    )
    install_configmap(store, "global.gpuSharing=true")
    Defaults(store, NS).ensure()
    spec = store.get("configs", "kai-config")["spec"]
    assert spec["global"]["daemonsetsTolerations"] == [{"key": "k"}]
    assert spec["binder"]["replicas"] == 1  # the install's, as `kubectl apply` of it would set it
    assert spec["admission"]["gpuSharing"] is True


@pytest.mark.parametrize(
    "last, desired, patch",
    [
        pytest.param({}, {"a": 1}, {"a": 1}, id="new field set"),
        pytest.param({"a": 1}, {"a": 1}, {}, id="unchanged field left alone"),
        pytest.param({"a": 1, "b": 2}, {"a": 1}, {"b": None}, id="field no longer rendered removed"),
        pytest.param({"m": {"x": "1", "y": "2"}}, {"m": {"x": "1"}}, {"m": {"y": None}}, id="nested key removed"),
        pytest.param({"m": {"x": "1"}}, {"m": {}}, {"m": {"x": None}}, id="map emptied"),
        pytest.param({"a": None}, {"a": 0}, {"a": 0}, id="a null before is a change"),
    ],
)
def test_three_way(last: JSON, desired: JSON, patch: JSON) -> None:
    assert three_way(last, desired) == patch
