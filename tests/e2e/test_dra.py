"""DRA end to end (resource.k8s.io/v1beta1): a ResourceSlice published for a fake node, a pod whose claim comes
from a template placed and bound with the claim allocated and reserved for it, and a second pod that needs the
same device waiting with a reason that names its claim.

With kube-controller-manager its resourceclaim controller makes the claims from the template; on a bare control
plane the test plays that controller with the project's own (`controllers.resourceclaims`), as the embedded
cluster does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from kai_scheduler.controllers.resourceclaims import ResourceClaimController
from kai_scheduler.store.interface import JSON, StoreError
from tests.e2e import harness
from tests.e2e.harness import NAMESPACE, Cluster

pytestmark = pytest.mark.run_in("controllers")  # the garbage collector (tests/e2e/split.py)

DRA = "resource.k8s.io/v1beta1"
CLASS = "gpu.nvidia.com"
SLICE = "e2e-dra-slice"
TEMPLATE = "e2e-one-gpu"


def _served(cluster: Cluster) -> bool:
    try:
        cluster.store.list("deviceclasses")
    except StoreError:
        return False
    return True


@pytest.fixture
def one_dra_gpu(clean: Cluster) -> Iterator[str]:
    """One DRA GPU on the first fake node: its DeviceClass, ResourceSlice and a one-GPU claim template."""
    if not _served(clean):
        pytest.skip("the API server does not serve resource.k8s.io/v1beta1")
    node = sorted(
        n["metadata"]["name"]
        for n in clean.store.list("nodes")[0]
        if n["metadata"]["name"].startswith(harness.NODE_PREFIX)
    )[0]
    created = [
        clean.create(
            {
                "apiVersion": DRA,
                "kind": "DeviceClass",
                "metadata": {"name": CLASS, "labels": {"e2e": "true"}},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]},
            }
        ),
        clean.create(
            {
                "apiVersion": DRA,
                "kind": "ResourceSlice",
                "metadata": {"name": SLICE, "labels": {"e2e": "true"}},
                "spec": {
                    "driver": CLASS,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "basic": {"attributes": {"type": {"string": "gpu"}}}}],
                },
            }
        ),
        clean.create(
            {
                "apiVersion": DRA,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": TEMPLATE, "namespace": NAMESPACE},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": CLASS}]}}},
            }
        ),
    ]
    try:
        yield node
    finally:
        for pod in clean.pods("app=e2e-dra"):
            with contextlib.suppress(StoreError):
                clean.store.delete("pods", pod["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
        for claim in clean.store.list("resourceclaims", NAMESPACE)[0]:
            with contextlib.suppress(StoreError):
                clean.store.delete("resourceclaims", claim["metadata"]["name"], NAMESPACE)
        for obj in reversed(created):
            meta = obj["metadata"]
            resource = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}.get(
                obj["kind"], "resourceclaimtemplates"
            )
            with contextlib.suppress(StoreError):
                clean.store.delete(resource, meta["name"], meta.get("namespace", ""))


def _dra_pod(name: str) -> JSON:
    pod = harness.pod(name, gpus=0, group=name, labels={"app": "e2e-dra"})
    pod["spec"]["containers"][0]["resources"]["limits"] = {}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": TEMPLATE}]
    return pod


def _claim_of(cluster: Cluster, pod_name: str) -> JSON | None:
    if not harness.controllers_running():
        ResourceClaimController(cluster.store).reconcile()  # the resourceclaim controller of a bare cluster
    pod = cluster.store.get("pods", pod_name, NAMESPACE)
    made = [s["resourceClaimName"] for s in pod.get("status", {}).get("resourceClaimStatuses") or []]
    if not made:
        return None
    claim: JSON = cluster.store.get("resourceclaims", made[0], NAMESPACE)
    return claim


def test_a_pod_with_a_template_claim_is_bound_with_its_claim_allocated_and_a_second_waits_naming_its_claim(
    one_dra_gpu: str, clean: Cluster
) -> None:
    node = one_dra_gpu
    clean.create(harness.podgroup("dra-first", min_member=1, queue="default-queue"))
    clean.create(_dra_pod("dra-first"))
    clean.wait("the first pod's claim", lambda: _claim_of(clean, "dra-first") is not None)
    clean.wait("the first pod bound", lambda: bool(clean.bound("app=e2e-dra")))
    pod = clean.store.get("pods", "dra-first", NAMESPACE)
    assert pod["spec"]["nodeName"] == node
    claim = _claim_of(clean, "dra-first")
    assert claim is not None
    status = claim["status"]
    assert [(r["driver"], r["pool"], r["device"]) for r in status["allocation"]["devices"]["results"]] == [
        (CLASS, node, "gpu-0")
    ]
    assert [(c["resource"], c["name"], c["uid"]) for c in status["reservedFor"]] == [
        ("pods", "dra-first", pod["metadata"]["uid"])
    ]
    br = clean.store.get("bindrequests", "dra-first", NAMESPACE)
    assert br["spec"]["resourceClaimAllocations"][0]["name"] == "gpu"

    def gpus_in_status() -> bool:  # kai controllers counts the claim's GPU as the scheduler does
        group = clean.store.get("podgroups", "dra-first", NAMESPACE)
        allocated = (group.get("status") or {}).get("resourcesStatus", {}).get("allocated") or {}
        return bool(allocated.get("nvidia.com/gpu") == "1")

    clean.wait("the PodGroup's allocated GPU from its claim", gpus_in_status)

    clean.create(harness.podgroup("dra-second", min_member=1, queue="default-queue"))
    clean.create(_dra_pod("dra-second"))
    clean.wait("the second pod's claim", lambda: _claim_of(clean, "dra-second") is not None)
    second_claim = _claim_of(clean, "dra-second")
    assert second_claim is not None
    claim_key = f"{NAMESPACE}/{second_claim['metadata']['name']}"

    def waits_naming_its_claim() -> bool:
        conditions = clean.store.get("pods", "dra-second", NAMESPACE).get("status", {}).get("conditions") or []
        return any(c["type"] == "PodScheduled" and claim_key in c.get("message", "") for c in conditions)

    clean.wait("the second pod unschedulable, naming its claim", waits_naming_its_claim)
    assert not clean.store.get("pods", "dra-second", NAMESPACE)["spec"].get("nodeName")
