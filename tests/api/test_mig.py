"""MIG profiles and MIG requests on pods: parsed, counted in GPU units, bad ones one error naming the field."""

from __future__ import annotations

import pytest

from kai_scheduler.api import ObjectError, mig
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.resources import GpuRequest


def _pod(limits: dict[str, str], annotations: dict[str, str] | None = None) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
        }
    )


@pytest.mark.parametrize(
    "name, slices, memory",
    [("1g.10gb", 1, 10), ("3g.40gb", 3, 40), ("7g.80gb", 7, 80), ("1g.10gb+me", 1, 10), ("2g.12gb", 2, 12)],
)
def test_profiles_parse_to_slices_and_memory(name: str, slices: int, memory: int) -> None:
    assert mig.parse_profile(name) == mig.Profile(name, slices, memory)
    assert mig.gpu_units(mig.RESOURCE_PREFIX + name) == slices


@pytest.mark.parametrize("name", ["", "1g", "g.10gb", "1g.10", "0g.10gb", "1g.10GB", "big"])
def test_other_names_are_not_profiles(name: str) -> None:
    assert mig.parse_profile(name) is None
    assert mig.gpu_units(mig.RESOURCE_PREFIX + name) == 0
    assert mig.gpu_units("nvidia.com/gpu") == 0


def test_a_pod_requesting_instances_is_a_mig_request_counted_by_slices() -> None:
    pod = _pod({"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-3g.40gb": "1"})
    assert pod.gpu == GpuRequest(mig=(("1g.10gb", 2), ("3g.40gb", 1)))
    assert pod.gpu.is_mig and pod.gpu.is_gpu and not pod.gpu.is_shared
    assert pod.gpu.mig_units == 5
    assert pod.requests["nvidia.com/mig-1g.10gb"] == 2


def test_a_mig_pod_writes_its_instances_as_limits_and_reads_back_equal() -> None:
    pod = _pod({"nvidia.com/mig-1g.10gb": "1"})
    container = pod.to_dict()["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert Pod.from_dict(pod.to_dict()).gpu == pod.gpu


@pytest.mark.parametrize(
    "limits, annotations, message",
    [
        pytest.param(
            {"nvidia.com/mig-huge": "1"},
            {},
            "Pod ns/p spec.containers.resources.nvidia.com/mig-huge: unknown MIG profile 'huge'; want "
            "<g>g.<m>gb, e.g. 1g.10gb or 3g.40gb",
            id="an unknown profile",
        ),
        pytest.param(
            {"nvidia.com/mig-1g.10gb": "500m"},
            {},
            "Pod ns/p spec.containers.resources.nvidia.com/mig-1g.10gb: MIG instance count 0.5 is not a whole number",
            id="half an instance",
        ),
        pytest.param(
            {"nvidia.com/mig-1g.10gb": "1"},
            {"gpu-fraction": "0.5"},
            "Pod ns/p metadata.annotations: a fractional GPU request cannot be combined with MIG instances",
            id="an instance and a fraction",
        ),
    ],
)
def test_a_bad_mig_request_is_one_error_naming_the_field(
    limits: dict[str, str], annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(ObjectError) as err:
        _pod(limits, annotations)
    assert str(err.value) == message
