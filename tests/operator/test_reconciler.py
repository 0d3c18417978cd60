"""The operator's reconcile against the in-memory store: create, change (only the changed shard's objects are
rewritten), delete a shard (its objects go), a bad CR (status says why, the last good rendering stays)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kai_scheduler import install
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.operator import render
from kai_scheduler.operator.defaults import Defaults
from kai_scheduler.operator.reconciler import RESOURCES, Reconciler
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests.operator.builders import config, shard

JSON = dict[str, Any]
NS = "kai-scheduler"
SHARD_A = {"configmaps/kai-scheduler-config-a", "services/kai-scheduler-a-metrics", "deployments/kai-scheduler-a"}
SHARD_B = {"configmaps/kai-scheduler-config-b", "services/kai-scheduler-b-metrics", "deployments/kai-scheduler-b"}
SHARED = {
    "services/kai-admission",
    *(f"services/kai-{c}-metrics" for c in ("admission", "binder", "controllers", "podgrouper")),
    *(f"deployments/kai-{c}" for c in ("admission", "binder", "controllers", "podgrouper")),
    *(f"serviceaccounts/kai-{c}" for c in ("scheduler", "admission", "binder", "controllers", "podgrouper")),
}


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(ManualClock(1000.0))
    s.create(config())
    s.create(shard("a", partitionLabelValue="pool-a"))
    s.create(shard("b", partitionLabelValue="pool-b"))
    return s


@pytest.fixture
def operator(store: MemoryStore) -> Reconciler:
    return Reconciler(store, NS, ManualClock(1000.0), image="reg/kai:1")


def conditions(store: MemoryStore, resource: str, name: str) -> dict[str, JSON]:
    status = store.get(resource, name).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def config_yaml(store: MemoryStore, shard_name: str) -> str:
    return str(store.get("configmaps", f"kai-scheduler-config-{shard_name}", NS)["data"]["config.yaml"])


def test_first_pass_creates_every_object_and_a_second_changes_nothing(store: MemoryStore, operator: Reconciler) -> None:
    first = operator.reconcile()
    assert set(first.created) == SHARD_A | SHARD_B | SHARED and not first.updated and not first.deleted
    again = operator.reconcile()
    assert (again.created, again.updated, again.deleted) == ([], [], [])
    for name in ("a", "b"):
        c = conditions(store, "schedulingshards", name)
        assert c["Reconciled"]["status"] == "True" and c["Degraded"]["status"] == "False"
        assert c["Reconciled"]["observedGeneration"] == 1
    assert conditions(store, "configs", "kai-config")["Reconciled"]["status"] == "True"
    owner = store.get("deployments", "kai-scheduler-a", NS)["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "SchedulingShard",
        "a",
        store.get("schedulingshards", "a")["metadata"]["uid"],
    )


def test_a_pass_that_changes_objects_logs_them_at_info(operator: Reconciler, caplog: pytest.LogCaptureFixture) -> None:
    """At -v (`kai -v operator`) the pass's summary line is emitted; it once named a field `created`, which the
    LogRecord reserves, so the line raised KeyError and the step failed."""
    with caplog.at_level(logging.INFO, logger="kai_scheduler.operator.reconciler"):
        first = operator.reconcile()
    [line] = [r for r in caplog.records if r.getMessage() == "operator reconciled"]
    assert line.__dict__["created_objects"] == first.created


def test_changing_one_shard_rewrites_only_that_shards_objects(store: MemoryStore, operator: Reconciler) -> None:
    operator.reconcile()
    b_before = store.get("deployments", "kai-scheduler-b", NS)["metadata"]["resourceVersion"]
    changed = store.get("schedulingshards", "a")
    changed["spec"]["placementStrategy"] = {"gpu": "spread"}
    store.update(changed)
    outcome = operator.reconcile()
    assert set(outcome.updated) == {"configmaps/kai-scheduler-config-a", "deployments/kai-scheduler-a"}
    assert not outcome.created and not outcome.deleted
    assert "gpuspread" in config_yaml(store, "a") and "gpuspread" not in config_yaml(store, "b")
    assert store.get("deployments", "kai-scheduler-b", NS)["metadata"]["resourceVersion"] == b_before
    template = store.get("deployments", "kai-scheduler-a", NS)["spec"]["template"]["metadata"]["annotations"]
    assert template[render.ANNOTATION_CONFIG_HASH] == render.digest(config_yaml(store, "a"))
    assert conditions(store, "schedulingshards", "a")["Reconciled"]["observedGeneration"] == 2


def test_deleting_a_shard_deletes_its_objects_and_nothing_else(store: MemoryStore, operator: Reconciler) -> None:
    operator.reconcile()
    store.delete("schedulingshards", "b")
    outcome = operator.reconcile()
    assert set(outcome.deleted) == SHARD_B and not outcome.created and not outcome.updated
    names = {f"{r}/{o['metadata']['name']}" for r in RESOURCES for o in store.list(r, NS)[0]}
    assert names == SHARD_A | SHARED


def test_a_bad_shard_says_why_and_keeps_its_last_good_rendering(store: MemoryStore, operator: Reconciler) -> None:
    operator.reconcile()
    before = config_yaml(store, "a")
    bad = store.get("schedulingshards", "a")
    bad["spec"]["plugins"] = {"gpumagic": {"enabled": True}}  # got in with the webhook off
    store.update(bad)
    outcome = operator.reconcile()
    assert (outcome.created, outcome.updated, outcome.deleted) == ([], [], [])
    assert config_yaml(store, "a") == before
    c = conditions(store, "schedulingshards", "a")
    assert c["Reconciled"]["status"] == "False" and c["Degraded"]["status"] == "True"
    assert c["Degraded"]["reason"] == "InvalidSpec"
    assert c["Degraded"]["message"].startswith("SchedulingShard a spec.plugins.gpumagic: unknown plugin 'gpumagic'")
    assert c["Degraded"]["observedGeneration"] == 2
    assert conditions(store, "schedulingshards", "b")["Reconciled"]["status"] == "True"
    fixed = store.get("schedulingshards", "a")
    fixed["spec"]["plugins"] = {}
    store.update(fixed)
    operator.reconcile()
    assert conditions(store, "schedulingshards", "a")["Reconciled"]["status"] == "True"


def test_a_bad_config_says_why_and_nothing_is_rewritten(store: MemoryStore, operator: Reconciler) -> None:
    operator.reconcile()
    bad = store.get("configs", "kai-config")
    bad["spec"] = {"binder": {"replicas": "two"}}
    store.update(bad)
    fresh = Reconciler(store, NS, ManualClock(1000.0), image="reg/kai:1")  # knows no good Config: holds all
    outcome = fresh.reconcile()
    assert (outcome.created, outcome.updated, outcome.deleted) == ([], [], [])
    c = conditions(store, "configs", "kai-config")
    assert c["Degraded"]["status"] == "True"
    assert "spec.binder.replicas: expected an integer" in c["Degraded"]["message"]
    assert conditions(store, "schedulingshards", "a")["Degraded"]["reason"] == "ConfigInvalid"
    # The process that saw the good Config keeps rendering the shards from it.
    changed = store.get("schedulingshards", "b")
    changed["spec"]["kValue"] = 2
    store.update(changed)
    assert "configmaps/kai-scheduler-config-b" in operator.reconcile().updated


def test_a_config_written_for_kai_renders_everything_and_names_what_it_ignores(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A fresh operator on a cluster KAI ran: the Config's fields not implemented here hold nothing back."""
    store = MemoryStore(ManualClock(1000.0))
    store.create(
        config(binder={"replicas": 3}, nodeScaleAdjuster={"enabled": True}, **{"global": {"daemonsetsTolerations": []}})
    )
    store.create(shard("a", partitionLabelValue="pool-a"))
    fresh = Reconciler(store, NS, ManualClock(1000.0), image="reg/kai:1")
    with caplog.at_level(logging.WARNING, logger="kai_scheduler.operator.reconciler"):
        outcome = fresh.reconcile()
        fresh.reconcile()
    assert set(outcome.created) == SHARD_A | SHARED
    assert store.get("deployments", "kai-binder", NS)["spec"]["replicas"] == 3
    c = conditions(store, "configs", "kai-config")
    assert (c["Reconciled"]["status"], c["Reconciled"]["reason"]) == ("True", "Reconciled")
    assert c["Reconciled"]["message"] == (
        "Config kai-config: not implemented by this project, ignored: spec.nodeScaleAdjuster, "
        "spec.global.daemonsetsTolerations"
    )
    assert (c["Degraded"]["status"], c["Degraded"]["message"]) == ("False", "")
    assert [r.getMessage() for r in caplog.records] == [c["Reconciled"]["message"]]


