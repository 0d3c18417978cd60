"""Bad objects on the wire, among good pods: a Queue in a cycle of parents, a PodGroup naming a missing queue, pods
asking for -1 GPU, a 2 MB annotation, wrong types in fields of every CRD (Queue, PodGroup, BindRequest, Topology).
Each bad object the API server stores carries one event naming its field, the good pods are bound as before, the
invariants hold (`invariants.settled`) and no component writes a traceback.

What a real kube-apiserver refuses at create (a negative GPU limit, annotations over 256 KiB, a wrong JSON type
in a field the CRD's structural schema types) is asserted refused there, naming the field, and is sent to the
components on the mock API server, which stores anything. Wrong types reach the components on a real server
through the parts a CRD types loosely: `x-kubernetes-preserve-unknown-fields` (a BindRequest's claim
allocation) and strings read as durations or numbers (a PodGroup's `stalenessGracePeriod`, a BindRequest's
`receivedGPU.portion`). The values are among tests/badobj/mutations.py's `BAD_VALUES`, which fuzzes every field
of these kinds in-process.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kai_scheduler.store.interface import Invalid
from tests.badobj import mutations as m
from tests.e2e import harness, invariants
from tests.e2e.harness import GPU, NAMESPACE, Cluster, pod, podgroup, queue, real_server

JSON = dict[str, Any]
TWO_MB = 2 * 1024 * 1024


@pytest.fixture
def watched(clean: Cluster) -> Iterator[Cluster]:
    """The suite's cluster, failing the test if a component wrote a traceback while it ran."""
    start = {name: len(clean.processes.log_of(name)) for name in clean.processes.running}
    yield clean
    tracebacks = {
        name: text[text.index("Traceback") :][:2000]
        for name in start
        if "Traceback" in (text := clean.processes.log_of(name)[start[name] :])
    }
    assert not tracebacks, f"tracebacks in the component logs: {tracebacks}"


@dataclass(frozen=True)
class Bad:
    """A bad object, the event the components tell it by (reason and the start of its message), and, where a
    real API server refuses it at create, the field its refusal names."""

    obj: JSON
    reason: str
    message: str
    refused_at: str = ""

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


def _events(cluster: Cluster, kind: str, name: str, reason: str) -> list[str]:
    return harness.event_messages(cluster, kind, name, reason, namespace=None)


def _submit(cluster: Cluster, bad: list[Bad]) -> list[Bad]:
    """Create each bad object; those a real server refuses are checked refused (naming their field) and left out."""
    stored = []
    for b in bad:
        if b.refused_at and real_server():
            with pytest.raises(Invalid) as refused:
                cluster.create(b.obj)
            fields = [field for field, _ in refused.value.causes]
            assert any(field.startswith(b.refused_at) for field in fields), (b.kind, b.name, refused.value)
            continue
        cluster.create(b.obj)
        stored.append(b)
    return stored


def _each_told(cluster: Cluster, stored: list[Bad]) -> None:
    def untold() -> list[str]:
        return [
            f"{b.kind} {b.name}: {b.reason} {b.message!r}, told {_events(cluster, b.kind, b.name, b.reason)}"
            for b in stored
            if not any(msg.startswith(b.message) for msg in _events(cluster, b.kind, b.name, b.reason))
        ]

    try:
        cluster.wait("each bad object told", lambda: not untold(), timeout=30)
    except AssertionError as err:
        raise AssertionError(f"untold: {untold()}\n{err}") from None
    for b in stored:
        told = [msg for msg in _events(cluster, b.kind, b.name, b.reason) if msg.startswith(b.message)]
        assert len(told) == 1, (b.kind, b.name, told)


def _good_pods_bound(cluster: Cluster, count: int) -> None:
    for i in range(count):
        cluster.create(pod(f"good-{i}", gpus=1))
    cluster.wait(
        f"the {count} good pods bound",
        lambda: sorted(p["metadata"]["name"] for p in cluster.bound("e2e=true")) == [f"good-{i}" for i in range(count)],
        timeout=30,
    )


