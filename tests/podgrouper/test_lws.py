"""LeaderWorkerSet grouper: one PodGroup per group; leader/workers subgroups or segments; LeaderReady."""

from __future__ import annotations

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON
from tests.builders import node
from tests.podgrouper.helpers import Cluster, controller_pod, spec

LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm
  namespace: serving
  uid: 2a3b4c5d-0001-4e6f-8a7b-9c0d1e2f3a4b
  labels: {kai.scheduler/queue: inference}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 4
    restartPolicy: RecreateGroupOnPodRestart
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        schedulerName: kai-scheduler
        containers:
        - {name: vllm-leader, image: vllm/vllm-openai:v0.5.0, resources: {limits: {nvidia.com/gpu: 8}}}
    workerTemplate:
      spec:
        schedulerName: kai-scheduler
        containers:
        - {name: vllm-worker, image: vllm/vllm-openai:v0.5.0, resources: {limits: {nvidia.com/gpu: 8}}}
"""


def make_groups(c: Cluster, lws: JSON, size: int, *, workers: bool = True) -> None:
    """What the LWS controller creates: a leader StatefulSet, leader pods, per leader a worker StatefulSet and
    its worker pods (owned by the leader pod)."""
    ns, name = lws["metadata"]["namespace"], lws["metadata"]["name"]
    leader_sts = c.store.create(_statefulset(name, ns, lws))
    for group in range(int(lws["spec"]["replicas"])):
        labels = {"leaderworkerset.sigs.k8s.io/name": name, constants.LABEL_LWS_GROUP_INDEX: str(group)}
        leader = c.store.create(
            controller_pod(f"{name}-{group}", leader_sts, labels={**labels, constants.LABEL_LWS_WORKER_INDEX: "0"})
        )
        if not workers:
            continue
        worker_sts = c.store.create(_statefulset(f"{name}-{group}", ns, leader))
        for index in range(1, size):
            c.add(
                controller_pod(
                    f"{name}-{group}-{index}",
                    worker_sts,
                    labels={**labels, constants.LABEL_LWS_WORKER_INDEX: str(index)},
                )
            )


def _statefulset(name: str, namespace: str, owner: JSON) -> JSON:
    meta = owner["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": 1},
    }


def test_a_leaderworkerset_of_size_four_with_two_replicas() -> None:
    c = Cluster(LWS)
    lws = c.owner("leaderworkersets", "vllm", "serving")
    make_groups(c, lws, 4)
    outcome = c.group()
    uid = lws["metadata"]["uid"]
    assert outcome.created == [f"serving/pg-vllm-{uid}-group-0", f"serving/pg-vllm-{uid}-group-1"]
    for group in (0, 1):
        pg = c.podgroup_of(f"vllm-{group}", "serving")
        assert pg["metadata"]["name"] == f"pg-vllm-{uid}-group-{group}"
        assert spec(pg) == {
            "queue": "inference",
            "priorityClassName": "train",
            "minMember": 4,  # the whole group's, beside the subgroups, as KAI's grouper writes it
            "subGroups": [{"name": "leader", "minMember": 1}, {"name": "workers", "minMember": 3}],
        }
        assert c.subgroup_of(f"vllm-{group}", "serving") == "leader"
        for index in (1, 2, 3):
            assert c.podgroup_of(f"vllm-{group}-{index}", "serving")["metadata"]["name"] == pg["metadata"]["name"]
            assert c.subgroup_of(f"vllm-{group}-{index}", "serving") == "workers"


def test_segments_cut_a_group_by_worker_index() -> None:
    c = Cluster(
        LWS.replace(
            "    workerTemplate:\n",
            "    workerTemplate:\n      metadata: {annotations: {kai.scheduler/segment-size: '2'}}\n",
        )
    )
    make_groups(c, c.owner("leaderworkersets", "vllm", "serving"), 4)
    c.group()
    assert spec(c.podgroup_of("vllm-1", "serving"))["subGroups"] == [
        {"name": "segment-0", "minMember": 2},
        {"name": "segment-1", "minMember": 2},
    ]
    assert [c.subgroup_of(p, "serving") for p in ("vllm-1", "vllm-1-1", "vllm-1-2", "vllm-1-3")] == [
        "segment-0",
        "segment-0",
        "segment-1",
        "segment-1",
    ]


def test_with_leader_ready_the_unscheduled_leader_starts_alone() -> None:
    c = Cluster(LWS.replace("  replicas: 2\n", "  replicas: 1\n  startupPolicy: LeaderReady\n"))
    c.add(node("gpu-1"))
    lws = c.owner("leaderworkersets", "vllm", "serving")
    make_groups(c, lws, 4, workers=False)
    c.group()
    pg_name = f"pg-vllm-{lws['metadata']['uid']}-group-0"
    assert spec(c.store.get("podgroups", pg_name, "serving")) == {
        "queue": "inference",
        "minMember": 1,
        "priorityClassName": "train",
    }
    c.store.bind("serving", "vllm-0", "gpu-1")
    outcome = c.group()
    assert outcome.updated == [f"serving/{pg_name}"]
    assert spec(c.store.get("podgroups", pg_name, "serving"))["subGroups"] == [
        {"name": "leader", "minMember": 1},
        {"name": "workers", "minMember": 3},
    ]
    assert c.subgroup_of("vllm-0", "serving") == "leader"


@pytest.mark.parametrize("chain", [True, False], ids=["workers owned through the leader", "workers owned by the LWS"])
def test_with_leader_ready_workers_made_before_the_leader_is_placed_agree_with_it(chain: bool) -> None:
    """Workers that exist while the leader is not yet placed (LWS makes them after it; a user's restart policy or a
    hand-made pod may not) compute the same PodGroup as the leader: the leader alone. They were computing the whole
    group, so the PodGroup flipped with each pod grouped and the leader, in no subgroup, was never placed. They
    keep their `workers` label and join the gang once the leader is placed."""
    c = Cluster(LWS.replace("  replicas: 2\n", "  replicas: 1\n  startupPolicy: LeaderReady\n"))
    c.add(node("gpu-1"))
    lws = c.owner("leaderworkersets", "vllm", "serving")
    if chain:
        make_groups(c, lws, 4)
    else:
        labels = {constants.LABEL_LWS_NAME: "vllm", constants.LABEL_LWS_GROUP_INDEX: "0"}
        for index in range(4):
            pod_labels = {**labels, constants.LABEL_LWS_WORKER_INDEX: str(index)}
            c.add(controller_pod("vllm-0" + (f"-{index}" if index else ""), lws, labels=pod_labels))
    c.group()
    pg_name = f"pg-vllm-{lws['metadata']['uid']}-group-0"
    assert spec(c.store.get("podgroups", pg_name, "serving")) == {
        "queue": "inference",
        "minMember": 1,
        "priorityClassName": "train",
    }
    for index in (1, 2, 3):
        c.store.patch("pods", f"vllm-0-{index}", "serving", {"metadata": {"labels": {"touched": "1"}}})
    assert c.group().updated == []  # no flip
    assert c.subgroup_of("vllm-0", "serving") is None
    assert [c.subgroup_of(f"vllm-0-{i}", "serving") for i in (1, 2, 3)] == ["workers"] * 3
    c.store.bind("serving", "vllm-0", "gpu-1")
    assert c.group().updated == [f"serving/{pg_name}"]
    assert spec(c.store.get("podgroups", pg_name, "serving"))["subGroups"] == [
        {"name": "leader", "minMember": 1},
        {"name": "workers", "minMember": 3},
    ]
    assert c.subgroup_of("vllm-0", "serving") == "leader"


def test_a_pod_without_a_group_index_is_not_grouped() -> None:
    c = Cluster(LWS)
    c.add(controller_pod("stray", c.owner("leaderworkersets", "vllm", "serving")))
    outcome = c.group()
    assert c.podgroups() == [] and constants.LABEL_LWS_GROUP_INDEX in outcome.skipped[0][1]


def test_the_podgroup_of_a_deleted_leaderworkerset_is_left_as_it_is_while_its_pods_go() -> None:
    """Deleting an LWS: until the garbage collector takes its pods, a pod that changes (terminating, status) was
    grouped from the owner's reference alone (no size: 1), the PodGroup lost its subgroups and the scheduler told
    `SubGroupDoesNotExist` for the pods still labelled leader and workers. It now stays as it was."""
    c = Cluster(LWS)
    lws = c.owner("leaderworkersets", "vllm", "serving")
    make_groups(c, lws, 4)
    c.group()
    name = f"pg-vllm-{lws['metadata']['uid']}-group-0"
    before = c.store.get("podgroups", name, "serving")["spec"]
    c.store.delete("leaderworkersets", "vllm", "serving")
    c.store.patch("pods", "vllm-0-1", "serving", {"metadata": {"labels": {"touched": "1"}}})
    outcome = c.group()
    assert outcome.updated == [] and outcome.skipped == []
    assert c.store.get("podgroups", name, "serving")["spec"] == before
