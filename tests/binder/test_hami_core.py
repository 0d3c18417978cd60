"""HAMi-core isolation at bind time (KAI's binder plugin `hamicore`): with `hami_core` on, a shared-GPU pod's
capabilities ConfigMap gets `CUDA_DEVICE_MEMORY_LIMIT` = its node's GPU memory × its portion, in MiB with an `m`."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kai_scheduler.admission import pod as podhook
from kai_scheduler.admission import podmutate
from kai_scheduler.api import bindrequest
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.binder import reservation
from kai_scheduler.binder.binder import Binder
from kai_scheduler.binder.plugins import hamicore
from kai_scheduler.cluster.resources import gpu_portion
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.admission import builders as admission_builders

JSON = dict[str, Any]
PREFIX = "p-bcdfghj"  # the pod's runai/shared-gpu-configmap, as the webhook names it
CAPABILITIES = f"{PREFIX}-shared-gpu-0"


def _request(pod: str, portion: str, groups: list[str], kind: str = "Fraction") -> JSON:
    out = b.bind_request(pod, "n1")
    out["spec"].update(
        {
            "receivedResourceType": kind,
            "receivedGPU": {"count": len(groups), "portion": portion},
            "selectedGPUGroups": groups,
        }
    )
    return out


def _bind(*objects: JSON, gpu_memory: int | None = 81920, hami: bool = True) -> MemoryStore:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4, gpu_memory=gpu_memory), *objects])
    binder = Binder(store, clock, reservation.ReservationConfig(assign_indices=True), hami_core=hami)
    assert binder.reconcile().bound == ["ns/p"]
    return store


def _capabilities(store: MemoryStore, name: str = CAPABILITIES) -> dict[str, str]:
    data: dict[str, str] = store.get("configmaps", name, b.NAMESPACE)["data"]
    return data


def test_a_fraction_pod_gets_its_portion_of_the_gpus_memory() -> None:
    pod = b.pod("p", fraction=0.5, annotations={"runai/shared-gpu-configmap": PREFIX})
    store = _bind(pod, _request("p", "0.50", ["g1"]))
    assert _capabilities(store) == {
        "NVIDIA_VISIBLE_DEVICES": "0",
        "RUNAI_NUM_OF_GPUS": "0.5",
        "CUDA_DEVICE_MEMORY_LIMIT": "40960m",
    }


def test_a_memory_pod_gets_the_memory_of_the_portion_the_scheduler_rounded_it_to() -> None:
    """4096 MiB of a 15360 MiB GPU is the portion 0.27 (rounded up to two decimals), so 4147 MiB: KAI's example."""
    pod = b.pod("p", gpu_memory=4096, annotations={"runai/shared-gpu-configmap": PREFIX})
    meta = ObjectMeta(name="p", namespace=b.NAMESPACE, uid="pod-ns-p")
    portion = gpu_portion(4096, 15360)
    written = bindrequest.for_pod(meta, "n1", gpu_count=1, portion=portion, groups=("g1",), resource_type="Fraction")
    store = _bind(pod, written.to_dict(), gpu_memory=15360)
    assert _capabilities(store)["CUDA_DEVICE_MEMORY_LIMIT"] == "4147m"
    assert store.get("configmaps", f"{CAPABILITIES}-evar", b.NAMESPACE)["data"] == {"RUNAI_GPU_MEMORY_MIB": "4096"}


def test_a_pod_on_several_devices_gets_the_limit_of_each_device() -> None:
    """`gpu-fraction-num-devices: 2` of 0.5: half of each GPU, one value that HAMi-core applies per device."""
    annotations = {"runai/shared-gpu-configmap": PREFIX, "gpu-fraction-num-devices": "2"}
    store = _bind(b.pod("p", fraction=0.5, annotations=annotations), _request("p", "0.50", ["g1", "g2"]))
    data = _capabilities(store)
    assert (data["NVIDIA_VISIBLE_DEVICES"], data["CUDA_DEVICE_MEMORY_LIMIT"]) == ("0,1", "40960m")


def test_the_named_fraction_container_gets_its_own_configmap() -> None:
    annotations = {"runai/shared-gpu-configmap": PREFIX, "gpu-fraction-container-name": "gpu"}
    pod = b.pod("p", fraction=0.25, annotations=annotations)
    pod["spec"]["containers"].append({"name": "gpu", "resources": {}})
    store = _bind(pod, _request("p", "0.25", ["g1"]))
    assert _capabilities(store, f"{PREFIX}-shared-gpu-1")["CUDA_DEVICE_MEMORY_LIMIT"] == "20480m"


