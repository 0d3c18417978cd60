"""batch/v1 Job (with `kai.scheduler/batch-min-member`) and CronJob groupers."""

from __future__ import annotations

import json
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.fields import JSON
from tests.podgrouper.helpers import Cluster, controller_pod, reference, spec

GANG_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: allreduce
  namespace: ml
  uid: 3c9d7e8f-0001-4b2a-9c3d-4e5f6a7b8c9d
  labels: {kai.scheduler/queue: team-a}
  annotations: {kai.scheduler/batch-min-member: "4"}
spec:
  parallelism: 4
  completions: 4
  completionMode: Indexed
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers:
      - name: worker
        image: nvcr.io/nvidia/pytorch:24.05-py3
        command: [torchrun, train.py]
        resources: {limits: {nvidia.com/gpu: 8}}
"""

CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-eval
  namespace: ml
  uid: 3c9d7e8f-0002-4b2a-9c3d-4e5f6a7b8c9d
  labels: {kai.scheduler/queue: team-b}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    metadata: {labels: {kai.scheduler/queue: team-b}}
    spec:
      template:
        spec:
          schedulerName: kai-scheduler
          restartPolicy: OnFailure
          containers: [{name: eval, image: eval:1.0, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: nightly-eval-29471040
  namespace: ml
  uid: 3c9d7e8f-0003-4b2a-9c3d-4e5f6a7b8c9d
  labels: {kai.scheduler/queue: team-b}
  ownerReferences:
  - {apiVersion: batch/v1, kind: CronJob, name: nightly-eval, uid: 3c9d7e8f-0002-4b2a-9c3d-4e5f6a7b8c9d,
     controller: true, blockOwnerDeletion: true}
spec:
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: OnFailure
      containers: [{name: eval, image: eval:1.0}]
"""


def test_a_job_with_batch_min_member_is_a_gang() -> None:
    c = Cluster(GANG_JOB)
    job = c.owner("jobs", "allreduce", "ml")
    c.add(
        *(
            controller_pod(
                f"allreduce-{i}-x{i}", job, labels={"batch.kubernetes.io/job-completion-index": str(i)}, gpus=8
            )
            for i in range(4)
        )
    )
    outcome = c.group()
    assert outcome.created == [f"ml/pg-allreduce-{job['metadata']['uid']}"]
    assert len(outcome.labelled) == 4
    pg = c.podgroup_of("allreduce-0-x0", "ml")
    assert spec(pg) == {"queue": "team-a", "minMember": 4, "priorityClassName": "train"}
    assert {c.podgroup_of(f"allreduce-{i}-x{i}", "ml")["metadata"]["name"] for i in range(4)} == {
        pg["metadata"]["name"]
    }


def test_a_job_without_the_annotation_has_min_member_one() -> None:
    c = Cluster(GANG_JOB.replace('annotations: {kai.scheduler/batch-min-member: "4"}', "annotations: {}"))
    c.add(controller_pod("allreduce-0", c.owner("jobs", "allreduce", "ml")))
    c.group()
    assert spec(c.podgroup_of("allreduce-0", "ml"))["minMember"] == 1


def test_a_bad_batch_min_member_is_ignored() -> None:
    c = Cluster(GANG_JOB.replace('"4"', '"four"'))
    c.add(controller_pod("allreduce-0", c.owner("jobs", "allreduce", "ml")))
    c.group()
    assert spec(c.podgroup_of("allreduce-0", "ml"))["minMember"] == 1


def test_a_cronjob_run_is_grouped_by_the_job_it_spawned() -> None:
    c = Cluster(CRONJOB)
    job = c.owner("jobs", "nightly-eval-29471040", "ml")
    c.add(controller_pod("nightly-eval-29471040-q8z7d", job))
    c.group()
    pg = c.podgroup_of("nightly-eval-29471040-q8z7d", "ml")
    assert pg["metadata"]["name"] == f"pg-nightly-eval-29471040-{job['metadata']['uid']}"
    assert spec(pg) == {"queue": "team-b", "minMember": 1, "priorityClassName": "train"}
    top = json.loads(pg["metadata"]["annotations"][constants.ANNOTATION_TOP_OWNER_METADATA])
    assert (top["kind"], top["name"]) == ("CronJob", "nightly-eval")
    assert pg["metadata"]["ownerReferences"][0]["name"] == "nightly-eval-29471040"