def test_a_config_change_rewrites_the_shared_components_and_every_shard(
    store: MemoryStore, operator: Reconciler
) -> None:
    operator.reconcile()
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"global": {"queueLabelKey": "team"}}
    store.update(changed)
    outcome = operator.reconcile()
    assert set(outcome.updated) == {
        "deployments/kai-scheduler-a",
        "deployments/kai-scheduler-b",
        "deployments/kai-podgrouper",
        "deployments/kai-controllers",
        "deployments/kai-admission",
    }


def _install_webhooks(store: MemoryStore) -> None:
    """The install's webhook configurations, as `kai manifests` renders them (no selectors), a caBundle injected."""
    for obj in install.manifests(install.defaults(), skip_crds=True):
        if obj["kind"].endswith("WebhookConfiguration"):
            for hook in obj["webhooks"]:
                hook["clientConfig"]["caBundle"] = "Q0E="
            store.create(obj)


def _pod_webhook_selectors(store: MemoryStore) -> list[tuple[str, JSON, JSON]]:
    out = []
    for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for hook in store.get(resource, "kai-admission")["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == "Q0E="  # the rest of the configuration kept
            if hook["name"].startswith("pods."):
                out.append((hook["name"], hook.get("namespaceSelector", {}), hook.get("objectSelector", {})))
            else:
                assert "objectSelector" not in hook and "namespaceSelector" not in hook
    return out


def test_the_configs_label_selectors_scope_the_pod_webhooks_as_kais_operator_renders_them(
    store: MemoryStore, operator: Reconciler
) -> None:
    _install_webhooks(store)
    assert not {o for o in operator.reconcile().updated if "webhook" in o}  # the install's match the Config
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"global": {"podLabelSelector": {"app": "batch"}, "namespaceLabelSelector": {"team": "ml"}}}
    store.update(changed)
    outcome = operator.reconcile()
    assert {o for o in outcome.updated if "webhook" in o} == {
        "mutatingwebhookconfigurations/kai-admission",
        "validatingwebhookconfigurations/kai-admission",
    }
    assert "deployments/kai-podgrouper" in outcome.updated
    scoped = ({"matchLabels": {"team": "ml"}}, {"matchLabels": {"app": "batch"}})
    assert _pod_webhook_selectors(store) == [
        ("pods.mutate.kai.scheduler", *scoped),
        ("pods.validate.kai.scheduler", *scoped),
    ]
    assert operator.reconcile().updated == []
    changed = store.get("configs", "kai-config")
    changed["spec"] = {}
    store.update(changed)
    operator.reconcile()
    assert [s[1:] for s in _pod_webhook_selectors(store)] == [({}, {}), ({}, {})]
    assert conditions(store, "configs", "kai-config")["Reconciled"]["status"] == "True"


