"""Kubeflow groupers: PyTorchJob (master/worker subgroups, elastic, segments), TFJob, MPIJob v2beta1."""

from __future__ import annotations

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.grouper import PodGrouper
from tests.podgrouper.helpers import NOW, Cluster, controller_pod, spec

PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: bert-finetune
  namespace: team-a
  uid: 6e1f2a3b-0001-4c5d-8e9f-0a1b2c3d4e5f
  labels: {kai.scheduler/queue: team-a}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - name: pytorch
            image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
            resources: {limits: {nvidia.com/gpu: 1}}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - name: pytorch
            image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
            resources: {limits: {nvidia.com/gpu: 1}}
"""

ELASTIC = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: elastic-imagenet
  namespace: team-a
  uid: 6e1f2a3b-0002-4c5d-8e9f-0a1b2c3d4e5f
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: 2
    maxReplicas: 4
    maxRestarts: 100
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - {name: pytorch, image: kubeflow/pytorch-elastic-example-imagenet:latest,
             resources: {limits: {nvidia.com/gpu: 1}}}
"""

SEGMENTED = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm-pretrain
  namespace: team-a
  uid: 6e1f2a3b-0003-4c5d-8e9f-0a1b2c3d4e5f
  annotations:
    kai.scheduler/topology: cluster-topology
    kai.scheduler/topology-required-placement: zone
spec:
  runPolicy:
    schedulingPolicy: {minAvailable: 3}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          schedulerName: kai-scheduler
          containers: [{name: pytorch, image: llm:1, resources: {limits: {nvidia.com/gpu: 8}}}]
    Worker:
      replicas: 4
      template:
        metadata:
          annotations:
            kai.scheduler/segment-size: "2"
            kai.scheduler/segment-topology-required-placement: rack
        spec:
          schedulerName: kai-scheduler
          containers: [{name: pytorch, image: llm:1, resources: {limits: {nvidia.com/gpu: 8}}}]
"""

TFJOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: team-b, uid: 6e1f2a3b-0004-4c5d-8e9f-0a1b2c3d4e5f}
spec:
  tfReplicaSpecs:
    Chief: {replicas: 1, template: {spec: {schedulerName: kai-scheduler, containers: [{name: tensorflow, image: tf}]}}}
    PS: {replicas: 1, template: {spec: {schedulerName: kai-scheduler, containers: [{name: tensorflow, image: tf}]}}}
    Worker: {replicas: 2, template: {spec: {schedulerName: kai-scheduler, containers: [{name: tensorflow, image: tf}]}}}
"""

MPIJOB = """
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: nccl-tests
  namespace: team-a
  uid: 6e1f2a3b-0005-4c5d-8e9f-0a1b2c3d4e5f
spec:
  slotsPerWorker: 8
  launcherCreationPolicy: WaitForWorkersReady
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - {name: launcher, image: mpioperator/mpi-pi:openmpi, command: [mpirun, -n, "16", /all_reduce_perf]}
    Worker:
      replicas: 2
      template:
        spec:
          schedulerName: kai-scheduler
          containers:
          - {name: worker, image: mpioperator/mpi-pi:openmpi, resources: {limits: {nvidia.com/gpu: 8}}}
"""


def kubeflow_labels(job: str, replica_type: str, index: int, *, role: str = "") -> dict[str, str]:
    """The labels the training operator puts on a replica's pod."""
    labels = {
        constants.LABEL_KUBEFLOW_JOB_NAME: job,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        constants.LABEL_KUBEFLOW_REPLICA_TYPE: replica_type,
        constants.LABEL_KUBEFLOW_REPLICA_INDEX: str(index),
    }
    if role:
        labels[constants.LABEL_KUBEFLOW_JOB_ROLE] = role
    return labels


def test_a_pytorchjob_with_a_master_and_three_workers() -> None:
    c = Cluster(PYTORCHJOB)
    job = c.owner("pytorchjobs", "bert-finetune", "team-a")
    c.add(
        controller_pod(
            "bert-finetune-master-0", job, labels=kubeflow_labels("bert-finetune", "master", 0, role="master")
        )
    )
    c.add(
        *(
            controller_pod(f"bert-finetune-worker-{i}", job, labels=kubeflow_labels("bert-finetune", "worker", i))
            for i in range(3)
        )
    )
    outcome = c.group()
    assert outcome.created == [f"team-a/pg-bert-finetune-{job['metadata']['uid']}"]
    pg = c.podgroup_of("bert-finetune-master-0", "team-a")
    assert spec(pg) == {
        "queue": "team-a",
        "priorityClassName": "train",
        "minMember": 4,  # the whole gang's, beside the subgroups, as KAI's grouper writes it
        "subGroups": [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 3}],
    }
    assert c.subgroup_of("bert-finetune-master-0", "team-a") == "master"
    assert [c.subgroup_of(f"bert-finetune-worker-{i}", "team-a") for i in range(3)] == ["worker"] * 3


