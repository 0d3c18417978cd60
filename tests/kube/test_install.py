"""The README's install on a real kube-apiserver, both ways: `kai manifests | kubectl apply --server-side -f -`
(the default, the operator install) and `kai manifests --static` each apply the first time, and the components,
each run as its own ServiceAccount with the RBAC of that stream (with the operator: as the Deployments it rendered
say), make the rest (default queues, the default Config and SchedulingShard) and schedule a pod without one request
refused.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

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


def test_the_static_install_applies_in_one_pass_and_the_components_make_the_rest(
    kube: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    """`kai manifests --static`: the component Deployments are in the stream; each component is run with its
    ServiceAccount's token (as its Deployment would), and together they group, schedule, bind and count a pod."""
    stream = _manifests("--static")
    _apply_twice(kube, stream)
    store = KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0))
    had_queues = QUEUES & _names(store, "queues")
    try:
        assert _names(store, "priorityclasses") >= CLASSES  # in the stream: there at once
        token = {c: serviceaccounts.kubeconfig_for(kube.kubeconfig, c, tmp_path) for c in serviceaccounts.COMPONENTS}

        def start(component: str) -> None:
            extra = (
                ("--namespace", "kai-scheduler", f"--webhook-port={free_port()}") if component == "admission" else ()
            )
            components.start(component, token[component], component, *extra)

        _the_components_run_a_pod(kube, components, store, start, "smoke-static")
    finally:
        _clean(store, components, "smoke-static", had_queues)
    _none_refused(components)


def _apply_twice(kube: realkube.Cluster, stream: str) -> None:
    first = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=stream)
    assert first.returncode == 0, f"the first apply failed:\n{first.stderr}"
    again = realkube.kubectl(kube.kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=stream)
    assert again.returncode == 0, f"applying again failed:\n{again.stderr}"


def _the_components_run_a_pod(
    kube: realkube.Cluster, components: Components, store: KubeStore, start: Callable[[str], None], pod: str
) -> None:
    """The controllers make the default queues; scheduler, binder and podgrouper place a pod on fake nodes and the
    controllers count it in its queue; the admission component injects its CA into the webhooks."""
    start("controllers")
    components.wait("the default queues", lambda: _names(store, "queues") >= QUEUES, timeout=30)
    assert store.get("queues", "default-queue")["spec"]["parentQueue"] == "default-parent-queue"
    for name in ("scheduler", "binder", "podgrouper"):
        start(name)
    components.start(
        "fake-nodes",
        kube.kubeconfig,
        "fake-nodes",
        "--count",
        "2",
        "--gpus",
        "4",
        "--prefix",
        f"{pod}-node",
        "--delete-on-exit",
        listen=False,
    )
    start("admission")
    realkube.kubectl(kube.kubeconfig, "create", "namespace", NAMESPACE)
    realkube.kubectl(kube.kubeconfig, "create", "serviceaccount", "default", "-n", NAMESPACE)
    store.create(_pod(pod, gpus=2))

    def running() -> bool:
        obj = store.get("pods", pod, NAMESPACE)
        return bool(obj["spec"].get("nodeName")) and obj.get("status", {}).get("phase") == "Running"

    components.wait("the pod to be grouped, scheduled, bound and running", running, timeout=90)
    components.wait(
        "the controllers to sum the PodGroup into default-queue", lambda: _queue_gpus(store) == "2", timeout=30
    )
    components.wait("the admission component to inject its CA", lambda: _ca_injected(store), timeout=30)


def _clean(store: KubeStore, components: Components, pod: str, had_queues: set[str]) -> None:
    """The cluster is shared by this module's tests: stop the components, then remove the pod and the default
    queues the test's controllers made, so that the next test starts from the stream alone."""
    try:
        components.stop()
        with contextlib.suppress(NotFound):
            store.delete("pods", pod, NAMESPACE, grace_period_seconds=0)
        for queue in ("default-queue", "default-parent-queue"):  # the child first
            if queue not in had_queues:
                with contextlib.suppress(NotFound):
                    store.delete("queues", queue)
    finally:
        store.close()


def _none_refused(components: Components) -> None:
    for name in components.running:
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
    cases: tuple[tuple[str, dict[str, object]], ...] = (
        ("kai-scheduler", {}),  # the default: the operator install
        ("gpu-sched", {"namespace.name": "gpu-sched"}),
        ("kai-scheduler", {"operator.enabled": False}),  # the static install
    )
    for namespace, overrides in cases:
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


