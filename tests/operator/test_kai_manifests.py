"""KAI's Config and SchedulingShards as KAI users write them reconcile unchanged: KAI's documented examples, a
shard's `args`, the Config's `spec.namespace`, and time-based fair share's quick setup (`prometheus.enabled`, a
prometheus usage database without a connection string)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cli import parser
from kai_scheduler.operator.reconciler import Reconciler
from kai_scheduler.store.memory import MemoryStore
from tests.operator.builders import config, shard

JSON = dict[str, Any]
NS = "kai-scheduler"
DOCS = Path(__file__).parent / "data" / "kai_docs.yaml"
USAGE_PROMETHEUS = "http://usage-prometheus.kai-scheduler.svc.cluster.local:9090"


def kai_docs() -> list[JSON]:
    return [doc for doc in yaml.safe_load_all(DOCS.read_text()) if doc]


def conditions(store: MemoryStore, resource: str, name: str) -> dict[str, JSON]:
    status = store.get(resource, name).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def reconciled(*objects: JSON) -> tuple[MemoryStore, Reconciler]:
    store = MemoryStore(ManualClock(1000.0))
    for obj in objects:
        store.create(obj)
    operator = Reconciler(store, NS, ManualClock(1000.0), image="reg/kai:1")
    operator.reconcile()
    return store, operator


def container_args(store: MemoryStore, shard_name: str, namespace: str = NS) -> list[str]:
    deployment = store.get("deployments", f"kai-scheduler-{shard_name}", namespace)
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def usage_db(store: MemoryStore, shard_name: str) -> JSON:
    text = store.get("configmaps", f"kai-scheduler-config-{shard_name}", NS)["data"]["config.yaml"]
    return dict(yaml.safe_load(text).get("usageDBConfig") or {})


@pytest.mark.parametrize("doc", kai_docs(), ids=lambda d: str(d["doc"]))
def test_each_of_kais_documented_examples_reconciles(doc: JSON) -> None:
    obj = {k: v for k, v in doc.items() if k != "doc"}
    others = [config()] if obj["kind"] == "SchedulingShard" else [shard("default")]
    store, _ = reconciled(obj, *others)
    resource = "configs" if obj["kind"] == "Config" else "schedulingshards"
    c = conditions(store, resource, obj["metadata"]["name"])
    assert (c["Reconciled"]["status"], c["Reconciled"]["reason"]) == ("True", "Reconciled"), c["Reconciled"]
    if obj["kind"] == "SchedulingShard":
        parser().parse_args(container_args(store, obj["metadata"]["name"]))  # the command line the pod runs


def test_kais_documented_examples_reconcile_together() -> None:
    """KAI's Config renders into its `spec.namespace`; every shard beside it."""
    docs = [{k: v for k, v in d.items() if k != "doc"} for d in kai_docs()]
    store, _ = reconciled(*docs)
    for doc in docs:
        resource = "configs" if doc["kind"] == "Config" else "schedulingshards"
        assert conditions(store, resource, doc["metadata"]["name"])["Reconciled"]["status"] == "True"
    assert store.get("deployments", "kai-scheduler-gpu-shard", "kai-system")
    assert store.list("deployments", NS)[0] == []


def test_a_shards_args_reach_the_schedulers_command_line_as_kai_passes_them() -> None:
    args = {"max-consolidation-preemptees": "8", "v": "5", "log-json": "true", "namespace": "ops", "version": "1"}
    store, _ = reconciled(config(), shard("a", args=args))
    line = container_args(store, "a")
    parsed = parser().parse_args(line)
    assert (parsed.max_consolidation_preemptees, parsed.leader_elect_namespace) == (8, "ops")
    assert (parsed.verbose, parsed.log_format) == (2, "json")
    assert not any("version" in arg for arg in line)
    c = conditions(store, "schedulingshards", "a")["Reconciled"]
    assert (c["status"], c["message"]) == (
        "True",
        "SchedulingShard a: not implemented by this project, ignored: spec.args.version",
    )


def test_more_than_one_scheduler_replica_elects_a_leader_whatever_the_args_say() -> None:
    """KAI appends --leader-elect=true after a shard's args when the Config runs more than one replica."""
    store, _ = reconciled(config(scheduler={"replicas": 2}), shard("a", args={"leader-elect": "false"}))
    assert parser().parse_args(container_args(store, "a")).leader_elect is True
    store, _ = reconciled(config(), shard("a", args={"leader-elect": "false"}))
    assert parser().parse_args(container_args(store, "a")).leader_elect is False


def test_a_bad_arg_holds_the_shard_back_naming_it() -> None:
    store, _ = reconciled(config(), shard("a", args={"burst": "lots"}))
    c = conditions(store, "schedulingshards", "a")["Reconciled"]
    assert (c["status"], c["reason"]) == ("False", "InvalidSpec")
    assert c["message"] == "SchedulingShard a spec.args.burst: expected an integer, got 'lots'"
    assert store.list("deployments", NS)[0] and not [
        d for d in store.list("deployments", NS)[0] if d["metadata"]["name"] == "kai-scheduler-a"
    ]


