"""Fixtures of the end-to-end suite: skipped unless a cluster is named (see tests/e2e/README.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kai_scheduler.store.interface import StoreError
from tests.e2e import harness

SKIP_REASON = ("e2e suite skipped: set KAI_E2E_KUBECONFIG to a kubeconfig of a disposable cluster "
               "(or KAI_E2E_MOCK=1 for the mock API server); see tests/e2e/README.md")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if harness.kubeconfig_from_env() or os.environ.get("KAI_E2E_MOCK") == "1":
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if "tests/e2e/" in item.nodeid:
            item.add_marker(skip)


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
    real = harness.kubeconfig_from_env() is not None
    harness.install(store, kubeconfig, real=real)
    logs = tmp_path_factory.mktemp("logs")
    processes = harness.Processes(kubeconfig, logs)
    prefix = "kai-e2e-node"
    processes.start("fake-nodes", "fake-nodes", "--count", "4", "--gpus", "8", "--prefix", prefix,
                    "--delete-on-exit")
    for component in harness.COMPONENTS:
        processes.start_component(component)
    cluster = harness.Cluster(store, processes, prefix)
    cluster.wait("4 fake nodes", lambda: len(_nodes(store, prefix)) == 4, timeout=60)
    try:
        yield cluster
    finally:
        processes.stop_all()
        print(f"\ncomponent logs: {logs}")
        store.close()


@pytest.fixture
def clean(cluster: harness.Cluster) -> Iterator[harness.Cluster]:
    yield cluster
    cluster.delete_everything_submitted()


def _nodes(store: harness.KubeStore, prefix: str) -> list[str]:
    try:
        items, _ = store.list("nodes")
    except StoreError:
        return []
    return [n["metadata"]["name"] for n in items if n["metadata"]["name"].startswith(prefix)]

