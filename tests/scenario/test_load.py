"""Scenario and manifest loading: the Kubernetes objects a file turns into (SCENARIOS.md)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.api.fields import format_time
from kai_scheduler.scenario import DEFAULT_NOW, JobMeta, Scenario, StatusExpectation, load, loads

NOW = DEFAULT_NOW
CLUSTER = """
nodes:
- {name: gpu-a, count: 2, gpus: 8, gpuMemory: 40000}
- {name: cpu-a, cpu: "32", memory: 128Gi}
queues:
- {name: research}
- {name: team-a, parent: research}
"""


def scenario(jobs: str = "", extra: str = "", cluster: str = CLUSTER) -> Scenario:
    text = textwrap.dedent(cluster) + textwrap.dedent(extra).rstrip("\n") + "\n"
    if jobs:
        text += "jobs:\n" + textwrap.dedent(jobs)
    return loads(text, "test.yaml")


def obj(s: Scenario, kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in s.objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind} {name}: {len(matches)} objects"
    return matches[0]


def dig(o: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        o = o.get(key) if isinstance(o, dict) else None  # type: ignore[assignment]
    return o


def names(s: Scenario, kind: str) -> list[str]:
    return [o["metadata"]["name"] for o in s.objects if o["kind"] == kind]


ALLOC = ("status", "allocatable")
LABELS = ("metadata", "labels")
ANNOTATIONS = ("metadata", "annotations")
CONTAINERS = ("spec", "containers")
ONE_TASK = "- name: j\n  queue: team-a\n  tasks:\n  - {name: t, %s}\n"


def task(fields: str) -> str:
    return ONE_TASK % fields


EMPTY_QUEUE = {"quota": 0, "overQuotaWeight": 1, "limit": -1}
PAUSE = "registry.k8s.io/pause:3.9"
TOPOLOGY = "topologies: [{name: t, levels: [{nodeLabel: topo/rack, alias: rack}, kubernetes.io/hostname]}]\n"
SUBGROUPS = (
    "- name: j\n  queue: team-a\n  minSubGroup: 1\n"
    "  subGroups: [{name: a, minMember: 1}, {name: b, minMember: 1}]\n"
    "  tasks: [{name: t, labels: {x: y}, subGroup: a, taskPriority: 7}, {subGroup: b}]\n"
)

# (jobs, extra top-level YAML, kind, name, path into the object, wanted value); a "uid" of "" is not compared
BUILDS = [
    pytest.param(
        "",
        "",
        "Node",
        "gpu-a-0",
        ALLOC,
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
        id="node allocatable: gpus, default cpu and memory, 110 pods",
    ),
    pytest.param(
        "",
        "",
        "Node",
        "cpu-a",
        ALLOC,
        {"cpu": "32", "memory": "128Gi", "pods": "110"},
        id="node without gpus has no nvidia.com/gpu",
    ),
    pytest.param(
        "",
        "",
        "Node",
        "gpu-a-1",
        ("status", "capacity"),
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
        id="node capacity equals allocatable",
    ),
    pytest.param(
        "",
        "",
        "Node",
        "gpu-a-1",
        LABELS,
        {"kubernetes.io/hostname": "gpu-a-1", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "40000"},
        id="node labels: hostname, gpu count and gpu memory",
    ),
    pytest.param(
        "",
        "",
        "Node",
        "gpu-a-0",
        ("status", "conditions"),
        [{"type": "Ready", "status": "True"}],
        id="node ready by default",
    ),
    pytest.param(
        "",
        "",
        "Queue",
        "research",
        ("spec", "resources"),
        {r: EMPTY_QUEUE for r in ("gpu", "cpu", "memory")},
        id="queue resource left out: quota 0, weight 1, no limit",
    ),
    pytest.param(
        "",
        "",
        "Queue",
        "team-a",
        ("spec",),
        {"parentQueue": "research", "priority": 100, "resources": {r: EMPTY_QUEUE for r in ("gpu", "cpu", "memory")}},
        id="queue parent and default priority 100",
    ),
    pytest.param(
        task("gpus: 2, cpu: '8', memory: 64Gi"),
        "",
        "Pod",
        "t",
        CONTAINERS,
        [
            {
                "name": "main",
                "image": PAUSE,
                "resources": {
                    "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
                    "limits": {"nvidia.com/gpu": "2"},
                },
            }
        ],
        id="whole gpus are a request and a limit",
    ),
    pytest.param(
        task("gpus: 0.5"),
        "",
        "Pod",
        "t",
        ANNOTATIONS,
        {"pod-group-name": "j", "gpu-fraction": "0.5"},
        id="gpus below 1 are a gpu-fraction annotation",
    ),
    pytest.param(
        task("gpus: 0.5"),
        "",
        "Pod",
        "t",
        CONTAINERS,
        [{"name": "main", "image": PAUSE}],
        id="a fraction requests no nvidia.com/gpu",
    ),
    pytest.param(
        task("gpuMemory: 2000, gpuDevices: 2"),
        "",
        "Pod",
        "t",
        ANNOTATIONS,
        {"pod-group-name": "j", "gpu-memory": "2000", "gpu-fraction-num-devices": "2"},
        id="gpuMemory and gpuDevices are annotations",
    ),
    pytest.param(
        SUBGROUPS,
        "",
        "Pod",
        "t",
        LABELS,
        {
            "x": "y",
            "kai.scheduler/queue": "team-a",
            "kai.scheduler/subgroup-name": "a",
            "kai.scheduler/task-priority": "7",
        },
        id="pod labels: given, queue, subgroup, task priority",
    ),
    pytest.param(
        task("status: Running, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        "gpu-a-0",
        id="Running has its node",
    ),
    pytest.param(
        task("status: Running, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("status",),
        {"phase": "Running"},
        id="Running phase",
    ),
    pytest.param(
        task("status: Pending, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        None,
        id="a node on a Pending task is ignored",
    ),
    pytest.param(
        task("status: Releasing, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("metadata", "deletionTimestamp"),
        format_time(NOW),
        id="Releasing is deleted now",
    ),
    pytest.param(
        task("status: Releasing, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("metadata", "deletionGracePeriodSeconds"),
        30,
        id="Releasing has a grace period",
    ),
    pytest.param(
        task("status: StuckInReleasing, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("metadata", "deletionTimestamp"),
        format_time(NOW - 600),
        id="StuckInReleasing was deleted 10 minutes ago",
    ),
    pytest.param(
        task("status: Pipelined, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("status",),
        {"phase": "Pending", "nominatedNodeName": "gpu-a-0"},
        id="Pipelined is Pending, nominated to its node",
    ),
    pytest.param(
        task("status: Pipelined, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        None,
        id="Pipelined has no nodeName",
    ),
    pytest.param(
        task("status: Bound, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        "gpu-a-0",
        id="Bound has its node",
    ),
    pytest.param(
        task("status: Bound, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("status", "phase"),
        "Pending",
        id="Bound is still Pending",
    ),
    pytest.param(
        task("status: Gated"),
        "",
        "Pod",
        "t",
        ("spec", "schedulingGates"),
        [{"name": "kai.scheduler/gated"}],
        id="Gated has a scheduling gate",
    ),
    pytest.param(
        task("status: Succeeded, node: cpu-a"),
        "",
        "Pod",
        "t",
        ("status", "phase"),
        "Succeeded",
        id="Succeeded phase",
    ),
    pytest.param(
        task("status: Failed"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        None,
        id="Failed without a node",
    ),
    pytest.param(
        task("status: Binding, node: gpu-a-0"),
        "",
        "Pod",
        "t",
        ("spec", "nodeName"),
        None,
        id="Binding pod is not bound yet",
    ),
    pytest.param(
        task("status: Binding, node: gpu-a-0, gpus: 1"),
        "",
        "BindRequest",
        "t",
        ("spec",),
        {
            "podName": "t",
            "selectedNode": "gpu-a-0",
            "receivedResourceType": "Regular",
            "receivedGPU": {"count": 1, "portion": "1.00"},
        },
        id="Binding creates a Regular BindRequest",
    ),
    pytest.param(
        task("status: Binding, node: gpu-a-0"),
        "",
        "BindRequest",
        "t",
        LABELS,
        {"selected-node": "gpu-a-0"},
        id="BindRequest is labelled with its node",
    ),
    pytest.param(
        task("status: Binding, node: gpu-a-0, gpus: 0.5, gpuGroups: [g1]"),
        "",
        "BindRequest",
        "t",
        ("spec",),
        {
            "podName": "t",
            "selectedNode": "gpu-a-0",
            "receivedResourceType": "Fraction",
            "receivedGPU": {"count": 1, "portion": "0.50"},
            "selectedGPUGroups": ["g1"],
        },
        id="Binding fraction: Fraction BindRequest with portion and groups",
    ),
    pytest.param(
        task("status: Binding, node: gpu-a-0, gpuMemory: 10000"),
        "",
        "BindRequest",
        "t",
        ("spec", "receivedGPU"),
        {"count": 1, "portion": "0.25"},
        id="Binding gpuMemory: portion of the node's GPU memory",
    ),
    pytest.param(
        task("status: Running, node: gpu-a-0, gpus: 0.5, gpuGroups: [g1]"),
        "",
        "Pod",
        "t",
        LABELS,
        {"kai.scheduler/queue": "team-a", "runai-gpu-group": "g1"},
        id="running fraction carries its gpu group label",
    ),
    pytest.param(
        task(
            "nodeAffinity: [{key: k, operator: In, values: [v]}], "
            "podAntiAffinity: [{topologyKey: kubernetes.io/hostname}]"
        ),
        "",
        "Pod",
        "t",
        ("spec", "affinity"),
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]
                }
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
            },
        },
        id="nodeAffinity is one required term; pod anti-affinity required terms",
    ),
    pytest.param(
        task("nodeSelector: {zone: a}, tolerations: [{key: k, operator: Exists}]"),
        "",
        "Pod",
        "t",
        ("spec",),
        {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "main", "image": PAUSE}],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
        id="pod spec: kai-scheduler, node selector, tolerations",
    ),
    pytest.param(
        "- {name: j, queue: team-a, deleted: true, tasks: [{name: t}]}",
        "",
        "Pod",
        "t",
        ("metadata", "deletionTimestamp"),
        format_time(NOW),
        id="a deleted job's pods are being deleted",
    ),
    pytest.param(
        "- {name: j, queue: team-a, priority: 50, tasks: [{name: t}]}",
        "",
        "PodGroup",
        "j",
        ("spec", "priorityClassName"),
        "train",
        id="priority 50 is the shipped train class",
    ),
    pytest.param(
        "- {name: j, queue: team-a, priority: 125, tasks: [{name: t}]}",
        "",
        "Pod",
        "t",
        ("spec", "priorityClassName"),
        "inference",
        id="the pod gets the job's priority class",
    ),
    pytest.param(
        "- {name: j, queue: team-a, priority: 60, tasks: [{name: t}]}",
        "",
        "PriorityClass",
        "priority-60",
        ("value",),
        60,
        id="an unknown priority value synthesises a class",
    ),
    pytest.param(
        "- {name: j, queue: team-a, priority: 7, tasks: [{name: t}]}",
        "priorityClasses: [{name: low, value: 7}]\n",
        "PodGroup",
        "j",
        ("spec", "priorityClassName"),
        "low",
        id="priority maps to a declared class",
    ),
    pytest.param(
        "- {name: j, queue: team-a, priorityClassName: build, tasks: [{}, {}]}",
        "",
        "PodGroup",
        "j",
        ("spec",),
        {"queue": "team-a", "minMember": 2, "priorityClassName": "build"},
        id="podgroup: minMember defaults to the task count",
    ),
    pytest.param(
        "- {name: j, queue: team-a, minMember: 0, tasks: [{}, {}]}",
        "",
        "PodGroup",
        "j",
        ("spec", "minMember"),
        0,
        id="podgroup: minMember as written",
    ),
    pytest.param(
        SUBGROUPS,
        "",
        "PodGroup",
        "j",
        ("spec",),
        {
            "queue": "team-a",
            "minSubGroup": 1,
            "subGroups": [{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1}],
        },
        id="podgroup with subgroups has no default minMember",
    ),
    pytest.param(
        "- name: j\n  queue: team-a\n  preemptibility: non-preemptible\n  preemptionDelay: 5m\n"
        "  stalenessGracePeriod: -1s\n  topologyConstraint: {topology: t, requiredTopologyLevel: rack}\n",
        TOPOLOGY,
        "PodGroup",
        "j",
        ("spec",),
        {
            "queue": "team-a",
            "minMember": 0,
            "preemptibility": "non-preemptible",
            "preemptionDelay": "5m",
            "stalenessGracePeriod": "-1s",
            "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "rack"},
        },
        id="podgroup spec fields as written",
    ),
    pytest.param(
        "- {name: j, queue: team-a, createdAt: 3, lastStartedAgo: 10m, staleSince: 2m}",
        "",
        "PodGroup",
        "j",
        ("metadata",),
        {
            "name": "j",
            "namespace": "default",
            "uid": "",
            "creationTimestamp": format_time(NOW - 180),
            "annotations": {
                "kai.scheduler/last-start-timestamp": format_time(NOW - 600),
                "kai.scheduler/stale-podgroup-timestamp": format_time(NOW - 120),
            },
        },
        id="podgroup created createdAt minutes ago; start and stale timestamps",
    ),
    pytest.param(
        "- {name: j, queue: team-a, owner: {kind: MPIJob}, tasks: [{name: t}]}",
        "",
        "Pod",
        "t",
        ("metadata", "ownerReferences"),
        [
            {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "name": "j",
                "uid": "",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        id="owner kind becomes the pods' controller reference",
    ),
    pytest.param(
        "",
        TOPOLOGY,
        "Topology",
        "t",
        ("spec",),
        {"levels": [{"nodeLabel": "topo/rack", "alias": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]},
        id="topology levels: mapping or bare node label",
    ),
]


@pytest.mark.parametrize("jobs, extra, kind, name, path, want", BUILDS)
def test_builds_object(jobs: str, extra: str, kind: str, name: str, path: tuple[str, ...], want: Any) -> None:
    got = dig(obj(scenario(jobs, extra), kind, name), path)
    if isinstance(want, dict) and want.get("uid") == "":  # uids are checked elsewhere
        got = {**got, "uid": ""}
    if isinstance(want, list) and want and isinstance(want[0], dict) and want[0].get("uid") == "":
        got = [{**ref, "uid": ""} for ref in got]
    assert got == want


def test_node_options() -> None:
    s = scenario(
        cluster="""
        nodes:
        - name: n
          pods: 20
          labels: {topology/rack: r1, kubernetes.io/hostname: custom}
          taints: [{key: dedicated, value: infer, effect: NoSchedule}]
          unschedulable: true
          ready: false
        queues: []
    """
    )
    node = obj(s, "Node", "n")
    assert node["spec"] == {
        "taints": [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}],
        "unschedulable": True,
    }
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    assert node["status"]["allocatable"]["pods"] == "20"
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "custom", "topology/rack": "r1"}


def test_count_expands_nodes_and_jobs() -> None:
    s = scenario("- {name: j, count: 2, queue: team-a, owner: {kind: Job}, tasks: [{}, {name: x}]}")
    assert names(s, "Node") == ["gpu-a-0", "gpu-a-1", "cpu-a"]
    assert names(s, "PodGroup") == ["j-0", "j-1"]
    assert names(s, "Pod") == ["j-0-0", "j-0-x", "j-1-0", "j-1-x"]
    owners = {p["metadata"]["ownerReferences"][0]["name"] for p in s.objects if p["kind"] == "Pod"}
    assert owners == {"j-0", "j-1"}


def test_count_zero_makes_nothing() -> None:
    s = scenario("- {name: j, count: 0, queue: team-a, tasks: [{}]}")
    assert (names(s, "PodGroup"), names(s, "Pod"), s.jobs) == ([], [], [])


def test_replicas_and_template() -> None:
    s = scenario("- {name: j, queue: team-a, replicas: 3, template: {gpus: 1, cpu: '8', memory: 64Gi}}")
    assert names(s, "Pod") == ["j-0", "j-1", "j-2"]
    requests = obj(s, "Pod", "j-2")["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
    assert obj(s, "PodGroup", "j")["spec"]["minMember"] == 3


def test_queue_resources_and_age() -> None:
    s = scenario(
        cluster="""
        nodes: []
        queues:
        - name: young
          createdAt: 2
          priority: 7
          resources:
            gpu: {quota: 4, overQuotaWeight: 2, limit: -1}
            cpu: {quota: 1000}
          preemptMinRuntime: 10m
          reclaimMinRuntime: 90
        - {name: old, createdAt: 1}
    """
    )
    young, old = obj(s, "Queue", "young"), obj(s, "Queue", "old")
    assert young["spec"] == {
        "priority": 7,
        "resources": {
            "gpu": {"quota": 4, "overQuotaWeight": 2, "limit": -1},
            "cpu": {"quota": 1000},
            "memory": {"quota": 0, "overQuotaWeight": 1, "limit": -1},
        },
        "preemptMinRuntime": "10m",
        "reclaimMinRuntime": "90s",
    }
    assert young["metadata"]["creationTimestamp"] == format_time(NOW - 86400 + 2)
    assert old["metadata"]["creationTimestamp"] < young["metadata"]["creationTimestamp"]


def classes(loaded: Scenario) -> list[tuple[str, int]]:
    return [(o["metadata"]["name"], o["value"]) for o in loaded.objects if o["kind"] == "PriorityClass"]


def test_shipped_classes_besides_declared() -> None:
    shipped = [("train", 50), ("build-preemptible", 75), ("build", 100), ("inference", 125)]
    assert classes(scenario()) == shipped
    declared = scenario("- {name: j, queue: team-a, priority: 9}", "priorityClasses: [{name: low, value: 7}]")
    assert classes(declared) == [("low", 7), *shipped, ("priority-9", 9)]


def test_a_declared_class_wins_over_the_shipped_one() -> None:
    jobs = "- {name: j, queue: team-a, priorityClassName: build, tasks: [{name: t}]}"
    loaded = scenario(jobs, "priorityClasses: [{name: build, value: 40}]")
    assert classes(loaded) == [("build", 40), ("train", 50), ("build-preemptible", 75), ("inference", 125)]


def test_a_priority_value_maps_to_a_declared_class_before_a_shipped_one() -> None:
    loaded = scenario("- {name: j, queue: team-a, priority: 50}", "priorityClasses: [{name: low, value: 50}]")
    podgroup = next(o for o in loaded.objects if o["kind"] == "PodGroup")
    assert podgroup["spec"]["priorityClassName"] == "low"


def test_objects_in_kind_order_and_deterministic() -> None:
    jobs = "- {name: j, queue: team-a, tasks: [{status: Binding, node: gpu-a-0}]}"
    extra = "topologies: [{name: t, levels: [kubernetes.io/hostname]}]\n"
    first, second = scenario(jobs, extra), scenario(jobs, extra)
    kinds = [o["kind"] for o in first.objects]
    order = ["PriorityClass", "Topology", "Node", "Queue", "PodGroup", "Pod", "BindRequest"]
    assert sorted(kinds, key=order.index) == kinds
    assert set(kinds) == set(order)
    assert first == second
    uids = [o["metadata"]["uid"] for o in first.objects]
    assert len(set(uids)) == len(uids)


def test_scenario_extras() -> None:
    s = scenario(
        "- {name: j, namespace: ns, queue: team-a, submitAt: 30s, duration: 90, owner: {kind: RayCluster},"
        " tasks: [{name: a}, {name: b}]}",
        'name: demo\nnow: 2026-03-01T12:00:00Z\ncycles: 2\nconfig: {actions: "allocate, reclaim"}\n'
        "expect:\n  tasks:\n    a: {status: Binding, node: gpu-a-1}\n  jobs:\n    j: {status: Pipelined}\n"
        "  nodes:\n    gpu-a-0: {idleGpus: 2, releasingGpus: 1}\n"
        "  queues:\n    team-a: {fairShare: {gpu: 4}, allocated: {gpu: 3, cpu: 8000}}\n  maxBinds: 5\n",
    )
    assert (s.name, s.cycles, s.config) == ("demo", 2, {"actions": "allocate, reclaim"})
    assert s.now == NOW + 59 * 86400 + 12 * 3600
    assert s.jobs == [JobMeta("j", "ns", "team-a", 30.0, 90.0, "RayCluster", ("a", "b"))]
    assert s.expect is not None
    assert s.expect.tasks == {"ns/a": StatusExpectation("Binding", "gpu-a-1")}
    assert s.expect.jobs == {"ns/j": StatusExpectation("Pipelined", None)}
    assert s.expect.nodes == {"gpu-a-0": {"idleGpus": 2.0, "releasingGpus": 1.0}}
    assert s.expect.queues == {"team-a": {"fairShare": {"gpu": 4.0}, "allocated": {"gpu": 3.0, "cpu": 8000.0}}}
    assert (s.expect.max_binds, s.expect.max_evictions, s.expect.max_pipelines) == (5, None, None)
    assert obj(s, "Pod", "a")["metadata"]["namespace"] == "ns"


def test_defaults_of_a_bare_scenario() -> None:
    s = scenario()
    assert (s.name, s.now, s.cycles, s.config, s.jobs, s.expect) == ("test", DEFAULT_NOW, None, {}, [], None)


def test_objects_do_not_share_nested_values() -> None:
    s = scenario("- {name: j, queue: team-a, replicas: 2, template: {tolerations: [{key: k}]}}")
    first, second = obj(s, "Pod", "j-0"), obj(s, "Pod", "j-1")
    assert first["spec"]["tolerations"] == second["spec"]["tolerations"]
    assert first["spec"]["tolerations"] is not second["spec"]["tolerations"]


# --- manifests ---

MULTI_DOC = """
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {pod-group-name: pg}
  creationTimestamp: "2026-02-01T00:00:00Z"
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: job, uid: u1}]
spec:
  schedulerName: kai-scheduler
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: kube-system}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg, namespace: default, uid: pg-uid}
spec: {queue: q, minMember: 1}
---
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: "8", memory: 32Gi}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec: {resources: {gpu: {quota: 1, overQuotaWeight: 1, limit: -1}}}
"""

LIST = """
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: q}
  spec: {resources: {gpu: {quota: 1, overQuotaWeight: 1, limit: -1}}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d, namespace: default}
