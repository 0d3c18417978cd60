"""HAMi-core isolation end to end (KAI's `hamicore` plugins): the binder, restarted with `--hami-core-enabled` as
its ServiceAccount, writes each fractional pod's `CUDA_DEVICE_MEMORY_LIMIT` into the ConfigMap and key that the
webhook's env names. The API server here calls no webhook, so the test gives the pods what `kai admission
--hami-core-enabled` gives them (its mutation, run in-process); the fake nodes' GPUs have 81920 MiB
(`kai fake-nodes`' default `nvidia.com/gpu.memory`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kai_scheduler.admission import pod as podhook
from kai_scheduler.admission import podmutate
from kai_scheduler.store.interface import JSON
from tests.admission import builders as admission_builders
from tests.e2e.harness import NAMESPACE, Cluster, pod

HAMI = podhook.PodSettings(gpu_sharing_enabled=True, hami_core_enabled=True)


@pytest.fixture
def hami_binder(clean: Cluster) -> Iterator[Cluster]:
    processes = clean.processes
    processes.kill("binder")
    processes.start_component("binder", "--hami-core-enabled")
    try:
        yield clean
    finally:
        processes.kill("binder")
        processes.start_component("binder")


def _as_the_webhook_gives_it(obj: JSON) -> JSON:
    verdict = podmutate.mutate(admission_builders.rev(obj), HAMI)
    assert verdict.allowed
    return admission_builders.apply(obj, verdict.patch)


def _memory_limit_ref(obj: JSON) -> JSON:
    [var] = [e for e in obj["spec"]["containers"][0]["env"] if e["name"] == "CUDA_DEVICE_MEMORY_LIMIT"]
    ref: JSON = var["valueFrom"]["configMapKeyRef"]
    return ref


def test_the_binder_writes_the_memory_limit_the_webhooks_env_reads(hami_binder: Cluster) -> None:
    """Half a GPU is 40960 MiB; 10000 MiB of GPU memory is the portion 0.13 (rounded up), so 10649 MiB."""
    cluster = hami_binder
    memory = pod("hami-mem", labels={"app": "hami"}, annotations={"gpu-memory": "10000"})
    memory["spec"]["containers"][0]["resources"]["limits"] = {}
    fraction = _as_the_webhook_gives_it(pod("hami-frac", gpus=0.5, labels={"app": "hami"}))
    memory = _as_the_webhook_gives_it(memory)
    for obj in (fraction, memory):
        cluster.create(obj)
    cluster.wait("both fractional pods bound", lambda: len(cluster.bound("app=hami")) == 2)
    for obj, limit in ((fraction, "40960m"), (memory, "10649m")):
        ref = _memory_limit_ref(obj)
        assert ref["optional"] is True
        configmap = cluster.store.get("configmaps", ref["name"], NAMESPACE)
        assert configmap["data"][ref["key"]] == limit, configmap
        assert configmap["data"]["NVIDIA_VISIBLE_DEVICES"], configmap
