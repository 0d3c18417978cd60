"""The README's install on a real kube-apiserver: `kai manifests | kubectl apply --server-side -f -` succeeds the
first time, and the components, each run as its own ServiceAccount with the RBAC of that stream, make the rest
(default queues) and schedule a pod without one request refused.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.e2e import serviceaccounts
from tests.kube.conftest import Components
from tests.loopback import free_port

CLASSES = {"train", "build-preemptible", "build", "inference"}
QUEUES = {"default-parent-queue", "default-queue"}
NAMESPACE = "kai-install-check"


def _manifests(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "kai_scheduler.cli", "manifests", *args], check=True, capture_output=True, text=True
    ).stdout


def _names(store: KubeStore, resource: str) -> set[str]:
    return {o["metadata"]["name"] for o in store.list(resource)[0]}


def test_the_manifests_apply_in_one_pass_and_the_components_make_the_rest(
    kube: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    stream = _manifests()
    first = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "-f", "-", stdin=stream)
    assert first.returncode == 0, f"the first apply failed:\n{first.stderr}"
    again = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "-f", "-", stdin=stream)
    assert again.returncode == 0, f"applying again failed:\n{again.stderr}"

    store = KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0))
    try:
        assert _names(store, "priorityclasses") >= CLASSES  # in the stream: there at once
        assert not QUEUES & _names(store, "queues")  # the controllers' to make

        token = {c: serviceaccounts.kubeconfig_for(kube.kubeconfig, c, tmp_path) for c in serviceaccounts.COMPONENTS}
        components.start("controllers", token["controllers"], "controllers")
        components.wait("the default queues", lambda: _names(store, "queues") >= QUEUES, timeout=30)
        assert store.get("queues", "default-queue")["spec"]["parentQueue"] == "default-parent-queue"

        for name in ("scheduler", "binder", "podgrouper"):
            components.start(name, token[name], name)
        components.start(
            "fake-nodes",
            kube.kubeconfig,
            "fake-nodes",
            "--count",
            "2",
            "--gpus",
            "4",
            "--prefix",
            "kai-install-node",
            "--delete-on-exit",
            listen=False,
        )
        components.start(
            "admission",
            token["admission"],
            "admission",
            "--namespace",
            "kai-scheduler",
            f"--webhook-port={free_port()}",
        )
        realkube.kubectl(kube.kubeconfig, "create", "namespace", NAMESPACE)
        realkube.kubectl(kube.kubeconfig, "create", "serviceaccount", "default", "-n", NAMESPACE)
        store.create(_pod("smoke", gpus=2))

        def running() -> bool:
            pod = store.get("pods", "smoke", NAMESPACE)
            return bool(pod["spec"].get("nodeName")) and pod.get("status", {}).get("phase") == "Running"

        components.wait("the pod to be grouped, scheduled, bound and running", running, timeout=90)
        components.wait(
            "the controllers to sum the PodGroup into default-queue", lambda: _queue_gpus(store) == "2", timeout=30
        )
        components.wait("the admission component to inject its CA", lambda: _ca_injected(store), timeout=30)
    finally:
        store.close()
    for name in components.running:
        assert components.alive(name), f"{name} exited\n{components.tails()}"
        refused = [line for line in components.log(name).splitlines() if "forbidden" in line.lower()]
        assert not refused, f"{name} was refused by RBAC:\n" + "\n".join(refused)


def _pod(name: str, gpus: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kai.scheduler/queue": "default-queue"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
            ],
        },
    }


def _queue_gpus(store: KubeStore) -> str:
    status = store.get("queues", "default-queue").get("status") or {}
    return str((status.get("allocated") or {}).get("nvidia.com/gpu", ""))


def _ca_injected(store: KubeStore) -> bool:
    for resource in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        hooks = store.get(resource, "kai-admission").get("webhooks") or []
        if not hooks or not all(h.get("clientConfig", {}).get("caBundle") for h in hooks):
            return False
    return True


def test_the_helm_chart_is_accepted_by_the_api_server(kube: realkube.Cluster, tmp_path: Path) -> None:
    """The chart as Helm renders it: `crds/` applied first (as Helm does), then every template accepted by a
    server-side dry run (admission, validation, schemas of the CRDs just applied)."""
    from tests.install.test_chart import CHART, helm_render_text

    crds = "".join(
        p.read_text() if p.read_text().startswith("---") else "---\n" + p.read_text()
        for p in sorted((CHART / "crds").glob("*.yaml"))
    )
    applied = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "-f", "-", stdin=crds)
    assert applied.returncode == 0, applied.stderr
    realkube.kubectl(
        kube.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "-f", "-", stdin=crds, check=True
    )
    for namespace, overrides in (("kai-scheduler", {}), ("gpu-sched", {"namespace.name": "gpu-sched"})):
        for ns in (namespace, "kai-resource-reservation"):  # a dry run creates no namespace for the rest
            realkube.kubectl(kube.kubeconfig, "create", "namespace", ns)
        rendered = helm_render_text(overrides)
        if rendered is None:
            pytest.fail("cannot render the chart: no helm binary, and the dev dependency helm-python-sdk is missing")
        checked = realkube.kubectl(
            kube.kubeconfig,
            "apply",
            "--server-side",
            "--force-conflicts",
            "--dry-run=server",
            "-f",
            "-",
            stdin=rendered,
        )
        assert checked.returncode == 0, f"{overrides}: {checked.stderr}"
        assert "kind: Queue" not in rendered


def test_the_operator_install_applies_and_the_operator_renders_the_default_shard(
    kube: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    """`kai manifests --operator` applies in one pass; the operator, as its own ServiceAccount, creates the default
    Config and SchedulingShard and renders the components and the default shard's scheduler, marking both
    Reconciled, without one request refused. Its objects are removed after (the static test shares the cluster)."""
    stream = _manifests("--operator")
    applied = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=stream)
    assert applied.returncode == 0, f"the operator install failed:\n{applied.stderr}"
    store = KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0))
    token = serviceaccounts.token_kubeconfig(
        kube.kubeconfig, "kai-operator", "kai-scheduler", tmp_path / "kubeconfig-operator"
    )
    try:
        components.start("operator", token, "operator", "--namespace=kai-scheduler", "--reconcile-period=500ms")

        def reconciled(resource: str, name: str) -> bool:
            try:
                status = store.get(resource, name).get("status") or {}
            except NotFound:
                return False
            return any(
                c.get("type") == "Reconciled" and c.get("status") == "True" for c in status.get("conditions") or []
            )

        components.wait("the default shard reconciled", lambda: reconciled("schedulingshards", "default"), timeout=60)
        components.wait("kai-config reconciled", lambda: reconciled("configs", "kai-config"), timeout=30)
        rendered = _names_in(store, "deployments", "kai-scheduler")
        assert {"kai-scheduler-default", "kai-binder", "kai-podgrouper", "kai-controllers", "kai-admission"} <= rendered
        assert "kai-scheduler-config-default" in _names_in(store, "configmaps", "kai-scheduler")
    finally:
        for resource, name in (("schedulingshards", "default"), ("configs", "kai-config")):
            with contextlib.suppress(NotFound):
                store.delete(resource, name)
        for resource in ("deployments", "services", "configmaps"):
            for obj in store.list(resource, "kai-scheduler", "app.kubernetes.io/managed-by=kai-operator")[0]:
                with contextlib.suppress(NotFound):
                    store.delete(resource, obj["metadata"]["name"], "kai-scheduler")
        store.close()
    refused = [line for line in components.log("operator").splitlines() if "forbidden" in line.lower()]
    assert not refused, "the operator was refused by RBAC:\n" + "\n".join(refused)


def _names_in(store: KubeStore, resource: str, namespace: str) -> set[str]:
    return {o["metadata"]["name"] for o in store.list(resource, namespace)[0]}