def test_an_elastic_pytorchjob_needs_its_min_replicas() -> None:
    c = Cluster(ELASTIC)
    job = c.owner("pytorchjobs", "elastic-imagenet", "team-a")
    c.add(
        *(
            controller_pod(f"elastic-imagenet-worker-{i}", job, labels=kubeflow_labels("elastic-imagenet", "worker", i))
            for i in range(4)
        )
    )
    c.group()
    assert spec(c.podgroup_of("elastic-imagenet-worker-0", "team-a"))["subGroups"] == [
        {"name": "worker", "minMember": 2}
    ]


def test_min_available_wins_over_the_elastic_minimum() -> None:
    c = Cluster(
        ELASTIC.replace("  elasticPolicy:", "  runPolicy: {schedulingPolicy: {minAvailable: 3}}\n  elasticPolicy:")
    )
    c.add(
        controller_pod(
            "w-0",
            c.owner("pytorchjobs", "elastic-imagenet", "team-a"),
            labels=kubeflow_labels("elastic-imagenet", "worker", 0),
        )
    )
    c.group()
    assert spec(c.podgroup_of("w-0", "team-a"))["subGroups"] == [{"name": "worker", "minMember": 3}]


def test_worker_segments_follow_the_replica_index() -> None:
    c = Cluster(SEGMENTED)
    job = c.owner("pytorchjobs", "llm-pretrain", "team-a")
    c.add(controller_pod("llm-pretrain-master-0", job, labels=kubeflow_labels("llm-pretrain", "master", 0)))
    c.add(
        *(
            controller_pod(f"llm-pretrain-worker-{i}", job, labels=kubeflow_labels("llm-pretrain", "worker", i))
            for i in range(4)
        )
    )
    c.group()
    rack = {"topology": "cluster-topology", "requiredTopologyLevel": "rack"}
    pg = c.podgroup_of("llm-pretrain-worker-0", "team-a")
    assert spec(pg)["topologyConstraint"] == {"topology": "cluster-topology", "requiredTopologyLevel": "zone"}
    assert spec(pg)["subGroups"] == [
        {"name": "master", "minMember": 1},
        {"name": "worker"},
        # minAvailable 3 = the master and two workers: the first segment is mandatory, the second is not
        {"name": "worker-segment-0", "minMember": 2, "parent": "worker", "topologyConstraint": rack},
        {"name": "worker-segment-1", "minMember": 0, "parent": "worker", "topologyConstraint": rack},
    ]
    assert [c.subgroup_of(f"llm-pretrain-worker-{i}", "team-a") for i in range(4)] == [
        "worker-segment-0",
        "worker-segment-0",
        "worker-segment-1",
        "worker-segment-1",
    ]
    assert c.subgroup_of("llm-pretrain-master-0", "team-a") == "master"


def test_a_tfjob_gangs_all_its_replicas() -> None:
    c = Cluster(TFJOB)
    c.add(controller_pod("mnist-chief-0", c.owner("tfjobs", "mnist", "team-b")))
    c.group()
    pg = c.podgroup_of("mnist-chief-0", "team-b")
    assert spec(pg)["minMember"] == 4 and "subGroups" not in spec(pg)


def test_an_mpijob_waiting_for_workers_counts_the_launcher_once_it_exists() -> None:
    c = Cluster(MPIJOB)
    job = c.owner("mpijobs", "nccl-tests", "team-a")
    mpi = {constants.LABEL_KUBEFLOW_JOB_NAME: "nccl-tests", "training.kubeflow.org/operator-name": "mpi-operator"}
    c.add(
        *(
            controller_pod(
                f"nccl-tests-worker-{i}",
                job,
                labels={
                    **mpi,
                    constants.LABEL_KUBEFLOW_JOB_ROLE: "worker",
                    constants.LABEL_KUBEFLOW_REPLICA_INDEX: str(i),
                },
            )
            for i in range(2)
        )
    )
    c.group()
    name = f"pg-nccl-tests-{job['metadata']['uid']}"
    assert spec(c.store.get("podgroups", name, "team-a"))["minMember"] == 2  # the workers start first
    c.add(
        controller_pod(
            "nccl-tests-launcher-x7k2p", job, gpus=0, labels={**mpi, constants.LABEL_KUBEFLOW_JOB_ROLE: "launcher"}
        )
    )
    outcome = c.group()
    assert outcome.updated == [f"team-a/{name}"]
    assert spec(c.store.get("podgroups", name, "team-a"))["minMember"] == 3


