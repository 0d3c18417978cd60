"""Builders for admission tests: AdmissionReview bodies and the objects they carry."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from kai_scheduler.admission import review

JSON = dict[str, Any]


def pod(
    *,
    name: str = "p",
    annotations: dict[str, str] | None = None,
    gpu: str | None = None,
    containers: list[JSON] | None = None,
    scheduler: str = "kai-scheduler",
    **spec: Any,
) -> JSON:
    """A pod in namespace team-a; `gpu` puts an nvidia.com/gpu limit on its first container."""
    if containers is None:
        resources: JSON = {"requests": {"cpu": "1"}}
        if gpu is not None:
            resources["limits"] = {"nvidia.com/gpu": gpu}
        containers = [{"name": "main", "image": "img", "resources": resources}]
    meta: JSON = {"name": name, "namespace": "team-a"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": scheduler, "containers": containers, **spec},
    }


def queue(name: str = "q", resources: JSON | None = None, **spec: Any) -> JSON:
    if resources is None:
        resources = {k: {"quota": 1, "overQuotaWeight": 1, "limit": -1} for k in ("gpu", "cpu", "memory")}
    body: JSON = {"resources": resources, **spec}
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": body}


def podgroup(name: str = "pg", **spec: Any) -> JSON:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"queue": "q", **spec},
    }


def topology(name: str = "t", levels: list[JSON] | None = None) -> JSON:
    if levels is None:
        levels = [{"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": levels},
    }


def request(obj: JSON | None, *, operation: str = "CREATE", old: JSON | None = None, uid: str = "uid-1") -> JSON:
    kind = (obj or old or {}).get("kind", "Pod")
    req: JSON = {"uid": uid, "kind": {"group": "", "version": "v1", "kind": kind}, "operation": operation}
    if obj is not None:
        req["object"] = obj
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def body(obj: JSON | None, **kw: Any) -> bytes:
    return orjson.dumps(request(obj, **kw))


def rev(obj: JSON | None, **kw: Any) -> review.Review:
    return review.decode(body(obj, **kw))


def webhook_configuration(kind: str, *names: str) -> JSON:
    """A Validating/MutatingWebhookConfiguration `kai-admission` whose webhooks have no caBundle yet."""
    service = {"name": "kai-admission", "namespace": "kai-scheduler"}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "kai-admission"},
        "webhooks": [{"name": n, "clientConfig": {"service": service}} for n in names],
    }


def apply(obj: JSON, patch: list[JSON]) -> JSON:
    """A minimal RFC 6902 applier for the operations the webhook emits (add/replace/remove of members)."""
    out = copy.deepcopy(obj)
    for op in patch:
        *parents, last = op["path"].lstrip("/").split("/")
        node = out
        for part in parents:
            node = node[part]
        if op["op"] == "remove":
            del node[last]
        else:
            assert (last in node) == (op["op"] == "replace"), op
            node[last] = op["value"]
    return out
