"""`kai run --node-scale-adjuster` on a real kube-apiserver: the install with `nodeScaleAdjuster.enabled` applies,
and the one process runs the adjuster beside the other components, under its own Lease: a pending fractional
pod gets its scaling pod in `kai-scale-adjust`. (The adjuster as its own process and ServiceAccount, and the
scaling pod vanishing once the pod is placed: tests/e2e/test_scale_adjuster.py.)

A cluster of its own: the shared one must not get default queues before test_install.py looks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kai_scheduler.nodescaleadjuster import pods as scaling
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.kube.conftest import Components

NAMESPACE = "kai-nsa-check"


@pytest.fixture(scope="module")
def own() -> Iterator[realkube.Cluster]:
    with realkube.cluster() as cluster:
        yield cluster


def test_kai_run_with_the_adjuster_makes_a_scaling_pod_under_its_own_lease(
    own: realkube.Cluster, components: Components, tmp_path: Path
) -> None:
    stream = subprocess.run(
        [sys.executable, "-m", "kai_scheduler.cli", "manifests", "--set", "nodeScaleAdjuster.enabled=true"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    applied = realkube.kubectl(own.kubeconfig, "apply", "--server-side", "-f", "-", stdin=stream)
    assert applied.returncode == 0, applied.stderr
    for namespace in (NAMESPACE, scaling.DEFAULT_NAMESPACE):
        if namespace == NAMESPACE:
            realkube.kubectl(own.kubeconfig, "create", "namespace", namespace)
        realkube.kubectl(own.kubeconfig, "create", "serviceaccount", "default", "-n", namespace)
    components.start(
        "run",
        own.kubeconfig,
        "run",
        "--plugin-server-port=0",
        "--node-scale-adjuster",
        "--cool-down-seconds=5",
        "--leader-elect",
        "--leader-elect-namespace=kai-scheduler",
    )
    store = KubeStore.connect(own.kubeconfig, None, KubeOptions(qps=0))
    try:
        components.wait("the default queue", lambda: _exists(store, "queues", "default-queue"), timeout=60)
        pod = store.create(_fractional_pod("frac"))
        components.wait("a scaling pod", lambda: bool(_scaling_pods(store)), timeout=60)
        (sp,) = _scaling_pods(store)
        assert f"{scaling.MEMBER_LABEL_PREFIX}{pod['metadata']['uid']}" in sp["metadata"]["labels"]
        assert sp["metadata"]["annotations"][scaling.ANNOTATION_FOR] == f"{NAMESPACE}/frac"
        leases = {o["metadata"]["name"] for o in store.list("leases", "kai-scheduler")[0]}
        assert "kai-node-scale-adjuster" in leases and "kai-scheduler" in leases
    finally:
        store.close()
    assert components.alive("run"), components.tails()
    proc = components.running["run"]
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def _exists(store: KubeStore, resource: str, name: str) -> bool:
    return any(o["metadata"]["name"] == name for o in store.list(resource)[0])


def _scaling_pods(store: KubeStore) -> list[dict[str, object]]:
    items, _ = store.list("pods", scaling.DEFAULT_NAMESPACE)
    return items


def _fractional_pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"kai.scheduler/queue": "default-queue"},
            "annotations": {"gpu-fraction": "0.5", "runai/shared-gpu-configmap": "frac-cm"},
        },
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}]},
    }
