"""The pod grouper with one owner (or pod) changed in one field, among the owners of every kind it groups:
`reconcile` never raises; the other pods get the PodGroups they get without the change; a pod whose owner cannot
be grouped is skipped with one line naming the owner and the field (logged, and a `Warning PodGrouperWarning`
event on the pod).

Owner kinds are CRDs with loose schemas (or none the grouper can count on: a Kubeflow, Ray, LeaderWorkerSet or
JobSet CRD of another version), so any value may be there."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.grouper import PodGrouper
from kai_scheduler.store.memory import MemoryStore
from tests.badobj import mutations as m
from tests.podgrouper import (
    test_batch,
    test_default,
    test_grouper,
    test_grove,
    test_jobset,
    test_kubeflow,
    test_lws,
    test_notebook,
    test_ray,
)
from tests.podgrouper.helpers import NOW, controller_pod

JSON = dict[str, Any]

MANIFESTS = (
    test_grouper.JOB,
    test_batch.GANG_JOB,
    test_default.DEPLOYMENT,
    test_kubeflow.PYTORCHJOB,
    test_kubeflow.SEGMENTED,
    test_kubeflow.MPIJOB,
    test_lws.LWS,
    test_notebook.NOTEBOOK,
    test_ray.RAYCLUSTER,
    test_jobset.JOBSET,
)
# The labels a workload's controller puts on its pods that its grouper reads.
POD_LABELS: dict[str, dict[str, str]] = {
    "PyTorchJob": {constants.LABEL_KUBEFLOW_REPLICA_TYPE: "worker", constants.LABEL_KUBEFLOW_REPLICA_INDEX: "0"},
    "MPIJob": {constants.LABEL_KUBEFLOW_REPLICA_TYPE: "launcher"},
    "LeaderWorkerSet": {constants.LABEL_LWS_GROUP_INDEX: "0", constants.LABEL_LWS_WORKER_INDEX: "0"},
    "RayCluster": {constants.LABEL_RAY_NODE_TYPE: "worker", constants.LABEL_RAY_GROUP: "gpu-group"},
    "JobSet": {constants.LABEL_JOBSET_REPLICATED_JOB: "workers", constants.LABEL_JOBSET_JOB_INDEX: "0"},
}


def _owners() -> list[JSON]:
    out = []
    for text in MANIFESTS:
        docs = [d for d in yaml.safe_load_all(text) if d]
        out.append(docs[0])
    return out


def _grove() -> list[JSON]:
    """A Grove workload: its PodCliqueSet, a PodClique it owns, the clique's pod and the PodGang naming the pod."""
    pcs = yaml.safe_load(test_grove.PCS)
    clique = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {
            "name": "llm-0-decode",
            "namespace": test_grove.NS,
            "uid": "6f1e2d3c-0003-4b5a-9c8d-7e6f5a4b3c2d",
            "ownerReferences": [test_grove.reference(pcs)],
        },
        "spec": {"replicas": 4},
    }
    return [pcs, clique, test_grove.podgang(), test_grove.grove_pod("llm-0-decode-0", clique)]


OWNERS = _owners()
OBJECTS = [
    *(
        obj
        for i, owner in enumerate(OWNERS)
        for obj in (owner, controller_pod(f"pod-{i}", owner, labels=POD_LABELS.get(owner["kind"], {})))
    ),
    *_grove(),
]


def run(objects: list[JSON]) -> tuple[dict[str, JSON], list[tuple[str, str]], list[JSON]]:
    """Two reconciles over `objects`: each pod's PodGroup spec (by pod key), the pods skipped, the events."""
    clock = ManualClock(NOW)
    store = MemoryStore(clock)
    store.add_many([pc.to_dict() for pc in priorityclass.shipped()])
    store.add_many(objects)
    grouper = PodGrouper(store, clock=clock)
    skipped = grouper.reconcile().skipped
    clock.advance(1)
    skipped += grouper.reconcile().skipped
    groups = {}
    for pod in store.list("pods")[0]:
        meta = pod["metadata"]
        name = (meta.get("annotations") or {}).get(constants.ANNOTATION_POD_GROUP_NAME)
        if name:
            group = store.get("podgroups", name, meta["namespace"])
            groups[f"{meta['namespace']}/{meta['name']}"] = {"name": name, "spec": group["spec"]}
    return groups, skipped, store.list("events")[0]


@functools.cache
def _good() -> dict[str, JSON]:
    """Each pod's PodGroup with no change: owners are independent, so a change to one leaves the others' alone."""
    return run(OBJECTS)[0]


def _pod_key(index: int) -> str:
    """The key of the pod of the owner (or the pod) at `index`: the first pod from there on."""
    pod = next(o for o in OBJECTS[index:] if o["kind"] == "Pod")
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def check(index: int, mutation: m.Mutation) -> None:
    obj = OBJECTS[index]
    groups, skipped, events = run([*OBJECTS[:index], m.apply(obj, mutation), *OBJECTS[index + 1 :]])
    mine = _pod_key(index)
    others = {k: v for k, v in groups.items() if k != mine}
    assert others == {k: v for k, v in _good().items() if k != mine}, f"{mutation}: other pods regrouped"
    for key, reason in skipped:
        assert key == mine, f"{mutation}: {key} skipped: {reason}"
        assert "\n" not in reason and len(reason) < 400, reason
        if obj["kind"] != "Pod":
            assert f"{obj['kind']} " in reason and obj["metadata"]["name"] in reason, f"{mutation}: {reason}"
        said = [e["message"] for e in events if e["reason"] == "PodGrouperWarning"]
        assert reason in said, f"{mutation}: no event says {reason!r}"


