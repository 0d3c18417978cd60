"""The default grouper and the per-pod Deployment grouper: bare pods, Deployments, ReplicaSets, StatefulSets,
Argo Workflow steps; queue, priority, preemptibility, topology, delays, metadata; skipped and external pods."""

from __future__ import annotations

import json

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.podgrouper.grouper import PodGrouper
from tests.podgrouper.helpers import NOW, Cluster, bare_pod, controller_pod, spec

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-serve
  namespace: default
  uid: 0b7c2e4e-1111-4a52-9a6c-1d2b3c4d5e6f
  labels: {app: llama-serve, kai.scheduler/queue: serving}
spec:
  replicas: 2
  selector: {matchLabels: {app: llama-serve}}
  template:
    metadata: {labels: {app: llama-serve}}
    spec:
      schedulerName: kai-scheduler
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.5.0
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: llama-serve-6d4cf56db6
  namespace: default
  uid: 0b7c2e4e-2222-4a52-9a6c-1d2b3c4d5e6f
  labels: {app: llama-serve, pod-template-hash: 6d4cf56db6}
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: llama-serve, uid: 0b7c2e4e-1111-4a52-9a6c-1d2b3c4d5e6f,
     controller: true, blockOwnerDeletion: true}
spec:
  replicas: 2
  selector: {matchLabels: {app: llama-serve, pod-template-hash: 6d4cf56db6}}
"""

STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis
  namespace: default
  uid: 7f1e0c3a-3333-4c1b-8e57-2f0a9d6b1c2d
  labels: {project: research}
spec:
  serviceName: redis
  replicas: 2
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: redis, image: redis:7}]
"""

WORKFLOW = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: etl-6x2kq
  namespace: default
  uid: 9a0b1c2d-4444-4e5f-8a9b-0c1d2e3f4a5b
  labels: {kai.scheduler/queue: pipelines}
spec:
  entrypoint: main
  schedulerName: kai-scheduler
  templates:
  - name: main
    container: {image: alpine:3.19, command: [echo, hello]}
"""


def test_a_bare_pod_is_its_own_workload() -> None:
    c = Cluster()
    c.add(bare_pod("notebook-shell", labels={constants.LABEL_QUEUE: "team-a"}))
    outcome = c.group()
    pod = c.pod("notebook-shell")
    uid = pod["metadata"]["uid"]
    pg = c.podgroup_of("notebook-shell")
    assert pg["metadata"]["name"] == f"pg-notebook-shell-{uid}"
    assert outcome.created == [f"default/pg-notebook-shell-{uid}"]
    assert outcome.labelled == ["default/notebook-shell"]
    assert spec(pg) == {"queue": "team-a", "minMember": 1, "priorityClassName": "train"}
    assert pg["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "notebook-shell", "uid": uid, "controller": False}
    ]
    top = json.loads(pg["metadata"]["annotations"][constants.ANNOTATION_TOP_OWNER_METADATA])
    assert top == {"group": "", "version": "v1", "kind": "Pod", "name": "notebook-shell", "uid": uid}
    assert c.subgroup_of("notebook-shell") is None


def test_a_deployment_gets_one_podgroup_per_pod_with_the_inference_class() -> None:
    c = Cluster(DEPLOYMENT)
    rs = c.owner("replicasets", "llama-serve-6d4cf56db6")
    c.add(
        *(controller_pod(f"llama-serve-6d4cf56db6-{s}", rs, labels={"app": "llama-serve"}) for s in ("abcde", "fghij"))
    )
    c.group()
    groups = {p["metadata"]["name"]: p for p in c.podgroups()}
    assert len(groups) == 2
    for pod_name in ("llama-serve-6d4cf56db6-abcde", "llama-serve-6d4cf56db6-fghij"):
        pod = c.pod(pod_name)
        pg = c.podgroup_of(pod_name)
        assert pg["metadata"]["name"] == f"pg-{pod_name}-{pod['metadata']['uid']}"
        assert spec(pg) == {"queue": "serving", "minMember": 1, "priorityClassName": "inference"}
        assert pg["metadata"]["ownerReferences"][0]["kind"] == "Pod"
        assert pg["metadata"]["labels"] == {"app": "llama-serve", constants.LABEL_QUEUE: "serving"}
        top = json.loads(pg["metadata"]["annotations"][constants.ANNOTATION_TOP_OWNER_METADATA])
        assert (top["kind"], top["name"]) == ("Deployment", "llama-serve")


def test_a_statefulset_is_one_workload_and_its_project_label_names_the_queue() -> None:
    c = Cluster(STATEFULSET)
    sts = c.owner("statefulsets", "redis")
    c.add(controller_pod("redis-0", sts, gpus=0), controller_pod("redis-1", sts, gpus=0))
    c.group()
    pg = c.podgroup_of("redis-0")
    assert (
        c.podgroup_of("redis-1")["metadata"]["name"] == pg["metadata"]["name"] == f"pg-redis-{sts['metadata']['uid']}"
    )
    assert spec(pg) == {"queue": "research", "minMember": 1, "priorityClassName": "train"}


def test_an_argo_workflow_step_is_grouped_by_itself() -> None:
    c = Cluster(WORKFLOW)
    wf = c.owner("workflows", "etl-6x2kq")
    c.add(controller_pod("etl-6x2kq-main-1234", wf, labels={"workflows.argoproj.io/workflow": "etl-6x2kq"}))
    c.group()
    pod = c.pod("etl-6x2kq-main-1234")
    pg = c.podgroup_of("etl-6x2kq-main-1234")
    assert pg["metadata"]["name"] == f"pg-etl-6x2kq-main-1234-{pod['metadata']['uid']}"
    assert spec(pg)["queue"] == "default-queue"  # the Workflow is skipped: its labels are not the workload's


@pytest.mark.parametrize(
    "owner_labels, pod_labels, want",
    [
        pytest.param(
            {constants.LABEL_QUEUE: "owner-q"},
            {constants.LABEL_QUEUE: "pod-q"},
            "owner-q",
            id="the top owner's queue label wins over the pod's",
        ),
        pytest.param({}, {constants.LABEL_QUEUE: "pod-q"}, "pod-q", id="else the pod's queue label"),
        pytest.param({"project": "vision"}, {}, "vision", id="else the project label"),
        pytest.param(
            {"project": "vision"},
            {constants.DEFAULT_NODE_POOL_LABEL_KEY: "a100"},
            "vision-a100",
            id="a project in a node pool",
        ),
        pytest.param({}, {}, "default-queue", id="else default-queue"),
    ],
)
def test_queue_from_labels(owner_labels: dict[str, str], pod_labels: dict[str, str], want: str) -> None:
    c = Cluster()
    c.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: default, uid: 11111111-0000-4000-8000-000000000001,
            labels: {json.dumps(owner_labels)}}}
spec: {{template: {{spec: {{schedulerName: kai-scheduler, restartPolicy: Never,
                          containers: [{{name: c, image: x}}]}}}}}}
""")
    c.add(controller_pod("train-x", c.owner("jobs", "train"), labels=pod_labels))
    c.group()
    assert spec(c.podgroup_of("train-x"))["queue"] == want


