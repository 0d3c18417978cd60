"""The admission webhook configurations (BEHAVIOR.md §8.3).

Both are named `kai-admission`; their caBundle is left empty because the admission component creates its
certificate and patches the bundle in at run time. The pod webhooks only see pods of the KAI scheduler name
(matchConditions, Kubernetes 1.28+, optional), and with `global.podLabelSelector` / `global.namespaceLabelSelector`
only the pods those select (objectSelector / namespaceSelector, as KAI's operator renders them); they fail open by
default. The CRD webhooks fail closed.
"""

from __future__ import annotations

from typing import Any

from kai_scheduler.install.objects import ADMISSION_SERVICE, WEBHOOK_CONFIGURATION, InstallObject, cluster_scoped
from kai_scheduler.install.source import Source

ADMISSION_API = "admissionregistration.k8s.io/v1"

MUTATE_POD = "/mutate--v1-pod"
VALIDATE_POD = "/validate--v1-pod"
VALIDATE_QUEUE = "/validate-scheduling-run-ai-v2-queue"
VALIDATE_PODGROUP = "/validate-scheduling-run-ai-v2alpha2-podgroup"
VALIDATE_TOPOLOGY = "/validate-kai-scheduler-v1alpha1-topology"
VALIDATE_SCHEDULINGSHARD = "/validate-kai-scheduler-v1-schedulingshard"
VALIDATE_CONFIG = "/validate-kai-scheduler-v1-config"


MUTATE_POD_WEBHOOK = "pods.mutate.kai.scheduler"
VALIDATE_POD_WEBHOOK = "pods.validate.kai.scheduler"
POD_WEBHOOKS = (MUTATE_POD_WEBHOOK, VALIDATE_POD_WEBHOOK)
# KAI's selective monitoring: the pod webhooks see only the pods these label maps select (when set).
SELECTORS = (("global.namespaceLabelSelector", "namespaceSelector"), ("global.podLabelSelector", "objectSelector"))


def _client(src: Source, path: str) -> dict[str, Any]:
    return {"service": {"name": ADMISSION_SERVICE, "namespace": src.value("namespace.name"), "path": path, "port": 443}}


def _webhook(src: Source, name: str, path: str, rule: dict[str, Any], failure_policy: str) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": _client(src, path),
        "failurePolicy": src.value(failure_policy),
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "rules": [rule],
    }


def _pod_webhook(src: Source, name: str, path: str, operations: list[str]) -> dict[str, Any]:
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": operations,
        "resources": ["pods"],
        "scope": "Namespaced",
    }
    hook = _webhook(src, name, path, rule, "admission.podFailurePolicy")
    condition = {
        "name": "kai-scheduler-pods",
        "expression": f"object.spec.schedulerName == '{src.value('global.schedulerName')}'",
    }
    hook.update(src.optional("admission.matchConditions", "matchConditions", [condition]))
    for path, key in SELECTORS:
        hook.update(src.optional(path, key, {"matchLabels": src.mapping(path, strings=True)}))
    return hook


def _crd_webhook(
    src: Source, name: str, path: str, group: str, version: str, resource: str, operations: list[str]
) -> dict[str, Any]:
    rule = {"apiGroups": [group], "apiVersions": [version], "operations": operations, "resources": [resource]}
    return _webhook(src, name, path, rule, "admission.crdFailurePolicy")


def build(src: Source) -> list[InstallObject]:
    mutating = {
        "apiVersion": ADMISSION_API,
        "kind": "MutatingWebhookConfiguration",
        "metadata": cluster_scoped(WEBHOOK_CONFIGURATION, "admission"),
        "webhooks": [_pod_webhook(src, MUTATE_POD_WEBHOOK, MUTATE_POD, ["CREATE"])],
    }
    validating = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingWebhookConfiguration",
        "metadata": cluster_scoped(WEBHOOK_CONFIGURATION, "admission"),
        "webhooks": [
            _pod_webhook(src, VALIDATE_POD_WEBHOOK, VALIDATE_POD, ["CREATE", "UPDATE"]),
            _crd_webhook(
                src,
                "queues.validate.kai.scheduler",
                VALIDATE_QUEUE,
                "scheduling.run.ai",
                "v2",
                "queues",
                ["CREATE", "UPDATE", "DELETE"],
            ),
            _crd_webhook(
                src,
                "podgroups.validate.kai.scheduler",
                VALIDATE_PODGROUP,
                "scheduling.run.ai",
                "v2alpha2",
                "podgroups",
                ["CREATE", "UPDATE"],
            ),
            _crd_webhook(
                src,
                "topologies.validate.kai.scheduler",
                VALIDATE_TOPOLOGY,
                "kai.scheduler",
                "v1alpha1",
                "topologies",
                ["CREATE", "UPDATE"],
            ),
            _crd_webhook(
                src,
                "schedulingshards.validate.kai.scheduler",
                VALIDATE_SCHEDULINGSHARD,
                "kai.scheduler",
                "v1",
                "schedulingshards",
                ["CREATE", "UPDATE"],
            ),
            _crd_webhook(
                src,
                "configs.validate.kai.scheduler",
                VALIDATE_CONFIG,
                "kai.scheduler",
                "v1",
                "configs",
                ["CREATE", "UPDATE"],
            ),
        ],
    }
    return [InstallObject("webhooks", mutating), InstallObject("webhooks", validating)]
