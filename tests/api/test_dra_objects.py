"""DRA objects (resource.k8s.io/v1beta1) parse with one-line errors naming the object and the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kai_scheduler.api import PARSERS, ObjectError
from kai_scheduler.api.pod import Pod
from tests.api.test_objects import RESOURCECLAIM, RESOURCECLAIMTEMPLATE, RESOURCESLICE

JSON = dict[str, Any]


def _with(base: JSON, path: str, value: Any) -> JSON:
    out = copy.deepcopy(base)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


@pytest.mark.parametrize(
    ("kind", "obj", "message"),
    [
        (
            "ResourceClaim",
            _with(RESOURCECLAIM, "spec.devices.requests.0.allocationMode", "Some"),
            "ResourceClaim team-a/shared spec.devices.requests[0].allocationMode: unknown mode 'Some'; want "
            "ExactCount or All",
        ),
        (
            "ResourceClaim",
            _with(RESOURCECLAIM, "spec.devices.requests.0.count", 0),
            "ResourceClaim team-a/shared spec.devices.requests[0].count: want a positive integer, got 0",
        ),
        (
            "ResourceClaimTemplate",
            _with(RESOURCECLAIMTEMPLATE, "spec.spec.devices.requests.0", {"name": "gpu"}),
            "ResourceClaimTemplate team-a/one-gpu spec.spec.devices.requests[0].deviceClassName: missing device class",
        ),
        (
            "ResourceSlice",
            _with(RESOURCESLICE, "spec.allNodes", True),
            "ResourceSlice node-1-gpu spec: exactly one of nodeName, nodeSelector and allNodes must be set",
        ),
        (
            "ResourceSlice",
            _with(RESOURCESLICE, "spec.devices.0.basic.attributes.index", {"float": 1.5}),
            "ResourceSlice node-1-gpu spec.devices[0].basic.attributes.index: expected one of bool, int, string or "
            "version, got {'float': 1.5}",
        ),
        (
            "ResourceClaim",
            _with(RESOURCECLAIM, "status.allocation.devices.results.0", {"request": "gpu"}),
            "ResourceClaim team-a/shared status.allocation.devices.results[0]: request, driver, pool and device must "
            "all be set",
        ),
    ],
)
def test_a_bad_dra_object_is_one_line_naming_the_field(kind: str, obj: JSON, message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        PARSERS[kind](obj)
    assert str(caught.value) == message


def test_a_pod_claim_names_a_claim_or_a_template_not_both() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "t"}],
        },
    }
    with pytest.raises(ObjectError) as caught:
        Pod.from_dict(pod)
    assert str(caught.value) == (
        "Pod ns/p spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName must be set"
    )
