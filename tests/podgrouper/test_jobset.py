"""JobSet grouper: replicated jobs as parent subgroups, one leaf per Job replica."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.store.interface import NotFound
from tests.podgrouper.helpers import Cluster, controller_pod, spec

JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: pretrain
  namespace: llm
  uid: 4b5c6d7e-0001-4f8a-9b0c-1d2e3f4a5b6c
  labels: {kai.scheduler/queue: llm}
spec:
  failurePolicy: {maxRestarts: 3}
  replicatedJobs:
  - name: driver
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          spec:
            schedulerName: kai-scheduler
            restartPolicy: Never
            containers: [{name: driver, image: pretrain:2}]
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 4
        completions: 4
        backoffLimit: 0
        template:
          spec:
            schedulerName: kai-scheduler
            restartPolicy: Never
            containers: [{name: worker, image: pretrain:2, resources: {limits: {nvidia.com/gpu: 8}}}]
"""


def jobset_pod(c: Cluster, jobset: dict[str, object], rj: str, job_index: int, pod_index: int) -> dict[str, object]:
    """A pod of replica `job_index` of replicated job `rj`, owned by its Job as the JobSet controller makes it."""
    meta: dict[str, str] = jobset["metadata"]  # type: ignore[assignment]
    job_name = f"{meta['name']}-{rj}-{job_index}"
    labels = {
        "jobset.sigs.k8s.io/jobset-name": meta["name"],
        constants.LABEL_JOBSET_REPLICATED_JOB: rj,
        constants.LABEL_JOBSET_JOB_INDEX: str(job_index),
    }
    try:
        job = c.owner("jobs", job_name, meta["namespace"])
    except NotFound:
        job = c.store.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": job_name,
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "ownerReferences": [
                        {
                            "apiVersion": "jobset.x-k8s.io/v1alpha2",
                            "kind": "JobSet",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
            }
        )
    return controller_pod(f"{job_name}-{pod_index}-x", job, labels=labels)


def test_a_jobset_with_two_replicated_jobs() -> None:
    c = Cluster(JOBSET)
    js = c.owner("jobsets", "pretrain", "llm")
    c.add(jobset_pod(c, js, "driver", 0, 0))
    c.add(*(jobset_pod(c, js, "workers", j, i) for j in range(2) for i in range(4)))
    outcome = c.group()
    assert outcome.created == [f"llm/pg-pretrain-{js['metadata']['uid']}"]
    pg = c.podgroup_of("pretrain-driver-0-0-x", "llm")
    assert spec(pg) == {
        "queue": "llm",
        "priorityClassName": "train",
        "minSubGroup": 2,
        "subGroups": [
            {"name": "driver", "minSubGroup": 1},
            {"name": "driver-replica-0", "minMember": 1, "parent": "driver"},
            {"name": "workers", "minSubGroup": 2},
            {"name": "workers-replica-0", "minMember": 4, "parent": "workers"},
            {"name": "workers-replica-1", "minMember": 4, "parent": "workers"},
        ],
    }
    assert c.subgroup_of("pretrain-driver-0-0-x", "llm") == "driver-replica-0"
    assert c.subgroup_of("pretrain-workers-1-3-x", "llm") == "workers-replica-1"
    assert (
        len(
            {
                c.podgroup_of(f"pretrain-workers-{j}-{i}-x", "llm")["metadata"]["name"]
                for j in range(2)
                for i in range(4)
            }
        )
        == 1
    )


def test_in_order_startup_needs_one_replicated_job_and_annotations_override() -> None:
    text = JOBSET.replace("  failurePolicy:", "  startupPolicy: {startupPolicyOrder: InOrder}\n  failurePolicy:")
    c = Cluster(text)
    c.add(jobset_pod(c, c.owner("jobsets", "pretrain", "llm"), "driver", 0, 0))
    c.group()
    assert spec(c.podgroup_of("pretrain-driver-0-0-x", "llm"))["minSubGroup"] == 1

    text = JOBSET.replace(
        "  labels: {kai.scheduler/queue: llm}",
        "  labels: {kai.scheduler/queue: llm}\n  annotations: {kai.scheduler/batch-min-member: '1'}",
    )
    text = text.replace(
        "  - name: workers\n    replicas: 2\n    template:\n",
        "  - name: workers\n    replicas: 2\n    template:\n"
        "      metadata: {annotations: {kai.scheduler/batch-min-member: '2'}}\n",
    )
    c = Cluster(text)
    c.add(jobset_pod(c, c.owner("jobsets", "pretrain", "llm"), "workers", 0, 0))
    c.group()
    pg_spec = spec(c.podgroup_of("pretrain-workers-0-0-x", "llm"))
    assert pg_spec["minSubGroup"] == 1
    assert pg_spec["subGroups"][3] == {"name": "workers-replica-0", "minMember": 2, "parent": "workers"}
