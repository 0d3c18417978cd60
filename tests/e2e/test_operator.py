"""`kai operator` on the API server: two SchedulingShards rendered into their ConfigMaps and Deployments with the
right flags; a shard's placementStrategy changed from binpack to spread changes where the next pod is placed by
a scheduler process running that shard's rendering; a bad shard (the webhooks are off here) gets Degraded with
the reason and keeps its objects.

The test plays two parts a cluster would: the kubelet's ConfigMap volume (it writes the shard ConfigMap's
`config.yaml` to the scheduler's --scheduler-conf file whenever the ConfigMap changes), and the Deployment's pod
(it runs `kai` with the args of the rendered Deployment, only --listen-address, --plugin-server-port and
--scheduler-conf pointed at this machine). The operator runs as its own ServiceAccount with the RBAC of
`kai manifests --operator`.
Pods of this test name the shard's own schedulerName (a shard `args` entry), so the suite's scheduler leaves them
alone and the shard's scheduler places nothing else.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler import install
from kai_scheduler.install import kai_config
from kai_scheduler.operator import render
from kai_scheduler.store.interface import JSON, AlreadyExists, NotFound
from tests.e2e import serviceaccounts
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, real_server
from tests.loopback import free_port

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

OPERATOR_NAMESPACE = "kai-scheduler"
SCHEDULER_NAME = "kai-e2e-op"
SHARDS = {"e2e-op-a": "", "e2e-op-b": "e2e-pool-b"}


def _shard(name: str, partition: str) -> JSON:
    spec: dict[str, Any] = {"partitionLabelValue": partition, "placementStrategy": {"gpu": "binpack"}}
    if name == "e2e-op-a":
        spec["args"] = {"scheduler-name": SCHEDULER_NAME, "schedule-period": "200ms"}
    return {"apiVersion": "kai.scheduler/v1", "kind": "SchedulingShard", "metadata": {"name": name}, "spec": spec}


def _args(deployment: JSON) -> list[str]:
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _get(clean: Cluster, resource: str, name: str, namespace: str = OPERATOR_NAMESPACE) -> JSON | None:
    try:
        return clean.store.get(resource, name, namespace)
    except NotFound:
        return None


def _operator_kubeconfig(clean: Cluster, tmp_path: Path) -> str:
    admin = clean.processes.kubeconfig
    if not real_server():
        return admin
    return serviceaccounts.operator_kubeconfig(admin, OPERATOR_NAMESPACE, tmp_path / "kubeconfig-operator")


def _scheduler_kubeconfig(clean: Cluster, tmp_path: Path) -> str:
    if not real_server():
        return ""
    return serviceaccounts.kubeconfig_for(clean.processes.kubeconfig, "scheduler", tmp_path)


def _my_pod(name: str) -> JSON:
    obj = pod(name, gpus=1, group=name, labels={"app": "e2e-op"})
    obj["spec"]["schedulerName"] = SCHEDULER_NAME
    return obj


def _place(clean: Cluster, name: str) -> str:
    clean.create(podgroup(name, min_member=1, queue="default-queue"))
    clean.create(_my_pod(name))
    clean.wait(f"{name} bound by the shard's scheduler", lambda: bool(_node(clean, name)))
    return _node(clean, name)


def _node(clean: Cluster, name: str) -> str:
    return str(clean.store.get("pods", name, NAMESPACE)["spec"].get("nodeName") or "")


def _condition(clean: Cluster, shard: str, kind: str) -> JSON:
    status = clean.store.get("schedulingshards", shard).get("status") or {}
    found = [c for c in status.get("conditions") or [] if c.get("type") == kind]
    return found[0] if found else {}


def test_the_operator_renders_two_shards_and_a_strategy_change_moves_the_next_pod(
    clean: Cluster, tmp_path: Path
) -> None:
    processes = clean.processes
    made_config = False
    try:
        with contextlib.suppress(AlreadyExists):
            clean.create(
                {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"}, "spec": {}}
            )
            made_config = True
        for name, partition in SHARDS.items():
            clean.create(_shard(name, partition))
        processes.start(
            "operator",
            "operator",
            f"--listen-address=127.0.0.1:{free_port()}",
            f"--namespace={OPERATOR_NAMESPACE}",
            "--reconcile-period=500ms",
            "--create-defaults=false",
            kubeconfig=_operator_kubeconfig(clean, tmp_path),
        )

        # Both shards rendered, with their flags.
        for name, partition in SHARDS.items():
            clean.wait(
                f"shard {name} rendered",
                lambda name=name: _get(clean, "deployments", f"kai-scheduler-{name}") is not None,
            )
            args = _args(clean.store.get("deployments", f"kai-scheduler-{name}", OPERATOR_NAMESPACE))
            assert f"--partition-label-value={partition}" in args
            for flag in (
                "--scheduler-name=kai-scheduler",
                "--nodepool-label-key=kai.scheduler/node-pool",
                "--queue-label-key=kai.scheduler/queue",
                "--scheduler-conf=/etc/kai/config.yaml",
            ):
                assert flag in args, (name, flag, args)
            assert _get(clean, "configmaps", f"kai-scheduler-config-{name}") is not None
            assert _get(clean, "services", f"kai-scheduler-{name}-metrics") is not None
            clean.wait(
                f"shard {name} Reconciled",
                lambda name=name: _condition(clean, name, "Reconciled").get("status") == "True",
            )
        a_args = _args(clean.store.get("deployments", "kai-scheduler-e2e-op-a", OPERATOR_NAMESPACE))
        assert a_args[-2:] == ["--schedule-period=200ms", f"--scheduler-name={SCHEDULER_NAME}"]  # the shard's, last
        assert _get(clean, "deployments", "kai-binder") is not None  # the shared components, from the Config

        # Play the pod of shard A's Deployment: its args, with its conf file written from the ConfigMap.
        conf = tmp_path / "config.yaml"
        configmap = clean.store.get("configmaps", "kai-scheduler-config-e2e-op-a", OPERATOR_NAMESPACE)
        conf.write_text(configmap["data"]["config.yaml"])
        args = [
            f"--listen-address=127.0.0.1:{free_port()}"
            if a.startswith("--listen-address=")
            else f"--scheduler-conf={conf}"
            if a.startswith("--scheduler-conf=")
            else f"--plugin-server-port={free_port()}"
            if a.startswith("--plugin-server-port=")
            else a
            for a in _args(clean.store.get("deployments", "kai-scheduler-e2e-op-a", OPERATOR_NAMESPACE))
        ]
        processes.start("shard-a-scheduler", *args, kubeconfig=_scheduler_kubeconfig(clean, tmp_path))

        anchor = _place(clean, "op-anchor")
        assert _place(clean, "op-packed") == anchor  # binpack: beside the first

        b_before = clean.store.get("deployments", "kai-scheduler-e2e-op-b", OPERATOR_NAMESPACE)["metadata"][
            "resourceVersion"
        ]
        a_hash = clean.store.get("deployments", "kai-scheduler-e2e-op-a", OPERATOR_NAMESPACE)["spec"]["template"][
            "metadata"
        ]["annotations"][render.ANNOTATION_CONFIG_HASH]
        clean.store.patch("schedulingshards", "e2e-op-a", "", {"spec": {"placementStrategy": {"gpu": "spread"}}})

        def rerendered() -> bool:
            text = clean.store.get("configmaps", "kai-scheduler-config-e2e-op-a", OPERATOR_NAMESPACE)["data"][
                "config.yaml"
            ]
            return "gpuspread" in text

        clean.wait("shard A's ConfigMap re-rendered with gpuspread", rerendered)
        text = clean.store.get("configmaps", "kai-scheduler-config-e2e-op-a", OPERATOR_NAMESPACE)["data"]["config.yaml"]
        assert "consolidation" not in text.splitlines()[0]  # §1.5: no consolidation under spread
        conf.write_text(text)  # the kubelet's part
        clean.wait(
            "the shard's scheduler to reload",
            lambda: "scheduler configuration reloaded" in processes.log_of("shard-a-scheduler"),
        )
        assert _place(clean, "op-spread") != anchor  # spread: an emptier node

        a_now = clean.store.get("deployments", "kai-scheduler-e2e-op-a", OPERATOR_NAMESPACE)["spec"]["template"][
            "metadata"
        ]["annotations"][render.ANNOTATION_CONFIG_HASH]
        assert a_now != a_hash  # only the changed shard's Deployment rolls
        assert (
            clean.store.get("deployments", "kai-scheduler-e2e-op-b", OPERATOR_NAMESPACE)["metadata"]["resourceVersion"]
            == b_before
        )

        # A bad shard (no webhook here to refuse it): Degraded with the reason, its objects kept.
        clean.store.patch("schedulingshards", "e2e-op-b", "", {"spec": {"plugins": {"gpumagic": {}}}})
        clean.wait("shard B Degraded", lambda: _condition(clean, "e2e-op-b", "Degraded").get("status") == "True")
        assert "spec.plugins.gpumagic: unknown plugin" in _condition(clean, "e2e-op-b", "Degraded")["message"]
        assert _get(clean, "deployments", "kai-scheduler-e2e-op-b") is not None

        # A deleted shard's objects go.
        clean.store.delete("schedulingshards", "e2e-op-b")
        clean.wait(
            "shard B's objects deleted",
            lambda: (
                _get(clean, "deployments", "kai-scheduler-e2e-op-b") is None
                and _get(clean, "configmaps", "kai-scheduler-config-e2e-op-b") is None
            ),
        )
    finally:
        for name in ("operator", "shard-a-scheduler"):
            if name in processes.running:
                processes.kill(name)
        for name in SHARDS:
            with contextlib.suppress(NotFound):
                clean.store.delete("schedulingshards", name)
        if made_config:
            with contextlib.suppress(NotFound):
                clean.store.delete("configs", "kai-config")
        selector = f"{render.LABEL_MANAGED_BY}={render.MANAGER}"
        for resource in ("deployments", "services", "configmaps", "serviceaccounts"):
            for obj in clean.store.list(resource, OPERATOR_NAMESPACE, selector)[0]:
                with contextlib.suppress(NotFound):
                    clean.store.delete(resource, obj["metadata"]["name"], OPERATOR_NAMESPACE)


KAI_SHARD = "e2e-op-kai"


def _install_configmap(*sets: str) -> JSON:
    """The ConfigMap kai-config-manifest of `kai manifests --set …` (the Config and default shard of those values)."""
    values = install.resolve(sets=list(sets))
    (body,) = [o for o in install.manifests(values, skip_crds=True) if o["metadata"]["name"] == kai_config.CONFIG_MAP]
    return body


def _put(clean: Cluster, body: JSON) -> None:
    """Create or replace (`kubectl apply` of a changed install)."""
    try:
        stored = clean.store.get("configmaps", body["metadata"]["name"], OPERATOR_NAMESPACE)
    except NotFound:
        clean.store.create(body)
        return
    clean.store.update(
        {**body, "metadata": {**body["metadata"], "resourceVersion": stored["metadata"]["resourceVersion"]}}
    )


def _has(clean: Cluster, deployment: str, flag: str) -> bool:
    found = _get(clean, "deployments", deployment)
    return found is not None and flag in _args(found)


def test_the_install_values_and_kais_documented_shard_args_and_config_namespace_reach_the_components(
    clean: Cluster, tmp_path: Path
) -> None:
    """KAI's operator path on the API server: the install's values (`--set global.gpuSharing=true`, the default
    shard's `scheduler.args`) applied by the operator as the Config kai-config (spec.namespace the install's) and the
    SchedulingShard default, rendered into the admission's --gpu-sharing-enabled=true and the scheduler's flags; a
    shard written as KAI documents it (args leader-elect, v) rendered with them; a changed install (a helm upgrade)
    patched in, a user's change of another field kept."""
    processes = clean.processes
    try:
        _put(
            clean,
            _install_configmap("global.gpuSharing=true", "scheduler.args.leader-elect=true", "scheduler.args.v=4"),
        )
        clean.create(
            {
                "apiVersion": "kai.scheduler/v1",
                "kind": "SchedulingShard",
                "metadata": {"name": KAI_SHARD},
                "spec": {"partitionLabelValue": "e2e-pool-kai", "args": {"leader-elect": "true", "v": "5"}},
            }
        )
        processes.start(
            "operator",
            "operator",
            f"--listen-address=127.0.0.1:{free_port()}",
            f"--namespace={OPERATOR_NAMESPACE}",
            "--reconcile-period=500ms",
            kubeconfig=_operator_kubeconfig(clean, tmp_path),
        )
        clean.wait("the install's Config applied", lambda: _get(clean, "configs", "kai-config", "") is not None)
        config = clean.store.get("configs", "kai-config")
        assert config["spec"]["namespace"] == OPERATOR_NAMESPACE
        assert config["spec"]["admission"]["gpuSharing"] is True
        assert clean.store.get("schedulingshards", "default")["spec"]["args"] == {"leader-elect": "true", "v": "4"}

        clean.wait(
            "admission rendered with sharing on", lambda: _has(clean, "kai-admission", "--gpu-sharing-enabled=true")
        )
        clean.wait(
            "the default shard rendered", lambda: _get(clean, "deployments", "kai-scheduler-default") is not None
        )
        default_args = _args(clean.store.get("deployments", "kai-scheduler-default", OPERATOR_NAMESPACE))
        assert default_args[:2] == ["--log-format=text", "-v"]  # KAI's v 4: info
        assert default_args[-1] == "--leader-elect=true"
        clean.wait("KAI's shard rendered", lambda: _get(clean, "deployments", f"kai-scheduler-{KAI_SHARD}") is not None)
        kai_args = _args(clean.store.get("deployments", f"kai-scheduler-{KAI_SHARD}", OPERATOR_NAMESPACE))
        assert kai_args[:2] == ["--log-format=text", "-vv"]  # KAI's v 5: debug
        assert "--partition-label-value=e2e-pool-kai" in kai_args and kai_args[-1] == "--leader-elect=true"
        for kind, name in (("configs", "kai-config"), ("schedulingshards", "default"), ("schedulingshards", KAI_SHARD)):
            clean.wait(
                f"{name} Reconciled",
                lambda kind=kind, name=name: _status(clean, kind, name).get("status") == "True",
            )

        # A user's change, then a changed install: what the install changed is patched in, the user's field stays.
        clean.store.patch("configs", "kai-config", "", {"spec": {"binder": {"maxConcurrentReconciles": 20}}})
        _put(clean, _install_configmap("global.gpuSharing=false", "scheduler.args.v=4"))
        clean.wait(
            "admission re-rendered with sharing off",
            lambda: _has(clean, "kai-admission", "--gpu-sharing-enabled=false"),
        )
        clean.wait(  # the Config's change reaches the binder's Deployment in a reconcile of its own
            "the user's binder setting rendered", lambda: _has(clean, "kai-binder", "--max-concurrent-reconciles=20")
        )
        assert clean.store.get("schedulingshards", "default")["spec"]["args"] == {"v": "4"}
        clean.wait(
            "the default shard's leader election back to the install's",
            lambda: (
                _has(clean, "kai-scheduler-default", "--leader-elect=false")
                and not _has(clean, "kai-scheduler-default", "--leader-elect=true")
            ),
        )
    finally:
        if "operator" in processes.running:
            processes.kill("operator")
        for resource, name in (
            ("schedulingshards", KAI_SHARD),
            ("schedulingshards", "default"),
            ("configs", "kai-config"),
        ):
            with contextlib.suppress(NotFound):
                clean.store.delete(resource, name)
        with contextlib.suppress(NotFound):
            clean.store.delete("configmaps", kai_config.CONFIG_MAP, OPERATOR_NAMESPACE)
        selector = f"{render.LABEL_MANAGED_BY}={render.MANAGER}"
        for resource in ("deployments", "services", "configmaps", "serviceaccounts"):
            for obj in clean.store.list(resource, OPERATOR_NAMESPACE, selector)[0]:
                with contextlib.suppress(NotFound):
                    clean.store.delete(resource, obj["metadata"]["name"], OPERATOR_NAMESPACE)


def _status(clean: Cluster, resource: str, name: str) -> JSON:
    status = clean.store.get(resource, name).get("status") or {}
    found = [c for c in status.get("conditions") or [] if c.get("type") == "Reconciled"]
    return found[0] if found else {}