@pytest.mark.parametrize(
    "owner_queue, pod_queue, events",
    [
        pytest.param(
            "team-b",
            "team-a",
            ["pod label kai.scheduler/queue: 'team-a' differs from its Job train's 'team-b'; the Job's is used"],
            id="differing: said on the pod",
        ),
        pytest.param("team-b", "team-b", [], id="the same: nothing"),
        pytest.param("", "team-a", [], id="on the pod only: nothing"),
    ],
)
def test_a_pod_queue_label_other_than_its_owners_is_said(owner_queue: str, pod_queue: str, events: list[str]) -> None:
    """The owner's queue wins (KAI); a user who labelled the pod for another queue is told which one ran it."""
    c = Cluster()
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    labels = {constants.LABEL_QUEUE: owner_queue} if owner_queue else {}
    c.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: default, uid: 11111111-0000-4000-8000-000000000009, labels: {json.dumps(labels)}}}
spec: {{template: {{spec: {{schedulerName: kai-scheduler, restartPolicy: Never,
                          containers: [{{name: c, image: x}}]}}}}}}
""")
    c.add(controller_pod("train-x", c.owner("jobs", "train"), labels={constants.LABEL_QUEUE: pod_queue}))
    c.group()
    assert spec(c.podgroup_of("train-x"))["queue"] == (owner_queue or pod_queue)
    assert [e["message"] for e in c.store.list("events", "default")[0]] == events


@pytest.mark.parametrize(
    "owner_label, pod_label, pod_class, want",
    [
        pytest.param("build", "", "inference", "build", id="the owner's priorityClassName label comes first"),
        pytest.param("", "build", "inference", "build", id="then the pod's label"),
        pytest.param("", "", "inference", "inference", id="then pod.spec.priorityClassName"),
        pytest.param("no-such-class", "", "", "train", id="a label naming no PriorityClass is ignored"),
        pytest.param("", "", "", "train", id="else the kind's default"),
    ],
)
def test_priority_class(owner_label: str, pod_label: str, pod_class: str, want: str) -> None:
    c = Cluster()
    labels = {constants.LABEL_PRIORITY_CLASS: owner_label} if owner_label else {}
    c.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: default, uid: 11111111-0000-4000-8000-000000000002, labels: {json.dumps(labels)}}}
spec: {{template: {{spec: {{schedulerName: kai-scheduler, restartPolicy: Never,
                          containers: [{{name: c, image: x}}]}}}}}}
""")
    pod_labels = {constants.LABEL_PRIORITY_CLASS: pod_label} if pod_label else {}
    c.add(controller_pod("train-x", c.owner("jobs", "train"), labels=pod_labels, priority_class=pod_class))
    c.group()
    assert spec(c.podgroup_of("train-x"))["priorityClassName"] == want


