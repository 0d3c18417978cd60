"""Ray grouper: a RayCluster with two worker groups (one multi-host), a RayJob's cluster."""

from __future__ import annotations

import pytest

from kai_scheduler.api import constants
from tests.podgrouper.helpers import Cluster, controller_pod, spec

RAYCLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-gpu
  namespace: ray
  uid: 8d2e3f4a-0001-4b5c-9d6e-7f8a9b0c1d2e
  labels: {kai.scheduler/queue: research, ray.io/priority-class-name: inference}
spec:
  rayVersion: "2.9.0"
  headGroupSpec:
    rayStartParams: {dashboard-host: "0.0.0.0"}
    template:
      spec:
        schedulerName: kai-scheduler
        containers: [{name: ray-head, image: rayproject/ray:2.9.0}]
  workerGroupSpecs:
  - groupName: gpu-group
    replicas: 2
    minReplicas: 1
    maxReplicas: 4
    numOfHosts: 2
    rayStartParams: {}
    template:
      spec:
        schedulerName: kai-scheduler
        containers:
        - {name: ray-worker, image: rayproject/ray:2.9.0-gpu, resources: {limits: {nvidia.com/gpu: 1}}}
  - groupName: cpu-group
    replicas: 3
    minReplicas: 0
    maxReplicas: 5
    rayStartParams: {}
    template:
      spec:
        schedulerName: kai-scheduler
        containers: [{name: ray-worker, image: rayproject/ray:2.9.0}]
"""

RAYJOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: batch-infer
  namespace: ray
  uid: 8d2e3f4a-0002-4b5c-9d6e-7f8a9b0c1d2e
spec:
  entrypoint: python /home/ray/samples/infer.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template: {spec: {schedulerName: kai-scheduler, containers: [{name: ray-head, image: rayproject/ray:2.9.0}]}}
    workerGroupSpecs:
    - groupName: small
      replicas: 2
      rayStartParams: {}
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - {name: ray-worker, image: rayproject/ray:2.9.0-gpu, resources: {limits: {nvidia.com/gpu: 1}}}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: batch-infer-raycluster-k2x9p
  namespace: ray
  uid: 8d2e3f4a-0003-4b5c-9d6e-7f8a9b0c1d2e
  ownerReferences:
  - {apiVersion: ray.io/v1, kind: RayJob, name: batch-infer, uid: 8d2e3f4a-0002-4b5c-9d6e-7f8a9b0c1d2e,
     controller: true, blockOwnerDeletion: true}
spec:
  headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.9.0}]}}}
"""


def ray_labels(cluster: str, node_type: str, group: str) -> dict[str, str]:
    """The labels KubeRay puts on a Ray node's pod."""
    return {
        "ray.io/cluster": cluster,
        constants.LABEL_RAY_NODE_TYPE: node_type,
        constants.LABEL_RAY_GROUP: group,
        "ray.io/is-ray-node": "yes",
    }


def test_a_raycluster_with_two_worker_groups() -> None:
    c = Cluster(RAYCLUSTER)
    rc = c.owner("rayclusters", "raycluster-gpu", "ray")
    c.add(
        controller_pod(
            "raycluster-gpu-head-x2k9d", rc, gpus=0, labels=ray_labels("raycluster-gpu", "head", "headgroup")
        )
    )
    c.add(
        *(
            controller_pod(
                f"raycluster-gpu-gpu-group-worker-{i}", rc, labels=ray_labels("raycluster-gpu", "worker", "gpu-group")
            )
            for i in range(4)
        )
    )
    c.add(
        *(
            controller_pod(
                f"raycluster-gpu-cpu-group-worker-{i}",
                rc,
                gpus=0,
                labels=ray_labels("raycluster-gpu", "worker", "cpu-group"),
            )
            for i in range(3)
        )
    )
    outcome = c.group()
    assert outcome.created == [f"ray/pg-raycluster-gpu-{rc['metadata']['uid']}"]
    pg = c.podgroup_of("raycluster-gpu-head-x2k9d", "ray")
    assert spec(pg) == {
        "queue": "research",
        "priorityClassName": "inference",  # ray.io/priority-class-name
        "minMember": 6,  # the whole gang's, beside the subgroups, as KAI's grouper writes it
        "subGroups": [
            {"name": "head", "minMember": 1},
            {"name": "gpu-group", "minMember": 2},  # minReplicas 1 × numOfHosts 2
            {"name": "cpu-group", "minMember": 3},  # minReplicas 0: the replicas
        ],
    }
    assert c.subgroup_of("raycluster-gpu-head-x2k9d", "ray") == "head"
    assert c.subgroup_of("raycluster-gpu-gpu-group-worker-3", "ray") == "gpu-group"
    assert c.subgroup_of("raycluster-gpu-cpu-group-worker-0", "ray") == "cpu-group"