- apiVersion: kai.scheduler/v1alpha1
  kind: Topology
  metadata: {name: t}
  spec: {levels: [{nodeLabel: kubernetes.io/hostname}]}
"""


SHIPPED_CLASSES = [("PriorityClass", name) for name in ("train", "build-preemptible", "build", "inference")]


def test_multi_document_manifest() -> None:
    s = loads(MULTI_DOC, "snap.yaml")
    kinds = [(o["kind"], o["metadata"]["name"]) for o in s.objects]
    assert kinds == [*SHIPPED_CLASSES, ("Node", "n"), ("Queue", "q"), ("PodGroup", "pg"), ("Pod", "p")]
    assert s.ignored_kinds == ("ConfigMap",)
    pod = obj(s, "Pod", "p")
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["uid"]
    assert obj(s, "PodGroup", "pg")["metadata"]["uid"] == "pg-uid"
    assert s.jobs == [JobMeta("pg", "default", "q", 0.0, None, "Job", ("p",))]
    assert s.now == NOW + 31 * 86400
    assert (s.name, s.expect, s.cycles, s.config) == ("snap", None, None, {})


def test_list_manifest() -> None:
    s = loads(LIST, "list.yaml")
    assert [(o["kind"], o["metadata"]["name"]) for o in s.objects] == [
        *SHIPPED_CLASSES,
        ("Topology", "t"),
        ("Queue", "q"),
    ]
    assert s.ignored_kinds == ("Deployment",)
    assert s.now == DEFAULT_NOW
    assert obj(s, "Queue", "q")["spec"]["resources"]["gpu"] == {"quota": 1, "overQuotaWeight": 1, "limit": -1}


CLASSED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {schedulerName: kai-scheduler, priorityClassName: build, containers: [{name: c}]}
"""


def test_a_manifest_has_the_shipped_classes() -> None:
    s = loads(CLASSED_POD, "pods.yaml")
    assert classes(s) == [("train", 50), ("build-preemptible", 75), ("build", 100), ("inference", 125)]
    assert obj(s, "PriorityClass", "build")["preemptionPolicy"] == "PreemptLowerPriority"


def test_a_class_the_manifest_defines_wins() -> None:
    own = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: build}\nvalue: 30\n---\n"
    s = loads(own + CLASSED_POD, "pods.yaml")
    assert classes(s) == [("build", 30), ("train", 50), ("build-preemptible", 75), ("inference", 125)]


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "quick.yaml"
    path.write_text(textwrap.dedent(CLUSTER))
    s = load(path)
    assert (s.name, s.source) == ("quick", str(path))
    assert names(s, "Queue") == ["research", "team-a"]