def test_preemptibility_topology_delays_and_metadata_come_from_the_owner() -> None:
    c = Cluster("""
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
  namespace: default
  uid: 11111111-0000-4000-8000-000000000003
  labels: {team: vision, kai.scheduler/preemptibility: non-preemptible}
  annotations:
    kai.scheduler/topology: cluster-topology
    kai.scheduler/topology-required-placement: zone
    kai.scheduler/topology-preferred-placement: rack
    kai.scheduler/preemption-delay: 5m
    kai.scheduler/staleness-grace-period: 90s
    kubectl.kubernetes.io/last-applied-configuration: '{"huge": "json"}'
spec: {template: {spec: {schedulerName: kai-scheduler, restartPolicy: Never, containers: [{name: c, image: x}]}}}
""")
    c.add(controller_pod("sweep-x", c.owner("jobs", "sweep")))
    c.group()
    pg = c.podgroup_of("sweep-x")
    assert spec(pg) == {
        "queue": "default-queue",
        "minMember": 1,
        "priorityClassName": "train",
        "preemptibility": "non-preemptible",
        "topologyConstraint": {
            "topology": "cluster-topology",
            "requiredTopologyLevel": "zone",
            "preferredTopologyLevel": "rack",
        },
        "preemptionDelay": "5m",
        "stalenessGracePeriod": "1m30s",
    }
    assert pg["metadata"]["labels"] == {"team": "vision", constants.LABEL_PREEMPTIBILITY: "non-preemptible"}
    assert constants.ANNOTATION_LAST_APPLIED not in pg["metadata"]["annotations"]
    assert pg["metadata"]["annotations"][constants.ANNOTATION_TOPOLOGY] == "cluster-topology"


def test_a_bad_preemptibility_or_delay_is_ignored_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    c = Cluster()
    c.add(
        bare_pod(
            "p",
            labels={constants.LABEL_PREEMPTIBILITY: "sometimes"},
            annotations={constants.ANNOTATION_PREEMPTION_DELAY: "soon"},
        )
    )
    c.group()
    assert spec(c.podgroup_of("p")) == {"queue": "default-queue", "minMember": 1, "priorityClassName": "train"}
    reasons = [getattr(r, "reason", "") for r in caplog.records]
    assert any("sometimes" in r for r in reasons) and any("soon" in r for r in reasons)


