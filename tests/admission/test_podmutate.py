"""Pod mutating webhook: GPU sharing wiring, device access blocking and runtime class enforcement."""

from __future__ import annotations

import pytest

from kai_scheduler.admission import gpusharing, podmutate
from kai_scheduler.admission import pod as podhook
from kai_scheduler.api import shared_gpu
from tests.admission import builders

SETTINGS = podhook.PodSettings(gpu_sharing_enabled=True)  # GPU sharing on: fractional pods are wired


def fixed() -> str:
    return "abcdefg"


def mutated(obj: builders.JSON, settings: podhook.PodSettings = SETTINGS, **kw: object) -> builders.JSON:
    v = podmutate.mutate(builders.rev(obj, **kw), settings, fixed)
    assert v.allowed
    return builders.apply(obj, v.patch)


def env(container: builders.JSON) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_fraction_pod_reads_its_gpu_from_the_shared_gpu_configmaps() -> None:
    out = mutated(builders.pod(name="train-0", annotations={"gpu-fraction": "0.5"}))
    assert out["metadata"]["annotations"][gpusharing.ANNOTATION_SHARED_GPU_CONFIGMAP] == "train-0-abcdefg"
    main = out["spec"]["containers"][0]
    caps = "train-0-abcdefg-shared-gpu-0"
    assert env(main) == {
        "NVIDIA_VISIBLE_DEVICES": {"configMapKeyRef": {"name": caps, "key": "NVIDIA_VISIBLE_DEVICES"}},
        "RUNAI_NUM_OF_GPUS": {"configMapKeyRef": {"name": caps, "key": "RUNAI_NUM_OF_GPUS"}},
    }
    assert main["envFrom"] == [{"configMapRef": {"name": f"{caps}-evar"}}]
    assert out["spec"]["runtimeClassName"] == "nvidia"


def test_memory_pod_is_wired_the_same_way() -> None:
    out = mutated(builders.pod(annotations={"gpu-memory": "2000"}))
    assert "NVIDIA_VISIBLE_DEVICES" in env(out["spec"]["containers"][0])
    assert out["spec"]["runtimeClassName"] == "nvidia"


def test_named_container_receives_the_fraction() -> None:
    containers: list[builders.JSON] = [
        {"name": "a", "image": "i"},
        {"name": "b", "image": "i", "env": [{"name": "X", "value": "1"}]},
    ]
    out = mutated(
        builders.pod(annotations={"gpu-fraction": "0.3", "gpu-fraction-container-name": "b"}, containers=containers)
    )
    a, b = out["spec"]["containers"]
    assert "env" not in a
    assert set(env(b)) == {"X", "NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS"}
    assert b["envFrom"][0]["configMapRef"]["name"].endswith("-shared-gpu-1-evar")


