"""Queue access control (this project's extension): a queue that does not admit the job's namespace holds the
job back with that reason on its PodGroup (the scheduler runs with --queue-access-control), and the admission
webhooks, reading queues and namespaces from the API server, refuse the pod and the PodGroup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kai_scheduler.admission import pod as podhook
from kai_scheduler.admission import review, webhooks
from kai_scheduler.api import constants
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests.e2e import serviceaccounts
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup, queue, real_server


def _restricted(name: str, allowed: list[str]) -> dict[str, Any]:
    obj = queue(name, gpu_quota=8)
    obj["spec"]["allowedNamespaces"] = allowed
    return obj


def _reasons(clean: Cluster, name: str) -> list[str]:
    status = clean.store.get("podgroups", name, NAMESPACE).get("status") or {}
    return [r.get("reason", "") for c in status.get("schedulingConditions") or [] for r in c.get("reasons") or []]


def test_a_queue_that_does_not_admit_the_namespace_holds_the_job_back(clean: Cluster) -> None:
    clean.create(_restricted("e2e-open-to-us", [NAMESPACE]))
    clean.create(_restricted("e2e-closed-to-us", ["someone-else"]))
    clean.create(podgroup("welcome", min_member=1, queue="e2e-open-to-us"))
    clean.create(pod("welcome-0", group="welcome", queue="e2e-open-to-us", labels={"app": "welcome"}))
    clean.create(podgroup("refused", min_member=1, queue="e2e-closed-to-us"))
    clean.create(pod("refused-0", group="refused", queue="e2e-closed-to-us", labels={"app": "refused"}))
    clean.wait("the admitted pod bound", lambda: len(clean.bound("app=welcome")) == 1)
    clean.wait(
        "the refused PodGroup's condition",
        lambda: constants.REASON_NAMESPACE_NOT_ALLOWED in _reasons(clean, "refused"),
    )
    assert clean.bound("app=refused") == []


def test_admission_refuses_a_pod_and_a_podgroup_of_a_namespace_the_queue_does_not_admit(
    clean: Cluster, tmp_path: Path
) -> None:
    clean.create(_restricted("e2e-closed-to-us", ["someone-else"]))
    kubeconfig = clean.processes.kubeconfig
    if real_server():  # as the admission component's ServiceAccount, with the RBAC of kai manifests
        kubeconfig = serviceaccounts.kubeconfig_for(kubeconfig, "admission", tmp_path)
    store = KubeStore.connect(kubeconfig, None, KubeOptions(qps=0))
    try:
        hooks = webhooks.build(podhook.PodSettings(queue_access_control=True), store)
        pod_verdict = hooks[webhooks.PATH_VALIDATE_POD].rule(_review(pod("x", queue="e2e-closed-to-us")))
        group = podgroup("x", min_member=1, queue="e2e-closed-to-us")
        group_verdict = hooks[webhooks.PATH_VALIDATE_PODGROUP].rule(_review(group))
        open_verdict = hooks[webhooks.PATH_VALIDATE_POD].rule(_review(pod("y", queue="default-queue")))
    finally:
        store.close()
    want = f"queue 'e2e-closed-to-us' does not admit namespace '{NAMESPACE}' (spec.allowedNamespaces: someone-else)"
    assert not pod_verdict.allowed and pod_verdict.message.endswith(want)
    assert not group_verdict.allowed and group_verdict.message == f"PodGroup {NAMESPACE}/x spec.queue: {want}"
    assert open_verdict.allowed


def _review(obj: dict[str, Any]) -> review.Review:
    return review.Review(
        uid="e2e",
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        operation="CREATE",
        object=obj,
        namespace=NAMESPACE,
        name=obj["metadata"]["name"],
    )
