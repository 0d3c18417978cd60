"""End to end: the node-scale-adjuster on a real API server.

A fractional pod whose node selector no node matches is unschedulable; the adjuster (its own process, its own
ServiceAccount with the RBAC `kai manifests` gives it when `nodeScaleAdjuster.enabled`) creates a whole-GPU
scaling pod for it in `kai-scale-adjust`, with the pod's node selector. Then a node of that shape appears (a
second `kai fake-nodes`, as an autoscaler would add it), the scheduler places the pod there, and the scaling pod
vanishes. Killed and restarted in between, the adjuster makes no second scaling pod. Nothing schedules the
scaling pod meanwhile: the suite's clusters run no kube-scheduler.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from kai_scheduler.nodescaleadjuster import pods as scaling
from kai_scheduler.store.interface import AlreadyExists, NotFound
from tests.e2e import serviceaccounts
from tests.e2e.checks import hold
from tests.e2e.harness import NAMESPACE, Cluster, pod, real_server
from tests.loopback import free_port

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

ADDED_PREFIX = "kai-e2e-scaled"
ADDED_NODE = f"{ADDED_PREFIX}-0"
POOL_LABEL = "kai-e2e/pool"
POOL = "autoscaled"
ADJUSTER = "node-scale-adjuster"


@pytest.fixture
def adjuster(clean: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kubeconfig = ""
    if real_server():
        serviceaccounts.install_rbac(clean.processes.kubeconfig, _enabled_values())
        tokens = tmp_path_factory.mktemp("nsa-tokens")
        kubeconfig = serviceaccounts.kubeconfig_for(clean.processes.kubeconfig, ADJUSTER, tokens)
    else:  # the mock server has no RBAC; the namespace is all the adjuster needs
        with contextlib.suppress(AlreadyExists):
            clean.store.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scaling.DEFAULT_NAMESPACE}}
            )
    clean.processes.kubeconfigs[ADJUSTER] = kubeconfig
    _start_adjuster(clean)
    try:
        yield clean
    finally:
        clean.processes.stop(["fake-scaled-nodes", ADJUSTER])  # the adjuster first, as started last
        with contextlib.suppress(NotFound):
            clean.store.delete("nodes", ADDED_NODE)
        for sp in _scaling_pods(clean):
            with contextlib.suppress(NotFound):
                clean.store.delete("pods", sp["metadata"]["name"], scaling.DEFAULT_NAMESPACE, grace_period_seconds=0)


def _start_adjuster(cluster: Cluster) -> None:
    cluster.processes.start(
        ADJUSTER,
        ADJUSTER,
        f"--listen-address=127.0.0.1:{free_port()}",
        "--reconcile-period=1s",
        "--cool-down-seconds=5",
        kubeconfig=cluster.processes.kubeconfigs.get(ADJUSTER, ""),
    )


def _enabled_values() -> dict[str, object]:
    from kai_scheduler import install

    values = install.defaults()
    values["nodeScaleAdjuster"]["enabled"] = True
    return values


def _same_scaling_pods(cluster: Cluster, names: list[str]) -> None:
    assert sorted(p["metadata"]["name"] for p in _scaling_pods(cluster)) == names


def _scaling_pods(cluster: Cluster) -> list[dict[str, object]]:
    items, _ = cluster.store.list("pods", scaling.DEFAULT_NAMESPACE, f"{scaling.APP_LABEL}={scaling.APP_LABEL_VALUE}")
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_scaling_pods_appear_for_a_pending_fractional_pod_and_vanish_when_it_is_placed(adjuster: Cluster) -> None:
    cluster = adjuster
    frac = pod(
        "wants-new-node",
        gpus=0.5,
        labels={"app": "nsa"},
        annotations={"runai/shared-gpu-configmap": "nsa-cm"},
    )
    frac["spec"]["nodeSelector"] = {POOL_LABEL: POOL}
    created = cluster.create(frac)
    uid = created["metadata"]["uid"]

    cluster.wait("a scaling pod for the pending fractional pod", lambda: len(_scaling_pods(cluster)) == 1, timeout=60)
    (sp,) = _scaling_pods(cluster)
    labels = sp["metadata"]["labels"]
    assert labels[f"{scaling.MEMBER_LABEL_PREFIX}{uid}"] == "wants-new-node"
    assert sp["metadata"]["annotations"][scaling.ANNOTATION_FOR] == f"{NAMESPACE}/wants-new-node"
    assert sp["spec"]["nodeSelector"] == {POOL_LABEL: POOL}
    assert sp["spec"]["schedulerName"] == "default-scheduler"
    assert sp["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert not cluster.bound("app=nsa")

    # Killed and restarted, the adjuster finds its state in the scaling pod's labels: nothing new is made.
    cluster.processes.kill(ADJUSTER)
    _start_adjuster(cluster)
    hold(6, lambda: _same_scaling_pods(cluster, [sp["metadata"]["name"]]))

    cluster.processes.start(
        "fake-scaled-nodes",
        "fake-nodes",
        "--count",
        "1",
        "--gpus",
        "2",
        "--prefix",
        ADDED_PREFIX,
        "--label",
        f"{POOL_LABEL}={POOL}",
        "--heartbeat-period",
        "5s",
        "--delete-on-exit",
    )
    cluster.wait("the fractional pod placed on the added node", lambda: len(cluster.bound("app=nsa")) == 1, timeout=90)
    assert cluster.bound("app=nsa")[0]["spec"]["nodeName"] == ADDED_NODE
    cluster.wait("the scaling pod gone", lambda: not _scaling_pods(cluster), timeout=60)
    assert "scaling pod" in cluster.processes.log_of(ADJUSTER)
