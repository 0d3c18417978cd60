"""A manifest written for KAI keeps every field it sets on a real kube-apiserver: the shipped CRDs' structural
schemas prune nothing of it. Each kind's every-field manifest (tests/api/kai_every_field.yaml) is created, its
status written through the status subresource, and read back unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import realkube
from tests.api.test_crds import EVERY_FIELD
from tests.kube.test_refusals import _crds

JSON = dict[str, Any]
RESOURCES = {"Queue": "queues", "PodGroup": "podgroups", "BindRequest": "bindrequests", "Topology": "topologies"}


@pytest.fixture(scope="module")
def written(kube: realkube.Cluster) -> list[tuple[JSON, JSON]]:
    """Each sample and the object the API server gives back after it was created and its status written."""
    _crds(kube)
    realkube.kubectl(kube.kubeconfig, "create", "namespace", "kai-every-field")
    out = []
    with KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0)) as store:
        for sample in EVERY_FIELD:
            created = store.create(copy.deepcopy(sample))
            if "status" in sample:
                store.update_status({**created, "status": copy.deepcopy(sample["status"])})
            meta = sample["metadata"]
            out.append((sample, store.get(RESOURCES[sample["kind"]], meta["name"], meta.get("namespace", ""))))
    return out


@pytest.mark.parametrize(
    "index", range(len(EVERY_FIELD)), ids=[f"{d['kind']} {d['metadata']['name']}" for d in EVERY_FIELD]
)
def test_every_field_comes_back_unchanged(written: list[tuple[JSON, JSON]], index: int) -> None:
    sample, got = written[index]
    assert got["spec"] == sample["spec"]
    assert got.get("status") == sample.get("status")
    assert (got["metadata"].get("labels") or {}) == (sample["metadata"].get("labels") or {})