def test_time_based_fair_share_quick_setup_uses_the_configs_prometheus() -> None:
    """KAI's quick setup: `prometheus.enabled` in the Config, `usageDBConfig: {clientType: prometheus}` in the
    shard; the operator fills in the address of the `usage-prometheus` Service, which it renders."""
    store, _ = reconciled(
        config(prometheus={"enabled": True}), shard("default", usageDBConfig={"clientType": "prometheus"})
    )
    assert usage_db(store, "default") == {"clientType": "prometheus", "connectionString": USAGE_PROMETHEUS}
    service = store.get("services", "usage-prometheus", NS)
    assert service["spec"]["selector"] == {
        "app.kubernetes.io/instance": "prometheus",
        "app.kubernetes.io/name": "prometheus",
    }
    assert service["spec"]["ports"] == [{"name": "web", "port": 9090, "protocol": "TCP"}]
    assert conditions(store, "schedulingshards", "default")["Reconciled"]["status"] == "True"
    note = conditions(store, "configs", "kai-config")["Reconciled"]["message"]
    assert note.startswith(
        "Config kai-config spec.prometheus.enabled: the operator renders the Service usage-prometheus"
    )


def test_an_external_prometheus_is_the_default_address_and_gets_no_service() -> None:
    external = {"externalPrometheusUrl": "http://tsdb.monitoring:9090"}
    store, _ = reconciled(config(prometheus=external), shard("default", usageDBConfig={"clientType": "prometheus"}))
    assert usage_db(store, "default")["connectionString"] == "http://tsdb.monitoring:9090"
    assert [s for s in store.list("services", NS)[0] if s["metadata"]["name"] == "usage-prometheus"] == []


def test_a_connection_string_of_the_shard_is_kept() -> None:
    written = {"clientType": "prometheus", "connectionString": "http://mine:9090"}
    store, _ = reconciled(config(prometheus={"enabled": True}), shard("default", usageDBConfig=written))
    assert usage_db(store, "default") == written


def test_without_a_prometheus_anywhere_the_shard_is_held_back_naming_the_field() -> None:
    store, _ = reconciled(config(), shard("default", usageDBConfig={"clientType": "prometheus"}))
    c = conditions(store, "schedulingshards", "default")["Reconciled"]
    assert (c["status"], c["reason"]) == ("False", "InvalidSpec")
    assert c["message"].startswith("SchedulingShard default spec.usageDBConfig.connectionString: ")
    assert "\n" not in c["message"]


def test_enabling_prometheus_later_renders_the_held_shard() -> None:
    store, operator = reconciled(config(), shard("default", usageDBConfig={"clientType": "prometheus"}))
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"prometheus": {"enabled": True}}
    store.update(changed)
    operator.reconcile()
    assert usage_db(store, "default")["connectionString"] == USAGE_PROMETHEUS
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"prometheus": {"enabled": False}, "namespace": NS}
    store.update(changed)
    operator.reconcile()
    assert conditions(store, "schedulingshards", "default")["Reconciled"]["reason"] == "InvalidSpec"
    assert [s for s in store.list("services", NS)[0] if s["metadata"]["name"] == "usage-prometheus"] == []


def test_the_configs_namespace_moves_the_components_and_leaves_nothing_behind() -> None:
    store, operator = reconciled(config(), shard("a"))
    before = {d["metadata"]["name"] for d in store.list("deployments", NS)[0]}
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"namespace": "kai-system"}
    store.update(changed)
    outcome = operator.reconcile()
    assert {d["metadata"]["name"] for d in store.list("deployments", "kai-system")[0]} == before
    assert store.list("deployments", NS)[0] == [] and store.list("configmaps", NS)[0] == []
    assert "deployments/kai-scheduler-a in kai-scheduler" in outcome.deleted
    assert "--leader-elect-namespace=kai-system" in container_args(store, "a", "kai-system")
    changed = store.get("configs", "kai-config")
    changed["spec"] = {}
    store.update(changed)
    operator.reconcile()
    assert store.list("deployments", "kai-system")[0] == []
    assert {d["metadata"]["name"] for d in store.list("deployments", NS)[0]} == before


def test_a_namespace_that_cannot_be_one_is_refused_naming_the_field() -> None:
    store, _ = reconciled(config(namespace="KAI_System"), shard("a"))
    c = conditions(store, "configs", "kai-config")["Reconciled"]
    assert (c["status"], c["reason"]) == ("False", "InvalidSpec")
    assert c["message"] == (
        "Config kai-config spec.namespace: expected a namespace name (lower-case letters, digits and '-'), "
        "got 'KAI_System'"
    )