def test_off_by_default() -> None:
    pod = b.pod("p", fraction=0.5, annotations={"runai/shared-gpu-configmap": PREFIX})
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.node("n1", gpus=4, gpu_memory=81920), pod, _request("p", "0.50", ["g1"])])
    assert Binder(store, clock, reservation.ReservationConfig(assign_indices=True)).reconcile().bound == ["ns/p"]
    assert "CUDA_DEVICE_MEMORY_LIMIT" not in _capabilities(store)


def test_a_node_without_the_gpu_memory_label_binds_without_a_limit_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pod = b.pod("p", fraction=0.5, annotations={"runai/shared-gpu-configmap": PREFIX})
    with caplog.at_level(logging.WARNING):
        store = _bind(pod, _request("p", "0.50", ["g1"]), gpu_memory=None)
    assert "CUDA_DEVICE_MEMORY_LIMIT" not in _capabilities(store)
    assert (
        "CUDA_DEVICE_MEMORY_LIMIT not written for pod ns/p: node n1 has no nvidia.com/gpu.memory label" in caplog.text
    )


def test_a_missing_node_fails_the_bind_with_the_reason() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    pod = b.pod("p", fraction=0.5, annotations={"runai/shared-gpu-configmap": PREFIX})
    request = _request("p", "0.50", ["g1"])
    request["spec"]["selectedNode"] = "gone"
    store.add_many([b.node("n1", gpus=4, gpu_memory=81920), pod, request])
    binder = Binder(store, clock, reservation.ReservationConfig(assign_indices=True), hami_core=True)
    assert binder.reconcile().failed == [("ns/p", "NotFound: nodes gone not found")]


def _limit(label: str | None, portion: float, kind: str = "Fraction") -> str | None:
    labels = {} if label is None else {"nvidia.com/gpu.memory": label}
    br = BindRequest.from_dict(_request("p", f"{portion}", ["g1"], kind))
    return hamicore.memory_limit({"metadata": {"labels": labels}}, br)


@pytest.mark.parametrize(
    "label, portion, kind, expected",
    [
        pytest.param("81920", 0.5, "Fraction", "40960m", id="half of an 80 GiB GPU"),
        pytest.param("15360", 0.27, "Fraction", "4147m", id="rounded down to a whole MiB"),
        pytest.param("100", 0.29, "Fraction", "28m", id="float product 28.999… truncated, as Go's int64()"),
        pytest.param("+100", 0.5, "Fraction", "50m", id="a sign, as Go's ParseInt takes"),
        pytest.param("1", 0.5, "Fraction", None, id="zero MiB: none"),
        pytest.param("0", 0.5, "Fraction", None, id="no memory"),
        pytest.param("-8", 0.5, "Fraction", None, id="negative memory"),
        pytest.param("80Gi", 0.5, "Fraction", None, id="not a whole number"),
        pytest.param("1_000", 0.5, "Fraction", None, id="Python's digit separator, not Go's"),
        pytest.param(None, 0.5, "Fraction", None, id="no label"),
        pytest.param("81920", 0.0, "Fraction", None, id="no portion"),
        pytest.param("81920", float("nan"), "Fraction", None, id="a portion that is not a number"),
        pytest.param("81920", float("inf"), "Fraction", None, id="an infinite portion"),
        pytest.param("81920", 1.0, "Regular", None, id="not a shared-GPU bind"),
    ],
)
def test_memory_limit(label: str | None, portion: float, kind: str, expected: str | None) -> None:
    assert _limit(label, portion, kind) == expected


def test_the_webhooks_env_reads_the_key_the_binder_writes() -> None:
    """The two halves agree: the mutated pod's env names the ConfigMap and key that the binder fills."""
    raw = admission_builders.pod(name="p", annotations={"gpu-fraction": "0.5"})
    raw["metadata"]["namespace"] = b.NAMESPACE
    settings = podhook.PodSettings(gpu_sharing_enabled=True, hami_core_enabled=True)
    verdict = podmutate.mutate(admission_builders.rev(raw), settings, lambda: "bcdfghj")
    pod = admission_builders.apply(raw, verdict.patch)
    pod["metadata"]["uid"] = "pod-ns-p"
    [var] = [e for e in pod["spec"]["containers"][0]["env"] if e["name"] == "CUDA_DEVICE_MEMORY_LIMIT"]
    ref = var["valueFrom"]["configMapKeyRef"]
    store = _bind(pod, _request("p", "0.50", ["g1"]))
    assert _capabilities(store, ref["name"])[ref["key"]] == "40960m"