def test_an_mpijob_without_workers_is_not_grouped() -> None:
    c = Cluster(MPIJOB.replace("    Worker:", "    Workers:"))
    c.add(controller_pod("nccl-tests-launcher", c.owner("mpijobs", "nccl-tests", "team-a")))
    outcome = c.group()
    assert c.podgroups() == []
    assert outcome.skipped and "Launcher and Workers" in outcome.skipped[0][1]


def test_an_mpijob_v1_is_read_alike() -> None:
    c = Cluster(
        MPIJOB.replace("kubeflow.org/v2beta1", "kubeflow.org/v1").replace(
            "  launcherCreationPolicy: WaitForWorkersReady\n", ""
        )
    )
    job = c.owner("mpijobs.v1", "nccl-tests", "team-a")
    assert job["apiVersion"] == "kubeflow.org/v1"
    c.add(controller_pod("nccl-tests-worker-0", job))
    c.group()
    assert spec(c.podgroup_of("nccl-tests-worker-0", "team-a"))["minMember"] == 3


@pytest.mark.parametrize(
    "kind, plural, field, replica_types, want",
    [
        pytest.param("XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", {"Master": 1, "Worker": 3}, 4, id="XGBoostJob"),
        pytest.param("JAXJob", "jaxjobs", "jaxReplicaSpecs", {"Worker": 4}, 4, id="JAXJob"),
    ],
)
def test_other_kubeflow_jobs_gang_all_replicas(
    kind: str, plural: str, field: str, replica_types: dict[str, int], want: int
) -> None:
    template = "{spec: {schedulerName: kai-scheduler, containers: [{name: main, image: x}]}}"
    specs = "\n".join(f"    {name}: {{replicas: {n}, template: {template}}}" for name, n in replica_types.items())
    c = Cluster(f"""
apiVersion: kubeflow.org/v1
kind: {kind}
metadata: {{name: job, namespace: team-a, uid: 6e1f2a3b-0006-4c5d-8e9f-0a1b2c3d4e5f}}
spec:
  {field}:
{specs}
""")
    c.add(controller_pod("job-worker-0", c.owner(plural, "job", "team-a")))
    c.group()
    assert spec(c.podgroup_of("job-worker-0", "team-a"))["minMember"] == want


@pytest.mark.parametrize(
    "manifest, plural, name, namespace, field, minimum, total",
    [
        pytest.param(
            PYTORCHJOB.replace("spec:\n", "spec:\n  runPolicy: {schedulingPolicy: {minAvailable: 9}}\n", 1),
            "pytorchjobs",
            "bert-finetune",
            "team-a",
            "spec.runPolicy.schedulingPolicy.minAvailable",
            9,
            4,
            id="PyTorchJob minAvailable",
        ),
        pytest.param(
            ELASTIC.replace("minReplicas: 2", "minReplicas: 6"),
            "pytorchjobs",
            "elastic-imagenet",
            "team-a",
            "spec.elasticPolicy.minReplicas",
            6,
            4,
            id="PyTorchJob elastic minReplicas",
        ),
        pytest.param(
            TFJOB.replace("spec:\n", "spec:\n  runPolicy: {schedulingPolicy: {minAvailable: 5}}\n", 1),
            "tfjobs",
            "mnist",
            "team-b",
            "spec.runPolicy.schedulingPolicy.minAvailable",
            5,
            4,
            id="TFJob minAvailable",
        ),
    ],
)
def test_a_minimum_above_the_replicas_is_kept_and_said_on_the_pod(
    manifest: str, plural: str, name: str, namespace: str, field: str, minimum: int, total: int
) -> None:
    """A gang minimum the job's replicas can never reach: kept as KAI keeps it (the job waits), and said once on
    the pod as a Warning event, since the scheduler is silent about a gang still short of pods."""
    c = Cluster(manifest)
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    job = c.owner(plural, name, namespace)
    c.add(controller_pod(f"{name}-worker-0", job, labels=kubeflow_labels(name, "worker", 0)))
    c.group()
    c.group()
    pg = spec(c.podgroup_of(f"{name}-worker-0", namespace))
    assert pg.get("minMember") or sum(sg["minMember"] for sg in pg["subGroups"]) == minimum
    events = [(e["reason"], e["message"]) for e in c.store.list("events", namespace)[0]]
    assert events == [
        (
            "PodGrouperWarning",
            f"{job['kind']} {namespace}/{name} {field}: {minimum} is more than the {total} replicas of the job; "
            "it will not start until that many pods exist",
        )
    ]


def test_a_minimum_within_the_replicas_says_nothing() -> None:
    c = Cluster(ELASTIC)
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    job = c.owner("pytorchjobs", "elastic-imagenet", "team-a")
    c.add(controller_pod("w-0", job, labels=kubeflow_labels("elastic-imagenet", "worker", 0)))
    c.group()
    assert c.store.list("events", "team-a")[0] == []