def test_a_refused_webhook_write_is_reported_on_the_config(store: MemoryStore, operator: Reconciler) -> None:
    _install_webhooks(store)
    changed = store.get("configs", "kai-config")
    changed["spec"] = {"global": {"podLabelSelector": {"app": "batch"}}}
    store.update(changed)
    real = store.update

    def refuse(obj: JSON) -> JSON:
        if obj["kind"].endswith("WebhookConfiguration"):
            raise StoreError("forbidden")
        return real(obj)

    store.update = refuse  # type: ignore[method-assign]
    operator.reconcile()
    c = conditions(store, "configs", "kai-config")["Reconciled"]
    assert (c["status"], c["reason"]) == ("False", "ApplyFailed")
    assert c["message"] == "mutatingwebhookconfigurations/kai-admission: forbidden"


def test_two_shards_of_one_partition_the_second_is_degraded(store: MemoryStore, operator: Reconciler) -> None:
    store.create(shard("c", partitionLabelValue="pool-a"))
    operator.reconcile()
    assert conditions(store, "schedulingshards", "c")["Degraded"]["reason"] == "DuplicatePartition"
    assert conditions(store, "schedulingshards", "a")["Reconciled"]["status"] == "True"


def test_an_object_of_the_static_install_is_taken_over(store: MemoryStore, operator: Reconciler) -> None:
    store.create(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kai-binder", "namespace": NS}, "spec": {}}
    )
    outcome = operator.reconcile()
    assert "deployments/kai-binder" in outcome.updated
    labels = store.get("deployments", "kai-binder", NS)["metadata"]["labels"]
    assert labels[render.LABEL_MANAGED_BY] == render.MANAGER