def _cyclic_queue(name: str, parent: str) -> JSON:
    return queue(name, gpu_quota=4, parent=parent)


def _minus_one_gpu() -> JSON:
    obj = pod("minus-gpu", gpus=1)
    obj["spec"]["containers"][0]["resources"]["limits"][GPU] = "-1"
    return obj


def test_a_queue_cycle_a_missing_queue_and_minus_one_gpu_are_told_and_the_good_pods_bound(watched: Cluster) -> None:
    cycle = "queue 'e2e-cycle-a' is in a parent cycle (spec.parentQueue): e2e-cycle-a → e2e-cycle-b → e2e-cycle-a"
    bad = [
        Bad(_cyclic_queue("e2e-cycle-a", "e2e-cycle-b"), "QueueCycle", cycle),
        Bad(_cyclic_queue("e2e-cycle-b", "e2e-cycle-a"), "QueueCycle", "queue 'e2e-cycle-b' is in a parent cycle"),
        Bad(
            podgroup("in-cycle", min_member=1, queue="e2e-cycle-a"),
            "Unschedulable",
            f"QueueDoesNotExist: queue 'e2e-cycle-a' is left out of the queue tree: {cycle}.",
        ),
        Bad(
            podgroup("no-queue", min_member=1, queue="e2e-nowhere"),
            "Unschedulable",
            "QueueDoesNotExist: queue 'e2e-nowhere' does not exist.",
        ),
        Bad(
            pod("minus-fraction", gpus=0, annotations={"gpu-fraction": "-1"}),
            "InvalidObject",
            f"Pod {NAMESPACE}/minus-fraction metadata.annotations.gpu-fraction: want a number in (0, 1], got '-1'",
        ),
        Bad(
            pod("minus-memory", gpus=0, annotations={"gpu-memory": "-1"}),
            "InvalidObject",
            f"Pod {NAMESPACE}/minus-memory metadata.annotations.gpu-memory: want a positive number of MiB, got '-1'",
        ),
        Bad(
            _minus_one_gpu(),
            "InvalidObject",
            f"Pod {NAMESPACE}/minus-gpu spec.containers[0].resources.limits.{GPU}: negative quantity '-1'",
            refused_at=f"spec.containers[0].resources.limits[{GPU}]",
        ),
    ]
    stored = _submit(watched, bad)
    watched.create(pod("in-cycle-0", gpus=1, queue="e2e-cycle-a", group="in-cycle"))
    watched.create(pod("no-queue-0", gpus=1, queue="e2e-nowhere", group="no-queue"))
    _good_pods_bound(watched, 2)
    _each_told(watched, stored)
    for b in stored:  # the test's own bad requests, told and never bound: the invariants are of the rest
        if b.kind == "BindRequest":
            watched.store.delete("bindrequests", b.name, NAMESPACE)
    invariants.settled(watched)


def _annotated(name: str, key: str, size: int) -> JSON:
    return pod(name, gpus=0, annotations={key: "9" * size})


def test_a_2_mb_annotation_is_refused_or_told_and_the_good_pods_bound(watched: Cluster) -> None:
    """A real server refuses annotations over 256 KiB in all; 200 KB in `gpu-fraction` passes and is told. The
    mock stores the 2 MB one too. Each message quotes the value's start only (ObjectError's MESSAGE_LIMIT)."""
    bad = [
        Bad(
            _annotated("huge-memory", "gpu-memory", TWO_MB),
            "InvalidObject",
            f"Pod {NAMESPACE}/huge-memory metadata.annotations.gpu-memory: want a positive number of MiB, got '9999",
            refused_at="metadata.annotations",
        ),
        Bad(
            _annotated("large-fraction", "gpu-fraction", 200_000),
            "InvalidObject",
            f"Pod {NAMESPACE}/large-fraction metadata.annotations.gpu-fraction: want a number in (0, 1], got '9999",
        ),
    ]
    stored = _submit(watched, bad)
    _good_pods_bound(watched, 2)
    _each_told(watched, stored)
    for b in stored:  # the test's own bad requests, told and never bound: the invariants are of the rest
        if b.kind == "BindRequest":
            watched.store.delete("bindrequests", b.name, NAMESPACE)
    invariants.settled(watched)