def test_the_default_install_is_the_operator_and_what_it_renders_runs_a_pod(
    kube: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    """`kai manifests` (the default, KAI's install: CRDs, RBAC, webhooks, priority classes and the operator) applies
    in one pass; the operator, as its own ServiceAccount, creates the default Config and SchedulingShard, marks both
    Reconciled and renders the components and the default shard's scheduler. Each Deployment it rendered is then run
    as a kubelet would: its args, its ServiceAccount's token, the scheduler's ConfigMap as its conf file; together
    they place and count a pod, without one request refused. What the test made is removed after (the cluster is
    shared by this module's tests)."""
    stream = _manifests()
    deployments = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in deployments] == ["kai-operator"]
    _apply_twice(kube, stream)
    store = KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0))
    had_queues = QUEUES & _names(store, "queues")
    try:
        token = serviceaccounts.token_kubeconfig(
            kube.kubeconfig, "kai-operator", "kai-scheduler", tmp_path / "kubeconfig-operator"
        )
        operator = deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--create-defaults=true" in operator
        components.start("operator", token, *_local(operator), "--reconcile-period=500ms")

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
        rendered = {
            d["metadata"]["name"]: d
            for d in store.list("deployments", "kai-scheduler", "app.kubernetes.io/managed-by=kai-operator")[0]
        }
        by_component = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in rendered.values()}
        assert set(rendered) == {
            "kai-scheduler-default",
            "kai-binder",
            "kai-podgrouper",
            "kai-controllers",
            "kai-admission",
        }
        assert "kai-scheduler-config-default" in _names_in(store, "configmaps", "kai-scheduler")
        assert {"kai-admission", "kai-scheduler-default-metrics"} <= _names_in(store, "services", "kai-scheduler")

        def start(component: str) -> None:
            spec = by_component[component]["spec"]["template"]["spec"]
            account = spec["serviceAccountName"]
            kubeconfig = serviceaccounts.token_kubeconfig(
                kube.kubeconfig, account, "kai-scheduler", tmp_path / f"kubeconfig-{component}"
            )
            args = _local(spec["containers"][0]["args"])
            if component == "scheduler":  # the ConfigMap's file, as the kubelet mounts it
                (config_map,) = [v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v]
                conf = tmp_path / "scheduler-conf.yaml"
                conf.write_text(store.get("configmaps", config_map, "kai-scheduler")["data"]["config.yaml"])
                args = [f"--scheduler-conf={conf}" if a.startswith("--scheduler-conf=") else a for a in args]
            components.start(component, kubeconfig, *args)

        _the_components_run_a_pod(kube, components, store, start, "smoke-operator")
        # docs/dashboard.md: a setting of the scheduler is a shard's args, and the operator renders it
        patched = realkube.kubectl(
            kube.kubeconfig,
            "patch",
            "schedulingshard",
            "default",
            "--type",
            "merge",
            "-p",
            '{"spec":{"args":{"dashboard-address":":8090"}}}',
        )
        assert patched.returncode == 0, patched.stderr

        def scheduler_args() -> list[str]:
            d = store.get("deployments", "kai-scheduler-default", "kai-scheduler")
            return list(d["spec"]["template"]["spec"]["containers"][0]["args"])

        components.wait(
            "the operator to render the shard's args", lambda: "--dashboard-address=:8090" in scheduler_args()
        )
        _none_refused(components)
    finally:
        components.stop()
        for resource, name in (("schedulingshards", "default"), ("configs", "kai-config")):
            with contextlib.suppress(NotFound):
                store.delete(resource, name)
        for resource in ("deployments", "services", "configmaps"):
            for obj in store.list(resource, "kai-scheduler", "app.kubernetes.io/managed-by=kai-operator")[0]:
                with contextlib.suppress(NotFound):
                    store.delete(resource, obj["metadata"]["name"], "kai-scheduler")
        _clean(store, components, "smoke-operator", had_queues)


def _local(args: list[str]) -> list[str]:
    """A container's args for a process on this machine: `Components.start` gives the listen address, and the
    webhook and the scheduler's plugin server get free ports in place of the pod's 9443 and 8081."""
    out = [a for a in args if not a.startswith("--listen-address=")]
    out = [f"--plugin-server-port={free_port()}" if a.startswith("--plugin-server-port=") else a for a in out]
    return [f"--webhook-addr={free_port()}" if a.startswith("--webhook-addr=") else a for a in out]


def _names_in(store: KubeStore, resource: str, namespace: str) -> set[str]:
    return {o["metadata"]["name"] for o in store.list(resource, namespace)[0]}