def test_the_configs_namespace_gets_the_components_accounts_and_the_installs_own_are_left_alone(
    store: MemoryStore, operator: Reconciler
) -> None:
    """As KAI's operands do, the components' ServiceAccounts are rendered beside their Deployments in the Config's
    namespace; an account already there that is not the operator's (the install's, which its RBAC bindings name) is
    neither taken over nor, when the Config moves elsewhere, deleted."""
    install_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "kai-binder", "namespace": NS},
    }
    store.create(install_account)
    first = operator.reconcile()
    assert "serviceaccounts/kai-binder" not in first.created + first.updated
    assert "serviceaccounts/kai-scheduler" in first.created
    version = store.get("serviceaccounts", "kai-binder", NS)["metadata"]["resourceVersion"]
    store.patch("configs", "kai-config", "", {"spec": {"namespace": "kai-system"}})
    moved = operator.reconcile()
    accounts = {o["metadata"]["name"] for o in store.list("serviceaccounts", "kai-system")[0]}
    assert accounts == {f"kai-{c}" for c in ("scheduler", "admission", "binder", "controllers", "podgrouper")}
    assert "serviceaccounts/kai-scheduler in kai-scheduler" in moved.deleted
    assert store.get("serviceaccounts", "kai-binder", NS)["metadata"]["resourceVersion"] == version


def test_the_defaults_are_created_once_when_missing() -> None:
    store = MemoryStore(ManualClock(0.0))
    made = Defaults(store, NS)
    made.ensure()
    assert store.get("configs", "kai-config")["spec"] == {}
    assert store.get("schedulingshards", "default")["spec"] == {}
    store.delete("schedulingshards", "default")
    made.ensure()  # done: a default deleted later stays deleted
    assert not store.list("schedulingshards")[0]
    Reconciler(store, NS, ManualClock(0.0)).reconcile()
    assert not store.list("configmaps", NS)[0]


def test_an_unchanged_shard_is_not_parsed_or_rendered_again(
    store: MemoryStore, operator: Reconciler, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kai_scheduler.operator import reconciler

    parsed: list[str] = []
    real = reconciler.parse_shard

    def counting(obj: JSON) -> Any:
        parsed.append(obj["metadata"]["name"])
        return real(obj)

    monkeypatch.setattr(reconciler, "parse_shard", counting)
    operator.reconcile()
    operator.reconcile()  # the first pass wrote both statuses: new resourceVersions, parsed again
    parsed.clear()
    operator.reconcile()
    assert parsed == []
    changed = store.get("schedulingshards", "b")
    changed["spec"]["kValue"] = 3
    store.update(changed)
    operator.reconcile()
    assert parsed == ["b"]


class _WebhookClosed(MemoryStore):
    """A cluster of the default install before the admission component serves: the Config and SchedulingShard
    webhooks fail closed (admission.crdFailurePolicy Fail), so creating either is refused until `serving`."""

    serving = False

    def create(self, obj: JSON) -> JSON:
        if obj["kind"] in ("Config", "SchedulingShard") and not self.serving:
            raise StoreError('Internal error occurred: failed calling webhook "kai-admission": no endpoints available')
        return super().create(obj)


def test_the_default_install_renders_admission_before_its_defaults_can_be_created() -> None:
    """No deadlock in the default (operator) install: the operator renders the admission component (from the chart's
    defaults) while the webhook that admission serves still refuses the default Config and shard, and creates them
    on a later pass once it admits them; the default shard's scheduler follows."""
    from kai_scheduler.operator.component import operator as operator_component
    from kai_scheduler.runtime.options import OperatorOptions

    store = _WebhookClosed(ManualClock(0.0))
    step = operator_component(store, OperatorOptions(namespace=NS), ManualClock(0.0)).step
    step()
    assert not store.list("configs")[0] and not store.list("schedulingshards")[0]
    deployments = {d["metadata"]["name"] for d in store.list("deployments", NS)[0]}
    assert {"kai-admission", "kai-binder", "kai-podgrouper", "kai-controllers"} <= deployments
    assert "kai-scheduler-default" not in deployments
    step()  # still refused: retried each pass
    store.serving = True
    step()
    assert store.get("configs", "kai-config") and store.get("schedulingshards", "default")
    assert "kai-scheduler-default" in {d["metadata"]["name"] for d in store.list("deployments", NS)[0]}
    assert conditions(store, "schedulingshards", "default")["Reconciled"]["status"] == "True"
    (owner,) = store.get("deployments", "kai-binder", NS)["metadata"]["ownerReferences"]  # rendered ownerless first
    assert (owner["kind"], owner["name"]) == ("Config", "kai-config")
