"""The embedded cluster runs the podgrouper and the status controllers around the scheduler."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests.builders import NOW, node, queue

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "train",
        "namespace": "ns",
        "uid": "0f0e0d0c-0001-4000-8000-000000000001",
        "labels": {constants.LABEL_QUEUE: "q"},
        "annotations": {constants.ANNOTATION_BATCH_MIN_MEMBER: "2"},
    },
    "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
}


def job_pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train",
                    "uid": JOB["metadata"]["uid"],  # type: ignore[index]
                    "controller": True,
                }
            ],
        },
        "spec": {
            "schedulerName": constants.DEFAULT_SCHEDULER_NAME,
            "containers": [{"name": "c", "resources": {"limits": {constants.RESOURCE_GPU: "4"}}}],
        },
        "status": {"phase": "Pending"},
    }


def test_pods_without_a_podgroup_are_grouped_before_the_first_cycle_and_statuses_follow() -> None:
    cluster = EmbeddedCluster(
        [node("n1"), queue("q"), JOB, job_pod("train-0"), job_pod("train-1")], load_config(None), now=NOW
    )
    groups = cluster.store.list("podgroups")[0]
    assert [g["spec"]["minMember"] for g in groups] == [2]
    assert cluster.cycle().binds == 2
    cluster.between_cycles()  # grouping and statuses first, then the binder binds and the kubelet starts
    cluster.settle()
    name = groups[0]["metadata"]["name"]
    status = cluster.store.get("podgroups", name, "ns")["status"]["resourcesStatus"]
    assert status["allocated"][constants.RESOURCE_GPU] == "8"
    assert cluster.store.get("queues", "q")["status"]["allocated"][constants.RESOURCE_GPU] == "8"
    assert (
        cluster.queue_status.registry.get_sample_value(
            "kai_queue_allocated_gpus", {"queue_name": "q", "queue_metadata_name": "q", "queue_display_name": ""}
        )
        == 8
    )
