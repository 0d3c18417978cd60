"""KAI's selective monitoring end to end: a second pod grouper (its own scheduler name, so the suite's grouper
leaves its pods alone; the podgrouper's ServiceAccount and RBAC) run with `--pod-label-selector app=batch
--namespace-label-selector kai-e2e/team=ml`. Its pod watch is the API server's watch with that label selector.
A pod in a namespace without the label gets no PodGroup; once the namespace is labelled, the pod carrying the
label is grouped (the pod itself unchanged), the other is not until it is labelled too."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import pytest

from kai_scheduler.api import constants
from kai_scheduler.store.interface import JSON, NotFound
from tests.e2e.checks import hold
from tests.e2e.harness import NAMESPACE, Cluster, pod

GROUPER = "selective-grouper"
SCHEDULER_NAME = "kai-selective"
TEAM = "kai-e2e/team"


def _label_namespace(cluster: Cluster, value: str | None) -> None:
    cluster.store.patch("namespaces", NAMESPACE, "", {"metadata": {"labels": {TEAM: value}}})


@pytest.fixture
def selective(clean: Cluster) -> Iterator[Cluster]:
    try:
        _label_namespace(clean, None)
    except NotFound:  # the mock API server holds no Namespace objects unless made
        clean.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    clean.processes.start_component(
        "podgrouper",
        f"--scheduler-name={SCHEDULER_NAME}",
        "--pod-label-selector=app=batch",
        f"--namespace-label-selector={TEAM}=ml",
        "--reconcile-period=200ms",
        name=GROUPER,
    )
    try:
        yield clean
    finally:
        proc = clean.processes.running.pop(GROUPER, None)
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        with contextlib.suppress(NotFound):
            _label_namespace(clean, None)


def _selective_pod(name: str, app: str) -> JSON:
    obj = pod(name, labels={"app": app, "selective": "true"})
    obj["spec"]["schedulerName"] = SCHEDULER_NAME
    return obj


def _group_of(cluster: Cluster, name: str) -> str:
    annotations = cluster.store.get("pods", name, NAMESPACE)["metadata"].get("annotations") or {}
    return str(annotations.get(constants.ANNOTATION_POD_GROUP_NAME, ""))


def test_only_the_pods_within_both_selectors_are_grouped(selective: Cluster) -> None:
    cluster = selective
    cluster.create(_selective_pod("sel-batch", "batch"))
    cluster.create(_selective_pod("sel-web", "web"))

    def none_grouped() -> None:
        assert (_group_of(cluster, "sel-batch"), _group_of(cluster, "sel-web")) == ("", "")

    hold(3.0, none_grouped)  # the namespace lacks the label
    _label_namespace(cluster, "ml")
    cluster.wait("the batch pod grouped once its namespace is labelled", lambda: bool(_group_of(cluster, "sel-batch")))
    assert cluster.store.get("podgroups", _group_of(cluster, "sel-batch"), NAMESPACE)
    hold(2.0, lambda: _assert_ungrouped(cluster, "sel-web"))
    cluster.store.patch("pods", "sel-web", NAMESPACE, {"metadata": {"labels": {"app": "batch"}}})
    cluster.wait("the web pod grouped once labelled app=batch", lambda: bool(_group_of(cluster, "sel-web")))


def _assert_ungrouped(cluster: Cluster, name: str) -> None:
    assert _group_of(cluster, name) == "", name
