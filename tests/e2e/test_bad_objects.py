"""Bad objects the API server accepts, among good ones, on a real API server: the good pod is bound, each bad
object carries one `Warning InvalidObject` event naming it and its field, the pods of a refused PodGroup are told
its problem (`Warning Unschedulable`), a BindRequest the binder cannot read is written Failed with a `Warning
BindingError` on its pod, and every component lives on (tests/badobj has the same rule for every field of every
kind, over the in-memory store)."""

from __future__ import annotations

from typing import Any

from tests.e2e import harness
from tests.e2e.harness import NAMESPACE, Cluster, pod

JSON = dict[str, Any]


def _bad_tree() -> JSON:
    """A PodGroup whose subgroup names a parent that is not there (the CRD cannot say so)."""
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "e2e-bad-tree", "namespace": NAMESPACE, "labels": {"e2e": "true"}},
        "spec": {"queue": "default-queue", "subGroups": [{"name": "a", "minMember": 1, "parent": "missing"}]},
    }


def _invalid(clean: Cluster, kind: str, name: str, reason: str = "InvalidObject") -> list[str]:
    return harness.event_messages(clean, kind, name, reason)


def test_bad_objects_are_told_on_themselves_and_the_good_pod_is_bound(clean: Cluster) -> None:
    clean.create(_bad_tree())
    clean.create(pod("bad-tree-0", group="e2e-bad-tree"))
    clean.create(pod("bad-fraction", gpus=0, annotations={"gpu-fraction": "1.5"}))
    clean.create(pod("good", gpus=1))
    clean.wait("the good pod bound", lambda: [p["metadata"]["name"] for p in clean.bound("e2e=true")] == ["good"])
    clean.wait(
        "each bad object told",
        lambda: bool(_invalid(clean, "Pod", "bad-fraction")) and bool(_invalid(clean, "PodGroup", "e2e-bad-tree")),
        timeout=30,
    )
    assert _invalid(clean, "Pod", "bad-fraction") == [
        f"Pod {NAMESPACE}/bad-fraction metadata.annotations.gpu-fraction: want a number in (0, 1], got '1.5'"
    ]
    assert _invalid(clean, "PodGroup", "e2e-bad-tree") == [
        f"PodGroup {NAMESPACE}/e2e-bad-tree spec.subGroups[0].parent: no subgroup named 'missing'"
    ]
    clean.wait("the refused PodGroup's pod told", lambda: bool(_invalid(clean, "Pod", "bad-tree-0", "Unschedulable")))
    assert _invalid(clean, "Pod", "bad-tree-0", "Unschedulable") == [
        f"podgroup 'e2e-bad-tree' is invalid: PodGroup {NAMESPACE}/e2e-bad-tree spec.subGroups[0].parent: "
        "no subgroup named 'missing'"
    ]
    assert all(code is None for code in clean.processes.alive().values()), clean.processes.log_tail()


def test_a_bind_request_the_binder_cannot_read_is_failed_with_a_binding_error_on_its_pod(clean: Cluster) -> None:
    target = pod("bad-br", gpus=1)
    target["spec"]["schedulerName"] = "e2e-nobody"  # no scheduler places it: only the BindRequest below names it
    clean.create(target)
    clean.create(
        {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {"name": "bad-br", "namespace": NAMESPACE, "labels": {"e2e": "true"}},
            "spec": {
                "podName": "bad-br",
                "selectedNode": "any",
                "receivedResourceType": "Regular",
                "receivedGPU": {"count": 1, "portion": "abc"},  # a string, as the CRD asks, but no number
            },
        }
    )

    def status() -> JSON:
        return dict(clean.store.get("bindrequests", "bad-br", NAMESPACE).get("status") or {})

    clean.wait("the BindRequest failed", lambda: status().get("phase") == "Failed", timeout=30)
    line = f"BindRequest {NAMESPACE}/bad-br spec.receivedGPU.portion: expected a number, got 'abc'"
    assert status() == {"phase": "Failed", "reason": line, "failedAttempts": 1}
    clean.wait("its pod told", lambda: bool(_invalid(clean, "Pod", "bad-br", "BindingError")), timeout=30)
    assert _invalid(clean, "Pod", "bad-br", "BindingError") == [f"Failed to bind pod {NAMESPACE}/bad-br: {line}"]
    assert not clean.store.get("pods", "bad-br", NAMESPACE)["spec"].get("nodeName")
    assert all(code is None for code in clean.processes.alive().values()), clean.processes.log_tail()