def test_user_value_of_visible_devices_is_replaced() -> None:
    containers = [{"name": "m", "image": "i", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
    out = mutated(builders.pod(annotations={"gpu-fraction": "0.5"}, containers=containers))
    names = [e["name"] for e in out["spec"]["containers"][0]["env"]]
    assert names.count("NVIDIA_VISIBLE_DEVICES") == 1
    assert "configMapKeyRef" in env(out["spec"]["containers"][0])["NVIDIA_VISIBLE_DEVICES"]  # type: ignore[operator]


def test_existing_configmap_annotation_is_kept() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5", gpusharing.ANNOTATION_SHARED_GPU_CONFIGMAP: "given"})
    out = mutated(obj)
    assert out["spec"]["containers"][0]["envFrom"] == [{"configMapRef": {"name": "given-shared-gpu-0-evar"}}]


def test_generate_name_is_the_base_and_long_names_are_cut() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5"})
    obj["metadata"] = {"generateName": "x" * 60 + "-", "namespace": "team-a", "annotations": {"gpu-fraction": "0.5"}}
    prefix = mutated(obj)["metadata"]["annotations"][gpusharing.ANNOTATION_SHARED_GPU_CONFIGMAP]
    assert prefix == "x" * shared_gpu.MAX_BASE_LENGTH + "-abcdefg"


def test_random_suffix_uses_the_safe_alphabet() -> None:
    suffix = gpusharing.random_suffix()
    assert len(suffix) == shared_gpu.RANDOM_LENGTH
    assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_existing_runtime_class_is_kept() -> None:
    out = mutated(builders.pod(annotations={"gpu-fraction": "0.5"}, runtimeClassName="custom"))
    assert out["spec"]["runtimeClassName"] == "custom"


def test_runtime_class_is_configurable_and_can_be_off() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5"})
    assert mutated(obj, podhook.PodSettings(runtime_class_name="gpu"))["spec"]["runtimeClassName"] == "gpu"
    assert "runtimeClassName" not in mutated(obj, podhook.PodSettings(runtime_class_name=""))["spec"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(builders.pod(), id="no GPU"),
        pytest.param(builders.pod(gpu="1"), id="whole GPU"),
        pytest.param(
            builders.pod(annotations={"gpu-fraction": "0.5"}, scheduler="default-scheduler"), id="other scheduler"
        ),
        pytest.param(builders.pod(annotations={"gpu-fraction": "nope"}), id="unparsable (the validator denies it)"),
    ],
)
def test_no_patch(obj: builders.JSON) -> None:
    v = podmutate.mutate(builders.rev(obj), SETTINGS, fixed)
    assert v.allowed
    assert v.patch == []


def test_update_is_not_mutated() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5"})
    assert podmutate.mutate(builders.rev(obj, operation="UPDATE", old=obj), SETTINGS, fixed).patch == []


def test_sharing_disabled_skips_the_sharing_mutation() -> None:
    out = mutated(builders.pod(annotations={"gpu-fraction": "0.5"}), podhook.PodSettings(gpu_sharing_enabled=False))
    assert "env" not in out["spec"]["containers"][0]
    assert gpusharing.ANNOTATION_SHARED_GPU_CONFIGMAP not in out["metadata"]["annotations"]


# HAMi-core isolation (KAI's admission plugin `hamicore`, `--hami-core-enabled`).
HAMI = podhook.PodSettings(gpu_sharing_enabled=True, hami_core_enabled=True)


def memory_limit(configmap: str) -> builders.JSON:
    ref = {"name": configmap, "key": "CUDA_DEVICE_MEMORY_LIMIT", "optional": True}
    return {"configMapKeyRef": ref}


@pytest.mark.parametrize("annotation", [{"gpu-fraction": "0.5"}, {"gpu-memory": "4096"}])
def test_hami_core_gives_the_fraction_container_its_memory_limit_from_the_capabilities_configmap(
    annotation: dict[str, str],
) -> None:
    out = mutated(builders.pod(name="train-0", annotations=annotation), HAMI)
    caps = "train-0-abcdefg-shared-gpu-0"
    assert env(out["spec"]["containers"][0]) == {
        "NVIDIA_VISIBLE_DEVICES": {"configMapKeyRef": {"name": caps, "key": "NVIDIA_VISIBLE_DEVICES"}},
        "RUNAI_NUM_OF_GPUS": {"configMapKeyRef": {"name": caps, "key": "RUNAI_NUM_OF_GPUS"}},
        "CUDA_DEVICE_MEMORY_LIMIT": memory_limit(caps),
    }


def test_hami_core_limits_the_named_container_only() -> None:
    containers: list[builders.JSON] = [
        {"name": "sidecar", "image": "i"},
        {"name": "gpu", "image": "i", "env": [{"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "80g"}]},
    ]
    annotations = {"gpu-fraction": "0.5", "gpu-fraction-container-name": "gpu"}
    out = mutated(builders.pod(annotations=annotations, containers=containers), HAMI)
    sidecar, gpu = out["spec"]["containers"]
    assert "env" not in sidecar
    assert env(gpu)["CUDA_DEVICE_MEMORY_LIMIT"] == memory_limit("p-abcdefg-shared-gpu-1"), "the user's value replaced"
    assert [e["name"] for e in gpu["env"]].count("CUDA_DEVICE_MEMORY_LIMIT") == 1


def test_hami_core_limits_a_named_init_container_by_its_init_configmap() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "warm"})
    obj["spec"]["initContainers"] = [{"name": "warm", "image": "i"}]
    out = mutated(obj, HAMI)
    assert env(out["spec"]["initContainers"][0])["CUDA_DEVICE_MEMORY_LIMIT"] == memory_limit(
        "p-abcdefg-shared-gpu-init-0"
    )
    assert "env" not in out["spec"]["containers"][0]


def test_hami_core_keeps_a_given_configmap_annotation() -> None:
    annotations = {"gpu-fraction": "0.5", gpusharing.ANNOTATION_SHARED_GPU_CONFIGMAP: "given"}
    out = mutated(builders.pod(annotations=annotations), HAMI)
    assert env(out["spec"]["containers"][0])["CUDA_DEVICE_MEMORY_LIMIT"] == memory_limit("given-shared-gpu-0")


@pytest.mark.parametrize(
    "obj, settings",
    [
        pytest.param(builders.pod(gpu="1"), HAMI, id="a whole-GPU pod"),
        pytest.param(builders.pod(), HAMI, id="a pod without GPUs"),
        pytest.param(
            builders.pod(annotations={"gpu-fraction": "0.5"}),
            podhook.PodSettings(hami_core_enabled=True),
            id="GPU sharing off (the validator denies the pod)",
        ),
        pytest.param(builders.pod(annotations={"gpu-fraction": "0.5"}), SETTINGS, id="hami-core off, the default"),
    ],
)
def test_no_memory_limit(obj: builders.JSON, settings: podhook.PodSettings) -> None:
    out = mutated(obj, settings)
    for container in out["spec"]["containers"]:
        assert "CUDA_DEVICE_MEMORY_LIMIT" not in env(container)


def test_hami_core_is_off_by_default() -> None:
    assert not podhook.PodSettings().hami_core_enabled


BLOCK = podhook.PodSettings(block_nvidia_visible_devices=True, gpu_sharing_enabled=True)


def test_block_visible_devices_on_containers_without_gpus() -> None:
    containers: list[builders.JSON] = [
        {"name": "gpu", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        {"name": "mig", "image": "i", "resources": {"limits": {"nvidia.com/mig-1g.5gb": "1"}}},
        {"name": "dra", "image": "i", "resources": {"claims": [{"name": "gpu"}]}},
        {"name": "cpu", "image": "i", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]},
    ]
    out = mutated(builders.pod(containers=containers, initContainers=[{"name": "init", "image": "i"}]), BLOCK)
    by_name = {c["name"]: env(c) for c in out["spec"]["containers"] + out["spec"]["initContainers"]}
    assert by_name == {
        "gpu": {},
        "mig": {},
        "dra": {},
        "cpu": {"NVIDIA_VISIBLE_DEVICES": "void"},
        "init": {"NVIDIA_VISIBLE_DEVICES": "void"},
    }


def test_block_spares_the_fraction_container() -> None:
    containers = [{"name": "main", "image": "i"}, {"name": "side", "image": "i"}]
    out = mutated(builders.pod(annotations={"gpu-fraction": "0.5"}, containers=containers), BLOCK)
    main, side = out["spec"]["containers"]
    assert "configMapKeyRef" in env(main)["NVIDIA_VISIBLE_DEVICES"]  # type: ignore[operator]
    assert env(side) == {"NVIDIA_VISIBLE_DEVICES": "void"}


def test_no_blocking_by_default() -> None:
    v = podmutate.mutate(builders.rev(builders.pod()), SETTINGS, fixed)
    assert v.patch == []


def test_patch_replaces_whole_fields() -> None:
    obj = builders.pod(annotations={"gpu-fraction": "0.5"})
    ops = {(op["op"], op["path"]) for op in podmutate.mutate(builders.rev(obj), SETTINGS, fixed).patch}
    assert ops == {
        ("replace", "/metadata/annotations"),
        ("replace", "/spec/containers"),
        ("add", "/spec/runtimeClassName"),
    }


def test_json_patch_removes_and_adds() -> None:
    before = {"metadata": {"annotations": {"a": "1"}}, "spec": {"runtimeClassName": "x"}}
    after = {"metadata": {}, "spec": {"runtimeClassName": "x", "initContainers": []}}
    assert podmutate.json_patch(before, after) == [
        {"op": "remove", "path": "/metadata/annotations"},
        {"op": "add", "path": "/spec/initContainers", "value": []},
    ]
