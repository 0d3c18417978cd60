"""A write that names the uid it read reaches that object only, on a real kube-apiserver: the scheduler's writes to
a pod or PodGroup (`scheduler/commit.py`) are refused for a newer object of the same name, and the store says
which refusals mean that (`replaced`), for the memory store and the mock API server to copy (tests/store)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kai_scheduler.store.interface import Conflict, Invalid, replaced
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.kube.test_refusals import _crds

JSON = dict[str, Any]
NAMESPACE = "kai-replaced"


@pytest.fixture(scope="module")
def store(kube: realkube.Cluster) -> Iterator[KubeStore]:
    _crds(kube)
    realkube.kubectl(kube.kubeconfig, "create", "namespace", NAMESPACE, check=True)
    realkube.kubectl(kube.kubeconfig, "create", "serviceaccount", "default", "-n", NAMESPACE, check=True)
    with KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0)) as connected:
        yield connected


def _pod(name: str) -> JSON:
    spec = {"schedulerName": "nobody", "containers": [{"name": "main", "image": "busybox"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def _podgroup(name: str) -> JSON:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minMember": 1, "queue": "default-queue"},
    }


def _made_again(store: KubeStore, resource: str, obj: JSON) -> tuple[str, str]:
    """The uid of `obj` as first created and of the object made again under its name."""
    name = obj["metadata"]["name"]
    first = store.create(obj)["metadata"]["uid"]
    store.delete(resource, name, NAMESPACE, grace_period_seconds=0)
    return first, store.create(obj)["metadata"]["uid"]


@pytest.mark.parametrize(
    ("resource", "subresource"),
    [("pods", ""), ("pods", "status"), ("podgroups", "")],
    ids=["pod", "pod status", "PodGroup"],
)
def test_a_patch_naming_the_earlier_uid_is_refused(store: KubeStore, resource: str, subresource: str) -> None:
    name = f"patched-{resource}-{subresource or 'main'}"
    first, second = _made_again(store, resource, _pod(name) if resource == "pods" else _podgroup(name))
    body = {"metadata": {"uid": first, "annotations": {"written": "yes"}}}
    with pytest.raises(Invalid) as refused:
        store.patch(resource, name, NAMESPACE, body, subresource)
    assert replaced(refused.value)
    assert "written" not in (store.get(resource, name, NAMESPACE)["metadata"].get("annotations") or {})
    store.patch(resource, name, NAMESPACE, {"metadata": {"uid": second, "labels": {"written": "yes"}}})
    assert store.get(resource, name, NAMESPACE)["metadata"]["labels"] == {"written": "yes"}


def test_a_custom_resources_status_patch_ignores_the_uid(store: KubeStore) -> None:
    """Why the scheduler's PodGroup conditions cannot be guarded the same way (and the memory store copies it)."""
    first, second = _made_again(store, "podgroups", _podgroup("status-patched"))
    condition = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    body = {"metadata": {"uid": first}, "status": {"conditions": [condition]}}
    got = store.patch("podgroups", "status-patched", NAMESPACE, body, "status")
    assert got["metadata"]["uid"] == second
    assert got["status"]["conditions"] == [condition]


def test_an_eviction_naming_the_earlier_uid_is_refused(store: KubeStore) -> None:
    first, second = _made_again(store, "pods", _pod("evicted"))
    with pytest.raises(Conflict) as refused:
        store.evict(NAMESPACE, "evicted", first)
    assert replaced(refused.value)
    assert store.get("pods", "evicted", NAMESPACE)["metadata"]["uid"] == second
    store.evict(NAMESPACE, "evicted", second)  # unbound, so the server removes it at once
    assert not [p for p in store.list("pods", NAMESPACE)[0] if p["metadata"]["name"] == "evicted"]


def test_an_update_is_not_taken_for_a_replaced_object(store: KubeStore) -> None:
    """A stale resourceVersion is a Conflict too, and not one of a replaced object."""
    created = store.create(_podgroup("updated"))
    store.patch("podgroups", "updated", NAMESPACE, {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(Conflict) as refused:
        store.update(created)
    assert not replaced(refused.value)