# Older KAI grouped each pod of a Job on its own, `pg-<pod>-<job uid>`, minMember 1 (KAI `plugins/job`,
# `calcPodGroupName`: such a PodGroup, when it exists, is kept).


def _legacy_podgroup(c: Cluster, pod_name: str, job: JSON, **spec_fields: Any) -> JSON:
    """The PodGroup an older KAI made for one pod of `job`."""
    name = f"pg-{pod_name}-{job['metadata']['uid']}"
    body = {
        "apiVersion": constants.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": [reference(job)]},
        "spec": {"queue": "team-a", "minMember": 1, "priorityClassName": "train", **spec_fields},
    }
    c.add(body)
    return body


def test_a_pod_with_a_per_pod_podgroup_of_an_older_kai_keeps_it() -> None:
    c = Cluster(GANG_JOB)
    job = c.owner("jobs", "allreduce", "ml")
    legacy = _legacy_podgroup(c, "allreduce-0-x0", job, minMember=4)
    old = controller_pod("allreduce-0-x0", job, gpus=8)
    old["metadata"]["annotations"] = {constants.ANNOTATION_POD_GROUP_NAME: legacy["metadata"]["name"]}
    c.add(old, controller_pod("allreduce-1-x1", job, gpus=8))
    outcome = c.group()
    assert c.podgroup_of("allreduce-0-x0", "ml")["metadata"]["name"] == legacy["metadata"]["name"]
    assert spec(c.podgroup_of("allreduce-0-x0", "ml"))["minMember"] == 1  # KAI: a legacy PodGroup is not a gang
    assert outcome.updated == [f"ml/{legacy['metadata']['name']}"]
    assert c.podgroup_of("allreduce-1-x1", "ml")["metadata"]["name"] == f"pg-allreduce-{job['metadata']['uid']}"
    assert spec(c.podgroup_of("allreduce-1-x1", "ml"))["minMember"] == 4


def test_an_unannotated_pod_joins_its_existing_per_pod_podgroup() -> None:
    c = Cluster(GANG_JOB)
    job = c.owner("jobs", "allreduce", "ml")
    legacy = _legacy_podgroup(c, "allreduce-0-x0", job)
    c.add(controller_pod("allreduce-0-x0", job, gpus=8))
    outcome = c.group()
    assert outcome.created == []
    assert c.podgroup_of("allreduce-0-x0", "ml")["metadata"]["name"] == legacy["metadata"]["name"]


def test_a_per_pod_podgroup_of_another_job_is_not_taken() -> None:
    c = Cluster(GANG_JOB)
    job = c.owner("jobs", "allreduce", "ml")
    _legacy_podgroup(c, "allreduce-0-x0", {**job, "metadata": {**job["metadata"], "uid": "an-earlier-job"}})
    c.add(controller_pod("allreduce-0-x0", job, gpus=8))
    c.group()
    assert c.podgroup_of("allreduce-0-x0", "ml")["metadata"]["name"] == f"pg-allreduce-{job['metadata']['uid']}"


def test_a_cronjob_run_does_not_look_for_per_pod_podgroups() -> None:
    c = Cluster(CRONJOB)
    job = c.owner("jobs", "nightly-eval-29471040", "ml")
    _legacy_podgroup(c, "nightly-eval-29471040-q8z7d", job)
    c.add(controller_pod("nightly-eval-29471040-q8z7d", job))
    c.group()
    pg = c.podgroup_of("nightly-eval-29471040-q8z7d", "ml")
    assert pg["metadata"]["name"] == f"pg-nightly-eval-29471040-{job['metadata']['uid']}"