def test_a_priority_class_label_naming_no_class_is_reported_and_the_default_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server refuses a pod whose spec.priorityClassName names no class, but not a label: a typo there
    ran the job at the default priority without a word."""
    c = Cluster()
    c.add(bare_pod("typo", labels={constants.LABEL_PRIORITY_CLASS: "urgent"}))
    c.add(bare_pod("known", labels={constants.LABEL_PRIORITY_CLASS: "build"}))
    c.group()
    assert spec(c.podgroup_of("typo"))["priorityClassName"] == "train"
    assert spec(c.podgroup_of("known"))["priorityClassName"] == "build"
    reasons = [(getattr(r, "pod", ""), getattr(r, "reason", "")) for r in caplog.records]
    assert reasons == [("default/typo", "label priorityClassName: no PriorityClass 'urgent'; using 'train'")]


def test_with_a_clock_what_was_not_done_as_asked_is_an_event_on_the_pod_once() -> None:
    """The components' pod grouper (it has a clock) tells the user on the pod, where `kubectl describe` shows it,
    not only in its own log; once per message, whatever the number of reconciles."""
    c = Cluster()
    c.grouper = PodGrouper(c.store, clock=ManualClock(NOW))
    c.add(bare_pod("typo", labels={constants.LABEL_PRIORITY_CLASS: "urgent"}))
    c.group()
    c.store.patch("pods", "typo", "default", {"metadata": {"labels": {"touched": "1"}}})
    c.group()
    found = c.store.list("events", "default")[0]
    uid = c.pod("typo")["metadata"]["uid"]
    assert sorted((e["type"], e["reason"], e["involvedObject"]["uid"], e["message"]) for e in found) == [
        ("Warning", "PodGrouperWarning", uid, "label priorityClassName: no PriorityClass 'urgent'; using 'train'"),
    ]
    assert {e["source"]["component"] for e in found} == {"podgrouper"}


def test_without_a_clock_the_grouper_writes_no_event() -> None:
    c = Cluster()
    c.add(bare_pod("typo", labels={constants.LABEL_PRIORITY_CLASS: "urgent"}))
    c.group()
    assert c.store.list("events", "default")[0] == []


@pytest.mark.parametrize("on_owner", [pytest.param(False, id="on the pod"), pytest.param(True, id="on an owner")])
def test_skip_podgrouper_leaves_the_pod_alone(on_owner: bool) -> None:
    c = Cluster(DEPLOYMENT)
    if on_owner:
        c.store.patch(
            "deployments",
            "llama-serve",
            "default",
            {"metadata": {"annotations": {constants.ANNOTATION_SKIP_PODGROUPER: "true"}}},
        )
    annotations = {} if on_owner else {constants.ANNOTATION_SKIP_PODGROUPER: "true"}
    c.add(
        controller_pod(
            "llama-serve-6d4cf56db6-abcde", c.owner("replicasets", "llama-serve-6d4cf56db6"), annotations=annotations
        )
    )
    outcome = c.group()
    assert c.podgroups() == [] and outcome.labelled == []
    assert constants.ANNOTATION_POD_GROUP_NAME not in (
        c.pod("llama-serve-6d4cf56db6-abcde")["metadata"].get("annotations") or {}
    )


def test_a_pod_of_an_external_podgroup_is_left_alone() -> None:
    c = Cluster(STATEFULSET)
    c.apply("""
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: my-gang, namespace: default}
spec: {queue: research, minMember: 2}
""")
    sts = c.owner("statefulsets", "redis")
    c.add(
        controller_pod("redis-0", sts, annotations={constants.ANNOTATION_POD_GROUP_NAME: "my-gang"}),
        bare_pod("lonely", annotations={constants.ANNOTATION_POD_GROUP_NAME: "my-gang"}),
    )
    outcome = c.group()
    assert outcome.created == outcome.labelled == []
    assert [p["metadata"]["name"] for p in c.podgroups()] == ["my-gang"]


def test_a_pod_naming_a_missing_podgroup_is_grouped() -> None:
    c = Cluster()
    c.add(bare_pod("p", annotations={constants.ANNOTATION_POD_GROUP_NAME: "gone"}))
    c.group()
    assert c.podgroup_of("p")["metadata"]["name"].startswith("pg-p-")


def test_pods_of_another_scheduler_finished_or_terminating_pods_are_ignored() -> None:
    c = Cluster()
    finished = bare_pod("done")
    finished["status"] = {"phase": "Succeeded"}
    c.add(bare_pod("other", scheduler="default-scheduler"), finished)
    assert c.group().labelled == [] and c.podgroups() == []


def test_a_grouped_pod_whose_owner_cannot_be_read_keeps_its_podgroup_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """A `kubectl get nodes,queues,podgroups,pods -o yaml` snapshot has the PyTorchJob's pods and PodGroup but not
    the PyTorchJob: its grouper cannot read the replica specs, and the PodGroup the pods name is left as it is
    (was one 'pod not grouped as asked' warning per pod)."""
    ref = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": "ddp",
        "uid": "33333333-0000-4000-8000-000000000001",
        "controller": True,
    }
    group = "pg-ddp-33333333-0000-4000-8000-000000000001"
    c = Cluster()
    c.add(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": group, "namespace": "default"},
            "spec": {"queue": "q"},
        },
        bare_pod("ddp-master-0", owners=[ref], annotations={constants.ANNOTATION_POD_GROUP_NAME: group}),
    )
    outcome = c.group()
    assert outcome.skipped == [] and outcome.created == []
    assert c.podgroup_of("ddp-master-0")["metadata"]["name"] == group
    assert "not grouped" not in caplog.text
    c.add(bare_pod("ddp-worker-0", owners=[ref]))  # no PodGroup named yet: that one is still said
    assert [pod for pod, _ in c.group().skipped] == ["default/ddp-worker-0"]


def test_an_owner_kind_the_store_does_not_serve_is_grouped_by_its_reference() -> None:
    c = Cluster()
    ref = {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "name": "pi",
        "uid": "22222222-0000-4000-8000-000000000001",
        "controller": True,
    }
    c.add(bare_pod("pi-driver", owners=[ref]), bare_pod("pi-exec-1", owners=[ref]))
    c.group()
    pg = c.podgroup_of("pi-driver")
    assert pg["metadata"]["name"] == "pg-pi-22222222-0000-4000-8000-000000000001"
    assert c.podgroup_of("pi-exec-1")["metadata"]["name"] == pg["metadata"]["name"]
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "SparkApplication"
