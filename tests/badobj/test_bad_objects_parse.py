"""Bad fields that fuzzing found (tests/badobj/test_bad_objects_parse.py walks every field): each parses to the
one user error type, naming the object and the field."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api import PARSERS, ObjectError
from tests import builders as b
from tests.badobj import mutations as m

JSON = dict[str, Any]


def _pod(**fields: Any) -> JSON:
    return b.pod("p", **fields)


def _set(obj: JSON, path: str, value: Any) -> JSON:
    """`obj` with the field at dotted `path` (list indexes as numbers) set to `value`."""
    keys = [int(k) if k.isdigit() else k for k in path.split("|")]
    return m.apply(obj, m.Mutation(tuple(keys), value))


AFFINITY = "spec|affinity|nodeAffinity|requiredDuringSchedulingIgnoredDuringExecution|nodeSelectorTerms|0"


@pytest.mark.parametrize(
    "obj, field, words",
    [
        pytest.param(
            _set(b.node("n"), "status|allocatable|cpu", "1e400"),
            "status.allocatable.cpu",
            "quantity '1e400' is too large",
            id="a CPU quantity past int64 (was OverflowError)",
        ),
        pytest.param(
            _set(b.node("n"), "status|allocatable|memory", "9" * 40),
            "status.allocatable.memory",
            "is too large",
            id="a memory quantity of 40 digits (was OverflowError)",
        ),
        pytest.param(
            _set(b.node("n"), "status|allocatable|nvidia.com/gpu", "1e99999999999"),
            "status.allocatable.nvidia.com/gpu",
            "is too large",
            id="a GPU count with a huge exponent (was decimal Overflow)",
        ),
        pytest.param(
            _set(_pod(), "metadata|annotations|gpu-memory", "1e400"),
            "metadata.annotations.gpu-memory",
            "want a positive number of MiB",
            id="a gpu-memory annotation past int64 (was OverflowError in its hint)",
        ),
        pytest.param(
            _set(b.device_class(), "spec|selectors|0|cel", "abc"),
            "spec.selectors[0]",
            "expected a selector with a cel expression",
            id="a DeviceClass selector whose cel is a string (was AttributeError)",
        ),
        pytest.param(
            _set(b.claim("c", allocated=[("p", "d")]), "status|allocation|devices|results", 1),
            "status.allocation.devices.results",
            "expected a list of device results",
            id="a ResourceClaim whose allocation results is a number (was TypeError)",
        ),
        pytest.param(
            _set(b.node("n", taints=["a=b:NoSchedule"]), "spec|taints|0|effect", []),
            "spec.taints[0].effect",
            "unknown effect []",
            id="a taint effect that is a list (was TypeError: unhashable)",
        ),
        pytest.param(
            _set(_pod(node_affinity=[b.term(b.expr("k", "In", "v"))]), f"{AFFINITY}|matchExpressions|0|operator", {}),
            f"{AFFINITY.replace('|', '.').replace('.0', '[0]')}.matchExpressions[0].operator",
            "unknown operator {}",
            id="a selector operator that is a mapping (was TypeError: unhashable)",
        ),
        pytest.param(
            _set(_pod(node_affinity=[b.term(b.expr("k", "In", "v"))]), f"{AFFINITY}|matchFields", 3),
            f"{AFFINITY.replace('|', '.').replace('.0', '[0]')}.matchFields",
            "expected a list",
            id="a node selector term's matchFields that is a number (was TypeError)",
        ),
    ],
)
def test_a_bad_field_found_by_fuzzing_is_an_object_error(obj: JSON, field: str, words: str) -> None:
    with pytest.raises(ObjectError) as caught:
        PARSERS[obj["kind"]](obj)
    assert caught.value.field == field
    assert words in caught.value.message