def test_a_rayjob_is_grouped_by_the_job_with_its_cluster_spec() -> None:
    c = Cluster(RAYJOB)
    job = c.owner("rayjobs", "batch-infer", "ray")
    rc = c.owner("rayclusters", "batch-infer-raycluster-k2x9p", "ray")
    cluster = rc["metadata"]["name"]
    c.add(
        controller_pod("batch-infer-head", rc, gpus=0, labels=ray_labels(cluster, "head", "headgroup")),
        controller_pod("batch-infer-small-worker-0", rc, labels=ray_labels(cluster, "worker", "small")),
    )
    c.group()
    pg = c.podgroup_of("batch-infer-head", "ray")
    assert pg["metadata"]["name"] == f"pg-batch-infer-{job['metadata']['uid']}"
    assert spec(pg)["subGroups"] == [{"name": "head", "minMember": 1}, {"name": "small", "minMember": 2}]
    assert spec(pg)["priorityClassName"] == "train"
    assert c.subgroup_of("batch-infer-small-worker-0", "ray") == "small"
    submitter = c.apply("""
apiVersion: batch/v1
kind: Job
metadata:
  name: batch-infer-submitter
  namespace: ray
  uid: 8d2e3f4a-0004-4b5c-9d6e-7f8a9b0c1d2e
  ownerReferences:
  - {apiVersion: ray.io/v1, kind: RayJob, name: batch-infer, uid: 8d2e3f4a-0002-4b5c-9d6e-7f8a9b0c1d2e,
     controller: true, blockOwnerDeletion: true}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: ray-job-submitter, image: rayproject/ray:2.9.0}]}}}
""")[0]
    c.add(controller_pod("batch-infer-submitter-abcde", submitter, gpus=0))
    outcome = c.group()
    assert outcome.skipped == []
    assert c.podgroup_of("batch-infer-submitter-abcde", "ray")["metadata"]["name"] == pg["metadata"]["name"]
    assert c.subgroup_of("batch-infer-submitter-abcde", "ray") is None  # not a Ray node


def test_a_ray_cluster_without_a_head_group_is_not_grouped() -> None:
    c = Cluster(RAYCLUSTER.replace("headGroupSpec", "headGroupSpecs"))
    c.add(controller_pod("p", c.owner("rayclusters", "raycluster-gpu", "ray")))
    outcome = c.group()
    assert c.podgroups() == [] and "headGroupSpec" in outcome.skipped[0][1]


def test_a_raycluster_v1alpha1_is_read_alike() -> None:
    """KubeRay's older API version (BEHAVIOR.md §8.2: ray.io v1 and v1alpha1): its pods were skipped with
    'spec.headGroupSpec: missing', the owner being a kind the store did not serve, known by its reference only."""
    c = Cluster(RAYCLUSTER.replace("ray.io/v1\n", "ray.io/v1alpha1\n"))
    rc = c.owner("rayclusters.v1alpha1", "raycluster-gpu", "ray")
    assert rc["apiVersion"] == "ray.io/v1alpha1"
    c.add(controller_pod("head", rc, gpus=0, labels=ray_labels("raycluster-gpu", "head", "headgroup")))
    outcome = c.group()
    assert outcome.skipped == []
    assert [sg["name"] for sg in spec(c.podgroup_of("head", "ray"))["subGroups"]] == ["head", "gpu-group", "cpu-group"]
    assert c.subgroup_of("head", "ray") == "head"


@pytest.mark.parametrize("grace", [None, 30], ids=["pod deleted at once", "pod terminating"])
def test_a_scaled_down_raycluster_has_its_minimum_lowered_before_any_pod_changes(grace: int | None) -> None:
    """KubeRay scales a worker group down by changing `replicas` and deleting a pod; no remaining pod changes. The
    PodGroup kept the old minimum, so the running cluster was short of it and evicted as a stale gang after its
    grace period. An owner's spec change now has one of its pods grouped again (a live one: the terminating pod
    is passed over, as it is not grouped)."""
    c = Cluster(RAYCLUSTER)
    rc = c.owner("rayclusters", "raycluster-gpu", "ray")
    c.add(controller_pod("head", rc, gpus=0, labels=ray_labels("raycluster-gpu", "head", "headgroup")))
    c.add(
        *(controller_pod(f"cpu-{i}", rc, labels=ray_labels("raycluster-gpu", "worker", "cpu-group")) for i in range(3))
    )
    c.group()
    name = c.podgroup_of("head", "ray")["metadata"]["name"]
    cpu = [sg for sg in spec(c.podgroup_of("head", "ray"))["subGroups"] if sg["name"] == "cpu-group"]
    assert cpu == [{"name": "cpu-group", "minMember": 3}]
    groups = rc["spec"]["workerGroupSpecs"]
    groups[1]["replicas"] = 2
    c.store.patch("rayclusters", "raycluster-gpu", "ray", {"spec": {"workerGroupSpecs": groups}})
    c.store.delete("pods", "cpu-2", "ray", grace_period_seconds=grace)
    assert c.group().updated == [f"ray/{name}"]
    cpu = [sg for sg in spec(c.podgroup_of("head", "ray"))["subGroups"] if sg["name"] == "cpu-group"]
    assert cpu == [{"name": "cpu-group", "minMember": 2}]
    c.store.patch("rayclusters", "raycluster-gpu", "ray", {"status": {"state": "ready"}})
    assert c.group().updated == []  # a status update is no change of the workload