# Pods are a core kind the API server types strictly; owners' CRDs may hold anything.
MUTATIONS = [m.server_mutations(o) for o in OBJECTS]
CHANGES = st.integers(0, len(OBJECTS) - 1).flatmap(lambda i: st.tuples(st.just(i), st.sampled_from(MUTATIONS[i])))


@settings(max_examples=80, deadline=None)
@given(CHANGES)
def test_one_bad_owner_never_stops_the_grouper_nor_regroups_the_other_pods(change: tuple[int, m.Mutation]) -> None:
    check(*change)


def test_every_pod_of_the_fuzzed_owners_is_grouped() -> None:
    groups, skipped, _ = run(OBJECTS)
    assert skipped == []
    assert len(groups) == sum(o["kind"] == "Pod" for o in OBJECTS)


def _index(kind: str) -> int:
    return next(i for i, o in enumerate(OBJECTS) if o["kind"] == kind)


def _segmented() -> int:
    return next(i for i, o in enumerate(OBJECTS) if o["metadata"]["name"] == "llm-pretrain")


@pytest.mark.parametrize(
    "index, path, value, told",
    [
        pytest.param(
            _index("PyTorchJob"),
            ("spec", "pytorchReplicaSpecs", "Worker", "replicas"),
            1e30,
            "spec.pytorchReplicaSpecs.Worker.replicas: must be at most 2147483647, got 1e+30",
            id="replicas past int32 (was a PodGroup the store refused: 'object is not JSON', every retry)",
        ),
        pytest.param(
            _index("Job"),
            ("metadata", "annotations", constants.ANNOTATION_BATCH_MIN_MEMBER),
            "9" * 40,
            "want an integer from 0 to 2147483647, got '999999999999999999999999999999999999...; ignored",
            id="a batch-min-member annotation past int32 (likewise)",
        ),
        pytest.param(
            _index("JobSet"),
            ("spec", "replicatedJobs", 1, "replicas"),
            2_000_000_000,
            "spec.replicatedJobs[1].replicas: makes 2000000001 subgroups; a PodGroup has at most 4096",
            id="a JobSet of 2e9 replicas (was a subgroup per replica: the grouper never returned)",
        ),
        pytest.param(
            _index("JobSet"),
            ("spec", "startupPolicy"),
            "InOrder",
            "JobSet llm/pretrain spec.startupPolicy: expected a mapping, got 'InOrder'",
            id="a JobSet startupPolicy that is a string (was read as no policy: AnyOrder)",
        ),
        pytest.param(
            _segmented(),
            ("spec", "pytorchReplicaSpecs", "Worker", "replicas"),
            2_000_000_000,
            "Worker replicas (2000000000 in segments of 2): makes 1000000000 subgroups; a PodGroup has at most 4096",
            id="a segmented PyTorchJob of 2e9 workers (was a subgroup per segment: the grouper never returned)",
        ),
        pytest.param(
            _index("PodGang"),
            ("spec", "podgroups", 1, "minReplicas"),
            -1,
            "PodGang inference/llm-0 spec.podgroups[1].minReplicas: must be at least 0, got -1",
            id="a PodGang's negative minReplicas",
        ),
        pytest.param(
            _index("PodGang"),
            ("spec", "podgroups", 1, "podReferences", 0, "namespace"),
            "default",
            "PodGang inference/llm-0 spec.podgroups[1].podReferences[0].namespace: 'default' is not the PodGang's",
            id="a PodGang referencing a pod of another namespace",
        ),
        pytest.param(
            _index("PodGang"),
            ("spec", "podgroups", 0, "name"),
            "llm-0-decode",
            "PodGang inference/llm-0 spec.podgroups[1].name: podgroup 'llm-0-decode' is also spec.podgroups[0]",
            id="a PodGang naming two podgroups alike",
        ),
        pytest.param(
            _index("PodGang"),
            ("spec", "podgroups", 1, "minReplicas"),
            3e9,
            "PodGang inference/llm-0 spec.podgroups[1].minReplicas: must be at most 2147483647",
            id="a PodGang's minReplicas past int32",
        ),
    ],
)
def test_a_bad_count_found_by_fuzzing_is_told_on_the_pod(
    index: int, path: tuple[str | int, ...], value: Any, told: str
) -> None:
    mutation = m.Mutation(path, value)
    check(index, mutation)
    _, _, events = run([*OBJECTS[:index], m.apply(OBJECTS[index], mutation), *OBJECTS[index + 1 :]])
    messages = [e["message"] for e in events if e["reason"] == "PodGrouperWarning"]
    assert any(told in message for message in messages), messages


@pytest.mark.parametrize(
    "path, value",
    [
        pytest.param(
            ("metadata", "ownerReferences"), 5, id="references not a list (was a TypeError: the grouper stopped)"
        ),
        pytest.param(("metadata", "ownerReferences", 0, "uid"), ["x"], id="a reference's uid a list (likewise)"),
    ],
)
def test_an_owner_of_an_owner_with_bad_references_stops_nothing(path: tuple[str | int, ...], value: Any) -> None:
    """An owner below the top (a Grove PodClique) whose own owner references are malformed, as a file loaded by
    `kai schedule` may hold them: the pod is grouped by what can be read, the others as before."""
    check(_index("PodClique"), m.Mutation(path, value))
