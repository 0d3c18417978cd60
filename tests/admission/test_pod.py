"""Pod validating webhook: every bad GPU request form of BEHAVIOR.md §2, §6 and §8.3."""

from __future__ import annotations

import pytest

from kai_scheduler.admission import pod as podhook
from kai_scheduler.api import Pod
from kai_scheduler.api.errors import ObjectError
from tests.admission import builders

SETTINGS = podhook.PodSettings(gpu_sharing_enabled=True)  # GPU sharing on, to check its request forms
NO_SHARING = podhook.PodSettings(gpu_sharing_enabled=False)
INIT = [{"name": "init", "image": "i"}]
TWO = [{"name": "main", "image": "i"}, {"name": "side", "image": "i"}]


def verdict(obj: builders.JSON, settings: podhook.PodSettings = SETTINGS, **kw: object) -> tuple[bool, str]:
    v = podhook.validate(builders.rev(obj, **kw), settings)
    return v.allowed, v.message


BAD = [
    pytest.param({"gpu-fraction": "0"}, None, "gpu-fraction: want a number in (0, 1]", id="fraction 0"),
    pytest.param({"gpu-fraction": "-0.5"}, None, "gpu-fraction: want a number in (0, 1]", id="fraction negative"),
    pytest.param({"gpu-fraction": "1"}, None, "gpu-fraction: want a number in (0, 1), got '1'", id="fraction 1"),
    pytest.param({"gpu-fraction": "1.5"}, None, "gpu-fraction: want a number in (0, 1]", id="fraction above 1"),
    pytest.param({"gpu-fraction": "half"}, None, "gpu-fraction: want a number", id="fraction not a number"),
    pytest.param({"gpu-fraction": ""}, None, "gpu-fraction: want a number", id="fraction empty"),
    pytest.param({"gpu-memory": "0"}, None, "gpu-memory: want a positive number of MiB", id="memory 0"),
    pytest.param({"gpu-memory": "-100"}, None, "gpu-memory: want a positive", id="memory negative"),
    pytest.param({"gpu-memory": "1.5"}, None, "gpu-memory: want a positive", id="memory not an integer"),
    pytest.param({"gpu-memory": "2Gi"}, None, "gpu-memory: want a positive", id="memory with a unit"),
    pytest.param(
        {"gpu-fraction": "0.5", "gpu-memory": "1000"},
        None,
        "gpu-fraction and gpu-memory are mutually exclusive",
        id="fraction and memory",
    ),
    pytest.param({"gpu-fraction": "0.5"}, "1", "cannot be combined with nvidia.com/gpu", id="fraction and whole"),
    pytest.param({"gpu-memory": "1000"}, "2", "cannot be combined with nvidia.com/gpu", id="memory and whole"),
    pytest.param({"gpu-fraction-num-devices": "2"}, None, "needs gpu-fraction or gpu-memory", id="num-devices alone"),
    pytest.param(
        {"gpu-fraction-num-devices": "2"}, "1", "needs gpu-fraction or gpu-memory", id="num-devices with whole GPUs"
    ),
    pytest.param(
        {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"},
        None,
        "gpu-fraction-num-devices: want a positive integer",
        id="num-devices 0",
    ),
    pytest.param(
        {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "-2"},
        None,
        "gpu-fraction-num-devices: want a positive integer",
        id="num-devices negative",
    ),
    pytest.param(
        {"gpu-memory": "100", "gpu-fraction-num-devices": "two"},
        None,
        "gpu-fraction-num-devices: want a positive integer",
        id="num-devices not a number",
    ),
    pytest.param({"mps": "true"}, None, "mps: MPS needs a fractional GPU request", id="mps without GPU"),
    pytest.param({"mps": "true"}, "1", "mps: MPS needs a fractional GPU request", id="mps with whole GPU"),
    pytest.param(
        {"gpu-fraction": "0.5", "gpu-fraction-container-name": "nope"},
        None,
        "gpu-fraction-container-name: no container named 'nope'; the pod has main",
        id="unknown container",
    ),
    pytest.param({}, "1.5", "GPU count 1.5 is not whole", id="whole GPU count not whole"),
]


@pytest.mark.parametrize("annotations, gpu, want", BAD)
def test_bad_gpu_requests_are_denied(annotations: dict[str, str], gpu: str | None, want: str) -> None:
    allowed, message = verdict(builders.pod(annotations=annotations, gpu=gpu))
    assert not allowed
    assert message.startswith("Pod team-a/p ")
    assert want in message


@pytest.mark.parametrize(
    "annotations, gpu, containers",
    [
        pytest.param({}, None, None, id="no GPU"),
        pytest.param({}, "2", None, id="whole GPUs"),
        pytest.param({"gpu-fraction": "0.5"}, None, None, id="fraction"),
        pytest.param({"gpu-fraction": "0.01"}, None, None, id="small fraction"),
        pytest.param({"gpu-memory": "2000"}, None, None, id="memory"),
        pytest.param({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, None, None, id="multi-device fraction"),
        pytest.param({"gpu-memory": "500", "gpu-fraction-num-devices": "3"}, None, None, id="multi-device memory"),
        pytest.param({"gpu-fraction": "0.5", "mps": "true"}, None, None, id="mps with fraction"),
        pytest.param({"gpu-memory": "100", "mps": "true"}, None, None, id="mps with memory"),
        pytest.param({"mps": "false"}, None, None, id="mps false"),
        pytest.param({"gpu-fraction": "0.5", "gpu-fraction-container-name": "side"}, None, TWO, id="named container"),
        pytest.param(
            {"gpu-fraction": "0.5", "gpu-fraction-container-name": "init"}, None, None, id="named init container"
        ),
    ],
)
def test_good_gpu_requests_are_allowed(
    annotations: dict[str, str], gpu: str | None, containers: list[builders.JSON] | None
) -> None:
    obj = builders.pod(annotations=annotations, gpu=gpu, containers=containers, initContainers=INIT)
    assert verdict(obj) == (True, "")


@pytest.mark.parametrize("annotations", [{"gpu-fraction": "0.5"}, {"gpu-memory": "1000"}], ids=["fraction", "memory"])
def test_fractions_are_denied_when_sharing_is_disabled(annotations: dict[str, str]) -> None:
    allowed, message = verdict(builders.pod(annotations=annotations), NO_SHARING)
    assert not allowed
    assert "GPU sharing is disabled" in message


def test_sharing_is_disabled_by_default_as_in_kai() -> None:
    allowed, message = verdict(builders.pod(annotations={"gpu-fraction": "0.5"}), podhook.PodSettings())
    assert (allowed, message) == (
        False,
        "Pod team-a/p metadata.annotations.gpu-fraction: GPU sharing is disabled in this cluster; ask for "
        "whole GPUs with nvidia.com/gpu",
    )


def test_whole_gpus_are_allowed_when_sharing_is_disabled() -> None:
    assert verdict(builders.pod(gpu="1"), NO_SHARING) == (True, "")


def test_pods_of_other_schedulers_are_not_checked() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "7"}, scheduler="default-scheduler")
    assert verdict(obj) == (True, "")


