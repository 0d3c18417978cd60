"""The kinds the stores serve: unique keys, lookups by kind and version, API path names."""

from __future__ import annotations

import pytest

from kai_scheduler.store import kube
from kai_scheduler.store.interface import GVK_TO_PLURAL, RESOURCES, Invalid, resource_for


def test_a_kind_in_two_versions_has_two_keys_and_one_path_name() -> None:
    assert resource_for("MPIJob").plural == "mpijobs"  # no version: the first listed
    assert resource_for("MPIJob", "kubeflow.org/v2beta1").plural == "mpijobs"
    assert resource_for("MPIJob", "kubeflow.org/v1").plural == "mpijobs.v1"
    assert kube.collection_path(RESOURCES["mpijobs.v1"], "ns") == "/apis/kubeflow.org/v1/namespaces/ns/mpijobs"
    assert (
        kube.collection_path(RESOURCES["services.serving.knative.dev"], None) == "/apis/serving.knative.dev/v1/services"
    )


def test_every_kind_and_version_is_served_once() -> None:
    assert len(GVK_TO_PLURAL) == len(RESOURCES)
    paths = [(r.api_version, r.path_name) for r in RESOURCES.values()]
    assert len(set(paths)) == len(paths)


@pytest.mark.parametrize(
    "kind, api_version, message",
    [
        pytest.param("Widget", None, "unknown kind 'Widget'", id="unknown kind"),
        pytest.param(
            "MPIJob", "kubeflow.org/v9", "not served; want kubeflow.org/v2beta1, kubeflow.org/v1", id="unserved version"
        ),
    ],
)
def test_what_is_not_served_is_invalid(kind: str, api_version: str | None, message: str) -> None:
    with pytest.raises(Invalid, match=message):
        resource_for(kind, api_version)
