"""Fixtures of the end-to-end suite: skipped unless a cluster is named (see tests/e2e/README.md).

One set of components and fake nodes serves the whole session; each test cleans up after itself (`clean`).
On a real API server every component runs as its own ServiceAccount with the RBAC of `kai manifests`, so a
verb missing from its ClusterRole is a refused request in its log, and `clean` fails the test that showed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.kube import KubeStore
from tests.e2e import harness, serviceaccounts, split

SKIP_REASON = (
    "e2e suite skipped: set KAI_E2E_KUBECONFIG to a kubeconfig of a disposable cluster "
    "(or KAI_E2E_MOCK=1 for the mock API server); see tests/e2e/README.md"
)


NEEDS_CONTROLLERS = "needs kube-controller-manager (KAI_E2E_CONTROLLERS=1)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if item.nodeid.startswith("tests/e2e/")]
    if not (harness.kubeconfig_from_env() or os.environ.get("KAI_E2E_MOCK") == "1"):
        for item in mine:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))
        return
    for item in mine:
        if item.get_closest_marker("needs_controllers") and not harness.controllers_running():
            item.add_marker(pytest.mark.skip(reason=NEEDS_CONTROLLERS))
    run = os.environ.get("KAI_E2E_RUN")
    if not run:
        return
    if run not in split.RUNS:
        raise pytest.UsageError(f"KAI_E2E_RUN={run}: expected one of {', '.join(split.RUNS)}")
    elsewhere = [item for item in mine if split.run_of(item) != run]
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        gone = set(elsewhere)
        items[:] = [item for item in items if item not in gone]


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    named = harness.kubeconfig_from_env()
    if named:
        yield named
        return
    with harness.mock_apiserver(tmp_path_factory.mktemp("mock")) as path:
        yield path


@pytest.fixture(scope="session")
def cluster(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Cluster]:
    store = harness.connect(kubeconfig)
    real = harness.real_server()
    harness.install(store, kubeconfig, real=real)
    logs = tmp_path_factory.mktemp("logs")
    processes = harness.Processes(kubeconfig, logs)
    if real:
        serviceaccounts.install_rbac(kubeconfig)
        tokens = tmp_path_factory.mktemp("tokens")
        processes.kubeconfigs = {c: serviceaccounts.kubeconfig_for(kubeconfig, c, tokens) for c in harness.COMPONENTS}
    processes.start_all()
    cluster = harness.Cluster(store, processes, harness.NODE_PREFIX)
    try:
        cluster.wait("4 schedulable fake nodes", lambda: len(_schedulable_nodes(store)) == 4, timeout=60)
        cluster.wait("the default queue", lambda: _exists(store, "queues", "default-queue"), timeout=60)
        cluster.delete_everything_submitted()  # what an interrupted earlier run may have left
        yield cluster
    finally:
        processes.stop_all()
        print(f"\ncomponent logs: {logs}")
        store.close()


@pytest.fixture
def clean(cluster: harness.Cluster) -> Iterator[harness.Cluster]:
    yield cluster
    cluster.delete_everything_submitted()
    refused = cluster.processes.refusals()
    assert not refused, "the API server refused a component's request (RBAC of kai manifests):\n" + "\n".join(
        refused[:20]
    )


def _schedulable_nodes(store: KubeStore) -> list[str]:
    try:
        items, _ = store.list("nodes")
    except StoreError:
        return []
    return [
        n["metadata"]["name"]
        for n in items
        if n["metadata"]["name"].startswith(harness.NODE_PREFIX)
        and not any(t.get("effect") == "NoSchedule" for t in n.get("spec", {}).get("taints") or [])
        and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in n.get("status", {}).get("conditions") or []
        )
    ]


def _exists(store: KubeStore, resource: str, name: str) -> bool:
    try:
        store.get(resource, name)
    except StoreError:
        return False
    return True