def test_scheduler_name_is_configurable() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "7"}, scheduler="other")
    allowed, _ = verdict(obj, podhook.PodSettings(scheduler_name="other"))
    assert not allowed


def test_message_is_the_scheduler_parsers() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5", "gpu-memory": "10"})
    with pytest.raises(ObjectError) as err:
        Pod.from_dict(obj)
    assert verdict(obj) == (False, str(err.value))


def test_other_fields_the_scheduler_rejects_are_denied() -> None:
    obj = builders.pod(tolerations=[{"key": "k", "operator": "Maybe"}])
    allowed, message = verdict(obj)
    assert not allowed
    assert "spec.tolerations[0].operator: unknown operator 'Maybe'" in message


def test_pod_with_only_a_generate_name_is_named_by_it() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "2"})
    obj["metadata"] = {"generateName": "job-", "namespace": "team-a", "annotations": {"gpu-fraction": "2"}}
    allowed, message = verdict(obj)
    assert not allowed
    assert message.startswith("Pod team-a/job- metadata.annotations.gpu-fraction:")


def test_update_that_introduces_a_problem_is_denied() -> None:
    old = builders.pod(annotations={"gpu-fraction": "0.5"})
    new = builders.pod(annotations={"gpu-fraction": "0.5", "mps": "true", "gpu-memory": "5"})
    allowed, _ = verdict(new, operation="UPDATE", old=old)
    assert not allowed


def test_update_of_a_pod_that_already_had_the_problem_is_allowed_with_a_warning() -> None:
    old = builders.pod(annotations={"gpu-fraction": "0.5"})
    new = builders.pod(annotations={"gpu-fraction": "0.5", "pod-group-name": "pg-1"})
    v = podhook.validate(builders.rev(new, operation="UPDATE", old=old), NO_SHARING)
    assert v.allowed
    assert "GPU sharing is disabled" in v.warnings[0]


def test_create_with_the_same_problem_is_still_denied() -> None:
    v = podhook.validate(builders.rev(builders.pod(annotations={"gpu-fraction": "0.5"})), NO_SHARING)
    assert not v.allowed