def _with(obj: JSON, path: tuple[str | int, ...], value: Any) -> JSON:
    return m.apply(obj, m.Mutation(path, value))


def _bind_request(name: str, spec: JSON) -> JSON:
    return {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true"}},
        "spec": {"podName": name, "selectedNode": "kai-e2e-node-0", "receivedResourceType": "Regular", **spec},
    }


def _topology(name: str, levels: Any) -> JSON:
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": name, "labels": {"e2e": "true"}},
        "spec": {"levels": levels},
    }


def _wrong_types() -> list[Bad]:
    good_queue = queue("e2e-typed", gpu_quota=1)
    good_group = podgroup("typed", min_member=1, queue="default-queue")
    return [
        Bad(
            _with(good_queue, ("spec", "resources", "gpu", "quota"), "abc"),
            "InvalidObject",
            "Queue e2e-typed spec.resources.gpu.quota: expected a number, got 'abc'",
            refused_at="spec.resources.gpu.quota",
        ),
        Bad(
            _with(queue("e2e-typed-parent", gpu_quota=1), ("spec", "parentQueue"), 1.5),
            "InvalidObject",
            "Queue e2e-typed-parent spec.parentQueue: expected a string, got 1.5",
            refused_at="spec.parentQueue",
        ),
        Bad(
            _with(good_group, ("spec", "minMember"), "abc"),
            "InvalidObject",
            f"PodGroup {NAMESPACE}/typed spec.minMember: expected an integer, got 'abc'",
            refused_at="spec.minMember",
        ),
        Bad(
            podgroup("typed-grace", min_member=1, queue="default-queue", staleness_grace="abc"),
            "InvalidField",
            "spec.stalenessGracePeriod: invalid duration 'abc'",
        ),
        Bad(
            _bind_request("typed-portion", {"receivedGPU": {"count": 1, "portion": "NaN?"}}),
            "InvalidObject",
            f"BindRequest {NAMESPACE}/typed-portion spec.receivedGPU.portion: expected a number, got 'NaN?'",
        ),
        Bad(
            _bind_request(
                "typed-claim", {"resourceClaimAllocations": [{"name": "c", "allocation": {"devices": "abc"}}]}
            ),
            "InvalidObject",
            f"BindRequest {NAMESPACE}/typed-claim spec.resourceClaimAllocations[0].allocation.devices: "
            "expected a mapping, got 'abc'",
        ),
        Bad(
            _bind_request("typed-node", {"selectedNode": True}),
            "InvalidObject",
            f"BindRequest {NAMESPACE}/typed-node spec.selectedNode: expected a string, got True",
            refused_at="spec.selectedNode",
        ),
        Bad(
            _topology("e2e-typed-levels", "abc"),
            "InvalidObject",
            "Topology e2e-typed-levels spec.levels: expected a list, got 'abc'",
            refused_at="spec.levels",
        ),
        Bad(
            _topology("e2e-typed-label", [{"nodeLabel": 5}]),
            "InvalidObject",
            "Topology e2e-typed-label spec.levels[0].nodeLabel: ",
            refused_at="spec.levels[0].nodeLabel",
        ),
    ]


def test_wrong_types_in_crd_fields_are_refused_or_told_and_the_good_pods_bound(watched: Cluster) -> None:
    stored = _submit(watched, _wrong_types())
    for b in stored:
        if b.kind == "BindRequest":  # a pod of its name no scheduler places: only the BindRequest names it
            target = pod(b.name, gpus=1)
            target["spec"]["schedulerName"] = "e2e-nobody"
            watched.create(target)
    _good_pods_bound(watched, 2)
    _each_told(watched, stored)
    for b in stored:  # the test's own bad requests, told and never bound: the invariants are of the rest
        if b.kind == "BindRequest":
            watched.store.delete("bindrequests", b.name, NAMESPACE)
    invariants.settled(watched)
