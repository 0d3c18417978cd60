"""Every kind parses from realistic Kubernetes JSON and writes back; bad fields are one ObjectError naming them.

The JSON below is what `kubectl get … -o json` prints (server fields included), or, for KAI's CRDs, the
examples of BEHAVIOR.md §1.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kai_scheduler.api import KINDS, PARSERS, ObjectError, constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup, SubGroup, TopologyConstraint, fit_message
from kai_scheduler.api.priorityclass import PriorityClass
from kai_scheduler.api.queue import Queue, QueueResource
from kai_scheduler.api.resources import GpuRequest
from kai_scheduler.api.selectors import LabelSelector
from kai_scheduler.api.topology import Topology, TopologyLevel

JSON = dict[str, Any]
GiB = 2**30
KiB = 2**10

NODE: JSON = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-a-0",
        "uid": "7c1f0d2e-0000-4000-8000-000000000001",
        "resourceVersion": "81234",
        "creationTimestamp": "2025-12-01T10:00:00Z",
        "labels": {
            "kubernetes.io/hostname": "gpu-a-0",
            "nvidia.com/gpu.memory": "81920",
            "nvidia.com/gpu.count": "8",
            "topology/rack": "r1",
        },
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
    },
    "spec": {"podCIDR": "10.244.1.0/24", "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {
            "cpu": "96",
            "memory": "1056375384Ki",
            "nvidia.com/gpu": "8",
            "pods": "110",
            "ephemeral-storage": "959786032Ki",
            "hugepages-1Gi": "0",
        },
        "allocatable": {
            "cpu": "95500m",
            "memory": "1055324760Ki",
            "nvidia.com/gpu": "8",
            "pods": "110",
            "ephemeral-storage": "884538805627",
            "hugepages-1Gi": "0",
        },
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
        ],
        "nodeInfo": {"kubeletVersion": "v1.31.2"},
    },
}

POD: JSON = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "train-1-worker-0",
        "namespace": "team-a",
        "uid": "0b7d6c55-0000-4000-8000-000000000002",
        "resourceVersion": "99120",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {
            "kai.scheduler/queue": "team-a",
            "kai.scheduler/subgroup-name": "workers",
            "training.kubeflow.org/job-role": "worker",
        },
        "annotations": {"pod-group-name": "pg-train-1-5b2c"},
        "ownerReferences": [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "train-1",
                "uid": "5b2c0000-0000-4000-8000-000000000003",
                "controller": True,
            }
        ],
    },
    "spec": {
        "schedulerName": "kai-scheduler",
        "priorityClassName": "train",
        "nodeSelector": {"topology/rack": "r1"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["4"]}]}
                    ]
                }
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 20,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "dataset-cache"}},
                            "topologyKey": "topology.kubernetes.io/zone",
                            "namespaceSelector": {},
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "train-1"}},
                            "topologyKey": "kubernetes.io/hostname",
                            "namespaces": ["team-a"],
                            "namespaceSelector": {"matchLabels": {"org.example.com/department": "research"}},
                        },
                    }
                ]
            },
        },
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "initContainers": [
            {"name": "fetch", "image": "busybox", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}
        ],
        "containers": [
            {
                "name": "trainer",
                "image": "nvcr.io/nvidia/pytorch:24.01-py3",
                "resources": {
                    "requests": {"cpu": "8", "memory": "64Gi"},
                    "limits": {"memory": "64Gi", "nvidia.com/gpu": "4"},
                },
            },
            {"name": "logger", "image": "fluent-bit", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
        ],
    },
    "status": {
        "phase": "Pending",
        "qosClass": "Burstable",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    },
}

PODGROUP: JSON = {
    "apiVersion": "scheduling.run.ai/v2alpha2",
    "kind": "PodGroup",
    "metadata": {
        "name": "disagg",
        "namespace": "team-a",
        "uid": "1d2e0000-0000-4000-8000-000000000004",
        "resourceVersion": "5001",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "annotations": {"kai.scheduler/last-start-timestamp": "2026-01-01T00:05:00Z"},
    },
    "spec": {
        "queue": "team-a",
        "priorityClassName": "inference",
        "minSubGroup": 2,
        "preemptibility": "non-preemptible",
        "topologyConstraint": {
            "topology": "cluster-topology",
            "requiredTopologyLevel": "zone",
            "preferredTopologyLevel": "rack",
        },
        "subGroups": [
            {
                "name": "prefill",
                "minMember": 2,
                "topologyConstraint": {"topology": "cluster-topology", "requiredTopologyLevel": "rack"},
            },
            {"name": "decode", "minSubGroup": 1},
            {"name": "decode-a", "parent": "decode", "minMember": 3},
            {"name": "decode-b", "parent": "decode", "minMember": 3},
        ],
        "markUnschedulable": False,
        "schedulingBackoff": 1,
        "preemptionDelay": "5m",
        "stalenessGracePeriod": "60s",
    },
    "status": {
        "schedulingConditions": [
            {
                "type": "UnschedulableOnNodePool",
                "nodePool": "default",
                "status": "True",
                "transitionID": "3",
                "lastTransitionTime": "2026-01-01T00:01:00Z",
                "reasons": [{"reason": "OverLimit", "message": "queue team-a would exceed its limit of 8 GPUs"}],
            }
        ]
    },
}

QUEUE: JSON = {
    "apiVersion": "scheduling.run.ai/v2",
    "kind": "Queue",
    "metadata": {
        "name": "team-a",
        "uid": "9a9a0000-0000-4000-8000-000000000005",
        "resourceVersion": "12",
        "creationTimestamp": "2025-11-01T00:00:00Z",
    },
    "spec": {
        "displayName": "Team A",
        "parentQueue": "org-1",
        "priority": 150,
        "reclaimMinRuntime": "10m",
        "preemptMinRuntime": "1h30m",
        "resources": {
            "gpu": {"quota": 4, "overQuotaWeight": 1, "limit": -1},
            "cpu": {"quota": 8000, "overQuotaWeight": 1, "limit": -1},
            "memory": {"quota": 32000, "overQuotaWeight": 2, "limit": 64000},
        },
        "allowedNamespaces": ["team-a", "team-a-dev"],
        "allowedNamespaceSelector": {
            "matchLabels": {"org": "1"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}],
        },
    },
    "status": {"childQueues": [], "allocated": {"nvidia.com/gpu": "2"}},
}

BINDREQUEST: JSON = {
    "apiVersion": "scheduling.run.ai/v1alpha2",
    "kind": "BindRequest",
    "metadata": {
        "name": "my-pod",
        "namespace": "team-a",
        "uid": "b1b10000-0000-4000-8000-000000000006",
        "labels": {"selected-node": "node-7"},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "my-pod",
                "uid": "a0a00000-0000-4000-8000-000000000007",
                "controller": False,
            }
        ],
    },
    "spec": {
        "podName": "my-pod",
        "selectedNode": "node-7",
        "receivedResourceType": "Fraction",
        "receivedGPU": {"count": 1, "portion": "0.50"},
        "selectedGPUGroups": ["3f6c-uuid"],
        "backoffLimit": 3,
    },
    "status": {"phase": "Failed", "reason": "node gone", "failedAttempts": 1},
}

PRIORITYCLASS: JSON = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "inference"},
    "value": 125,
    "globalDefault": False,
    "description": "Inference workloads (non-preemptible)",
    "preemptionPolicy": "PreemptLowerPriority",
}

TOPOLOGY: JSON = {
    "apiVersion": "kai.scheduler/v1alpha1",
    "kind": "Topology",
    "metadata": {"name": "cluster-topology"},
    "spec": {
        "levels": [
            {"nodeLabel": "cloud.provider.com/topology-block", "alias": "block"},
            {"nodeLabel": "cloud.provider.com/topology-rack", "alias": "rack"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    },
}

DEVICECLASS = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
}
RESOURCESLICE = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "basic": {
                    "attributes": {"productName": {"string": "H100"}, "index": {"int": 0}, "mig": {"bool": False}},
                    "capacity": {"memory": {"value": "80Gi"}},
                },
            }
        ],
    },
}
RESOURCECLAIM = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceClaim",
    "metadata": {"name": "shared", "namespace": "team-a", "labels": {"kai.scheduler/queue": "team-a"}},
    "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}]}},
    "status": {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "p", "device": "d"}]}
        },
        "reservedFor": [{"resource": "pods", "name": "pod-a", "uid": "u1"}],
    },
}
RESOURCECLAIMTEMPLATE = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu", "namespace": "team-a"},
    "spec": {
        "spec": {
            "devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}]}
        }
    },
}

EXAMPLES = {
    "DeviceClass": DEVICECLASS,
    "ResourceSlice": RESOURCESLICE,
    "ResourceClaim": RESOURCECLAIM,
    "ResourceClaimTemplate": RESOURCECLAIMTEMPLATE,
    "Node": NODE,
    "Pod": POD,
    "PodGroup": PODGROUP,
    "Queue": QUEUE,
    "BindRequest": BINDREQUEST,
    "PriorityClass": PRIORITYCLASS,
    "Topology": TOPOLOGY,
    "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}},
    "PodGang": {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "llm-0", "namespace": "default", "uid": "g-1"},
        "spec": {"podgroups": [{"name": "decode", "minReplicas": 1, "podReferences": []}]},
    },
}


# --- parsing realistic objects --------------------------------------------------------------------------


def test_every_kind_has_an_example() -> None:
    assert set(EXAMPLES) == set(KINDS)


def test_node() -> None:
    node = Node.from_dict(NODE)
    assert node.name == "gpu-a-0"
    assert node.allocatable["cpu"] == 95500
    assert node.allocatable["memory"] == 1055324760 * KiB
    assert node.allocatable[constants.RESOURCE_GPU] == 8
    assert node.allocatable["pods"] == 110
    assert node.capacity["cpu"] == 96000
    assert node.ready and not node.unschedulable
    assert [(t.key, t.value, t.effect) for t in node.taints] == [("nvidia.com/gpu", "", "NoSchedule")]
    assert node.gpu_memory_mib == 81900, "GPU memory is floored to a multiple of 100 MiB (§2)"
    assert node.meta.resource_version == "81234"


@pytest.mark.parametrize(
    "conditions, ready",
    [
        pytest.param([{"type": "Ready", "status": "False"}], False, id="Ready False is not ready"),
        pytest.param([{"type": "Ready", "status": "Unknown"}], False, id="Ready Unknown is not ready"),
        pytest.param([], True, id="no conditions is ready"),
    ],
)
def test_node_readiness(conditions: list[JSON], ready: bool) -> None:
    raw = {**NODE, "status": {**NODE["status"], "conditions": conditions}}
    assert Node.from_dict(raw).ready is ready


def test_pod() -> None:
    pod = Pod.from_dict(POD)
    assert (pod.name, pod.namespace, pod.phase, pod.node_name) == ("train-1-worker-0", "team-a", "Pending", "")
    assert pod.scheduler_name == "kai-scheduler" and pod.priority_class_name == "train"
    # containers 8 + 0.25 CPU beat the init container's 2; memory 64Gi + 128Mi; GPU from the limit
    assert pod.requests == {"cpu": 8250, "memory": 64 * GiB + 128 * 2**20, constants.RESOURCE_GPU: 4, "pods": 1}
    assert pod.gpu == GpuRequest(whole=4)
    assert pod.node_selector == {"topology/rack": "r1"}
    assert [r.operator for t in pod.node_affinity for r in t.requirements] == ["Gt"]
    assert [(t.weight, t.term.topology_key, t.term.namespaces) for t in pod.preferred_pod_affinity] == [
        (20, "topology.kubernetes.io/zone", ())
    ]
    assert [t.term.namespace_selector for t in pod.preferred_pod_affinity] == [LabelSelector()]  # `{}`: set, empty
    assert [(t.weight, t.term.topology_key, t.term.namespaces) for t in pod.preferred_pod_anti_affinity] == [
        (100, "kubernetes.io/hostname", ("team-a",))
    ]
    assert [t.term.namespace_selector for t in pod.preferred_pod_anti_affinity] == [
        LabelSelector((("org.example.com/department", "research"),))
    ]
    assert not pod.pod_affinity and not pod.pod_anti_affinity  # preferred terms are no required ones
    assert [(t.key, t.operator, t.effect) for t in pod.tolerations] == [
        ("nvidia.com/gpu", "Exists", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "Exists", "NoExecute"),
    ]
    assert pod.meta.owner_references[0].kind == "PyTorchJob" and pod.meta.owner_references[0].controller
    assert not pod.scheduling_gated


def test_a_megabyte_annotation_is_quoted_in_part_and_the_error_stays_one_short_line() -> None:
    pod = copy.deepcopy(POD)
    del pod["spec"]["containers"][0]["resources"]["limits"][constants.RESOURCE_GPU]
    pod["metadata"]["annotations"] = {constants.ANNOTATION_GPU_MEMORY: "9" * 2**21}
    with pytest.raises(ObjectError) as err:
        Pod.from_dict(pod)
    line = str(err.value)
    assert line.startswith("Pod team-a/train-1-worker-0 metadata.annotations.gpu-memory: want a positive number")
    assert line.endswith(" more characters)") and len(line) < 700 and "\n" not in line
    assert str(err.value.with_source("pods.yaml")) == f"pods.yaml: {line}"


def test_pod_defaults_to_the_default_scheduler() -> None:
    raw = copy.deepcopy(POD)
    del raw["spec"]["schedulerName"]
    assert Pod.from_dict(raw).scheduler_name == "default-scheduler"


def test_pod_with_scheduling_gates_is_gated() -> None:
    raw = copy.deepcopy(POD)
    raw["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    assert Pod.from_dict(raw).scheduling_gated


def test_podgroup() -> None:
    pg = PodGroup.from_dict(PODGROUP)
    assert (pg.queue, pg.priority_class_name, pg.preemptibility) == ("team-a", "inference", "non-preemptible")
    assert pg.min_member is None and pg.min_sub_group == 2
    assert pg.topology_constraint == TopologyConstraint("cluster-topology", "zone", "rack")
    assert pg.sub_groups == (
        SubGroup("prefill", 2, None, None, TopologyConstraint("cluster-topology", "rack", "")),
        SubGroup("decode", None, 1),
        SubGroup("decode-a", 3, None, "decode"),
        SubGroup("decode-b", 3, None, "decode"),
    )
    assert not pg.mark_unschedulable and pg.scheduling_backoff == 1
    assert (pg.preemption_delay, pg.staleness_grace_period) == (300.0, 60.0)
    [condition] = pg.scheduling_conditions
    assert (condition.node_pool, condition.transition_id) == ("default", "3")
    assert condition.reasons == [("OverLimit", "queue team-a would exceed its limit of 8 GPUs")]


def test_podgroup_defaults() -> None:
    pg = PodGroup.from_dict({"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "q"}})
    assert (pg.min_member, pg.min_sub_group, pg.preemptibility) == (None, None, "")
    assert pg.mark_unschedulable and pg.scheduling_backoff == -1
    assert pg.preemption_delay is None and pg.staleness_grace_period is None


def test_queue() -> None:
    q = Queue.from_dict(QUEUE)
    assert (q.name, q.display_name, q.parent_queue, q.priority) == ("team-a", "Team A", "org-1", 150)
    assert q.resources == {
        "gpu": QueueResource(4, 1, -1),
        "cpu": QueueResource(8000, 1, -1),
        "memory": QueueResource(32000, 2, 64000),
    }
    assert (q.reclaim_min_runtime, q.preempt_min_runtime) == (600.0, 5400.0)


def test_queue_omitted_resources_and_fields_follow_the_crd() -> None:
    """§1.1: an omitted resource or field is 0 (limit 0 admits nothing, weight 0 gets no surplus)."""
    q = Queue.from_dict({"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": 2}}}})
    assert q.priority == constants.DEFAULT_QUEUE_PRIORITY
    assert q.resources == {"gpu": QueueResource(2, 0, 0), "cpu": QueueResource(), "memory": QueueResource()}


def test_bind_request() -> None:
    br = BindRequest.from_dict(BINDREQUEST)
    assert (br.pod_name, br.selected_node, br.received_resource_type) == ("my-pod", "node-7", "Fraction")
    assert (br.received_gpu_count, br.received_gpu_portion, br.selected_gpu_groups) == (1, 0.5, ("3f6c-uuid",))
    assert (br.phase, br.reason, br.failed_attempts, br.backoff_limit) == ("Failed", "node gone", 1, 3)
    assert not br.is_failed, "one failed attempt of a backoff limit of 3 is retried, not given up"


@pytest.mark.parametrize(
    "backoff_limit, attempts, phase, failed",
    [
        pytest.param(None, 0, "Failed", True, id="nil backoff limit fails at once"),
        pytest.param(3, 3, "Failed", True, id="attempts reached the limit"),
        pytest.param(3, 2, "Failed", False, id="attempts below the limit"),
        pytest.param(None, 0, "Pending", False, id="pending is not failed"),
        pytest.param(None, 0, "Succeeded", False, id="succeeded is not failed"),
    ],
)
def test_bind_request_is_failed(backoff_limit: int | None, attempts: int, phase: str, failed: bool) -> None:
    raw = copy.deepcopy(BINDREQUEST)
    raw["spec"].pop("backoffLimit")
    if backoff_limit is not None:
        raw["spec"]["backoffLimit"] = backoff_limit
    raw["status"] = {"phase": phase, "failedAttempts": attempts}
    assert BindRequest.from_dict(raw).is_failed is failed


def test_priority_class() -> None:
    pc = PriorityClass.from_dict(PRIORITYCLASS)
    assert (pc.meta.name, pc.value, pc.global_default) == ("inference", 125, False)


def test_topology() -> None:
    topology = Topology.from_dict(TOPOLOGY)
    assert topology.levels == (
        TopologyLevel("cloud.provider.com/topology-block", "block"),
        TopologyLevel("cloud.provider.com/topology-rack", "rack"),
        TopologyLevel("kubernetes.io/hostname"),
    )
    assert topology.resolve("rack") == "cloud.provider.com/topology-rack"
    assert topology.resolve("kubernetes.io/hostname") == "kubernetes.io/hostname"
    assert topology.resolve("zone") is None


# --- writing back ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_to_dict_round_trips(kind: str) -> None:
    """Parse, write back, parse again: the same object (the issue: every kind is written to Kubernetes JSON)."""
    parse = PARSERS[kind]
    first: Any = parse(copy.deepcopy(EXAMPLES[kind]))
    written = first.to_dict()
    assert written["kind"] == kind
    assert written["apiVersion"] == EXAMPLES[kind]["apiVersion"]
    assert parse(written) == first


@pytest.mark.parametrize(
    "kind, path, text, seconds",
    [
        pytest.param("PodGroup", ("spec", "stalenessGracePeriod"), "300h", 1_080_000.0, id="a staleness grace of 300h"),
        pytest.param(
            "PodGroup",
            ("spec", "preemptionDelay"),
            "342h56m7s",
            1_234_567.0,
            id="a preemption delay not round in seconds",
        ),
        pytest.param("Queue", ("spec", "preemptMinRuntime"), "1000h", 3_600_000.0, id="a queue min runtime of 1000h"),
        pytest.param("Queue", ("spec", "reclaimMinRuntime"), "1500ms", 1.5, id="a sub-second min runtime"),
    ],
)
def test_durations_survive_the_round_trip(kind: str, path: tuple[str, str], text: str, seconds: float) -> None:
    """Durations are written as Go durations, which read back to the same seconds whatever their size."""
    raw = copy.deepcopy(EXAMPLES[kind])
    raw[path[0]][path[1]] = text
    first: Any = PARSERS[kind](raw)
    again: Any = PARSERS[kind](first.to_dict())
    attribute = {
        "stalenessGracePeriod": "staleness_grace_period",
        "preemptionDelay": "preemption_delay",
        "preemptMinRuntime": "preempt_min_runtime",
        "reclaimMinRuntime": "reclaim_min_runtime",
    }[path[1]]
    assert getattr(again, attribute) == seconds


def test_bind_request_portion_is_written_with_two_decimals() -> None:
    """§1.3: `receivedGPU.portion` is a string with 2 decimals."""
    written = BindRequest.from_dict(BINDREQUEST).to_dict()
    assert written["spec"]["receivedGPU"] == {"count": 1, "portion": "0.50"}


# --- bad fields -------------------------------------------------------------------------------------------


def _pod(*, spec: JSON | None = None, meta: JSON | None = None, status: JSON | None = None) -> JSON:
    return {
        "metadata": {"name": "p", "namespace": "ns", **(meta or {})},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **(spec or {})},
        "status": status or {},
    }


def _requests(requests: JSON, *, key: str = "requests") -> JSON:
    return _pod(spec={"containers": [{"name": "c", "resources": {key: requests}}]})


def _notes(**annotations: str) -> JSON:
    return _pod(meta={"annotations": {k.replace("_", "-"): v for k, v in annotations.items()}})


def _pg(**spec: Any) -> JSON:
    return {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "q", **spec}}


def _queue(**spec: Any) -> JSON:
    return {"metadata": {"name": "q"}, "spec": spec}


_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_SOFT_TERM = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}

REJECTS = [
    # wrong types
    pytest.param(
        "Pod",
        _pod(spec={"affinity": {"podAffinity": {_PREFERRED: [{"weight": 0, "podAffinityTerm": _SOFT_TERM}]}}}),
        f"Pod ns/p spec.affinity.podAffinity.{_PREFERRED}[0].weight: expected an integer from 1 to 100, got 0",
        id="a preferred term's weight is 1 to 100",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"affinity": {"podAntiAffinity": {_PREFERRED: [{"weight": 5}]}}}),
        f"Pod ns/p spec.affinity.podAntiAffinity.{_PREFERRED}[0].podAffinityTerm: expected a pod affinity term, "
        "got None",
        id="a preferred term needs its podAffinityTerm",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"affinity": {"podAntiAffinity": {_REQUIRED: [{**_SOFT_TERM, "namespaceSelector": ["team-a"]}]}}}),
        f"Pod ns/p spec.affinity.podAntiAffinity.{_REQUIRED}[0].namespaceSelector: expected a label selector, "
        "got ['team-a']",
        id="a namespaceSelector is a label selector",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"affinity": {"podAffinity": {_PREFERRED: [{"weight": 5, "podAffinityTerm": {}}]}}}),
        f"Pod ns/p spec.affinity.podAffinity.{_PREFERRED}[0].podAffinityTerm.topologyKey: missing topology key",
        id="a preferred term needs a topology key",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"nodeName": 5}),
        "Pod ns/p spec.nodeName: expected a string, got 5",
        id="a string field given a number",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"containers": "abc"}),
        "Pod ns/p spec.containers: expected a list, got 'abc'",
        id="a list field given a string says list in plain words",
    ),
    pytest.param(
        "Pod",
        _pod(meta={"labels": {"a": 1}}),
        "Pod ns/p metadata.labels.a: expected a string, got 1",
        id="a label value must be a string",
    ),
    pytest.param(
        "Pod",
        _pod(meta={"creationTimestamp": "yesterday"}),
        "Pod ns/p metadata.creationTimestamp: expected an RFC 3339 time, got 'yesterday'",
        id="a timestamp that is not RFC 3339",
    ),
    pytest.param(
        "Node",
        {"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
        "Node n spec.unschedulable: expected true or false, got 'yes'",
        id="a boolean given a string",
    ),
    pytest.param(
        "PodGroup",
        _pg(minMember="two"),
        "PodGroup ns/pg spec.minMember: expected an integer, got 'two'",
        id="an integer given a string",
    ),
    pytest.param(
        "PodGroup",
        _pg(queue=7),
        "PodGroup ns/pg spec.queue: expected a string, got 7",
        id="a queue name given a number",
    ),
    pytest.param(
        "Queue",
        _queue(resources={"gpu": {"quota": "lots"}}),
        "Queue q spec.resources.gpu.quota: expected a number, got 'lots'",
        id="a quota given a word",
    ),
    pytest.param(
        "Queue",
        _queue(priority="high"),
        "Queue q spec.priority: expected an integer, got 'high'",
        id="a priority given a word",
    ),
    pytest.param(
        "Queue",
        _queue(resources={"gpu": 5}),
        "Queue q spec.resources.gpu: expected a mapping, got 5",
        id="a resource block given a number",
    ),
    # quantities
    pytest.param(
        "Pod",
        _requests({"cpu": "-1"}),
        "Pod ns/p spec.containers[0].resources.requests.cpu: negative quantity '-1'",
        id="a negative request",
    ),
    pytest.param(
        "Pod",
        _requests({"memory": "lots"}, key="limits"),
        "Pod ns/p spec.containers[0].resources.limits.memory: invalid quantity 'lots'",
        id="an unparsable limit",
    ),
    pytest.param(
        "Node",
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "-8"}}},
        "Node n status.allocatable.cpu: negative quantity '-8'",
        id="a negative allocatable",
    ),
    pytest.param(
        "Node",
        {"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": "eight"}}},
        "Node n status.allocatable.nvidia.com/gpu: invalid quantity 'eight'",
        id="an unparsable allocatable",
    ),
    # enumerations
    pytest.param(
        "Pod",
        _pod(status={"phase": "Runnin"}),
        "Pod ns/p status.phase: unknown phase 'Runnin'; want one of Pending, Running, Succeeded, Failed, Unknown",
        id="an unknown pod phase lists the known",
    ),
    pytest.param(
        "Pod",
        _pod(spec={"tolerations": [{"key": "k", "operator": "Maybe"}]}),
        "Pod ns/p spec.tolerations[0].operator: unknown operator 'Maybe'",
        id="an unknown toleration operator",
    ),
    pytest.param(
        "Node",
        {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}},
        "Node n spec.taints[0].effect: unknown effect 'Sometimes'",
        id="an unknown taint effect",
    ),
    # an unknown preemptibility or an unreadable duration keeps the PodGroup (PodGroup.warnings, issue 3):
    # tests/actions/test_preempt.py::test_bad_podgroup_fields_fall_back_to_defaults
    pytest.param(
        "BindRequest",
        {
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"podName": "b", "selectedNode": "n", "receivedResourceType": "Whole"},
        },
        "BindRequest ns/b spec.receivedResourceType: unknown type 'Whole'",
        id="an unknown resource type",
    ),
    pytest.param(
        "BindRequest",
        {
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"podName": "b", "selectedNode": "n"},
            "status": {"phase": "Done"},
        },
        "BindRequest ns/b status.phase: unknown phase 'Done'",
        id="an unknown bind request phase",
    ),
    # PodGroup structure
    pytest.param(
        "PodGroup",
        _pg(minMember=2, minSubGroup=1),
        "PodGroup ns/pg spec.minSubGroup: minMember and minSubGroup are mutually exclusive",
        id="minMember with minSubGroup",
    ),
    pytest.param(
        "PodGroup",
        _pg(minMember=-1),
        "PodGroup ns/pg spec.minMember: must be at least 0, got -1",
        id="a negative minMember",
    ),
    pytest.param(
        "PodGroup",
        _pg(subGroups=[{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}]),
        "PodGroup ns/pg spec.subGroups[1].name: duplicate subgroup 'a'",
        id="a duplicate subgroup",
    ),
    pytest.param(
        "PodGroup",
        _pg(subGroups=[{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]),
        "PodGroup ns/pg spec.subGroups[0].parent: subgroup 'a' is part of a parent cycle",
        id="a subgroup cycle",
    ),
    pytest.param(
        "PodGroup",
        _pg(subGroups=[{"name": "a", "parent": "a", "minMember": 1}]),
        "PodGroup ns/pg spec.subGroups[0].parent: subgroup 'a' is part of a parent cycle",
        id="a subgroup that is its own parent",
    ),
    pytest.param(
        "PodGroup",
        _pg(subGroups=[{"name": "a", "parent": "x", "minMember": 1}]),
        "PodGroup ns/pg spec.subGroups[0].parent: no subgroup named 'x'",
        id="a missing subgroup parent",
    ),
    pytest.param(
        "PodGroup",
        _pg(subGroups=[{"name": "a", "minMember": 1, "minSubGroup": 1}]),
        "PodGroup ns/pg spec.subGroups[0].minSubGroup: minMember and minSubGroup are mutually exclusive",
        id="minMember with minSubGroup on a subgroup",
    ),
    # Queue values
    pytest.param(
        "Queue",
        _queue(resources={"gpu": {"quota": -2}}),
        "Queue q spec.resources.gpu.quota: must be -1 (unlimited) or at least 0, got -2",
        id="a negative quota other than -1",
    ),
    pytest.param(
        "Queue",
        _queue(resources={"gpu": {"limit": -5}}),
        "Queue q spec.resources.gpu.limit: must be -1 (no limit) or at least 0, got -5",
        id="a negative limit other than -1",
    ),
    pytest.param(
        "Queue",
        _queue(resources={"gpu": {"overQuotaWeight": -1}}),
        "Queue q spec.resources.gpu.overQuotaWeight: must be at least 0, got -1",
        id="a negative weight",
    ),
    pytest.param(
        "Queue",
        _queue(resources={"gpus": {}}),
        "Queue q spec.resources.gpus: unknown resource; want one of gpu, cpu, memory",
        id="an unknown queue resource",
    ),
    # GPU request forms (§2)
    pytest.param(
        "Pod",
        _notes(gpu_fraction="1.5"),
        "Pod ns/p metadata.annotations.gpu-fraction: want a number in (0, 1], got '1.5'",
        id="gpu-fraction above 1",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_fraction="0"),
        "Pod ns/p metadata.annotations.gpu-fraction: want a number in (0, 1], got '0'",
        id="gpu-fraction 0",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_fraction="abc"),
        "Pod ns/p metadata.annotations.gpu-fraction: want a number in (0, 1], got 'abc'",
        id="gpu-fraction not a number",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_fraction="0.5", gpu_memory="2000"),
        "Pod ns/p metadata.annotations: gpu-fraction and gpu-memory are mutually exclusive",
        id="gpu-fraction with gpu-memory",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_fraction_num_devices="2"),
        "Pod ns/p metadata.annotations.gpu-fraction-num-devices: needs gpu-fraction or gpu-memory",
        id="num-devices without a fraction",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_fraction="0.5", gpu_fraction_num_devices="0"),
        "Pod ns/p metadata.annotations.gpu-fraction-num-devices: want a positive integer, got '0'",
        id="zero devices",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_memory="-5"),
        "Pod ns/p metadata.annotations.gpu-memory: want a positive number of MiB, got '-5'",
        id="negative gpu-memory",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_memory="20Gi"),
        "Pod ns/p metadata.annotations.gpu-memory: want a positive number of MiB, got '20Gi' (20Gi is 20480 MiB)",
        id="gpu-memory as a byte quantity",
    ),
    pytest.param(
        "Pod",
        _notes(gpu_memory="20G"),
        "Pod ns/p metadata.annotations.gpu-memory: want a positive number of MiB, got '20G' (20G is about 19073 MiB)",
        id="gpu-memory as a decimal byte quantity",
    ),
    pytest.param(
        "Pod",
        {
            **_requests({"nvidia.com/gpu": "1"}),
            "metadata": {"name": "p", "namespace": "ns", "annotations": {"gpu-fraction": "0.5"}},
        },
        "Pod ns/p metadata.annotations: a fractional GPU request cannot be combined with nvidia.com/gpu",
        id="a fraction with whole GPUs",
    ),
    # other kinds
    pytest.param(
        "PriorityClass",
        {"metadata": {"name": "x"}},
        "PriorityClass x value: missing priority value",
        id="a priority class without value",
    ),
    pytest.param(
        "Topology",
        {
            "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]},
        },
        "Topology t spec.levels[0].nodeLabel: kubernetes.io/hostname may only be the last level",
        id="hostname above another level",
    ),
    pytest.param(
        "Topology",
        {"metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "rack"}]}},
        "Topology t spec.levels[1].nodeLabel: duplicate level 'rack'",
        id="a repeated level",
    ),
    pytest.param(
        "Topology",
        {"metadata": {"name": "t"}, "spec": {"levels": []}},
        "Topology t spec.levels: needs 1 to 16 levels, has 0",
        id="no levels",
    ),
]


@pytest.mark.parametrize("kind, raw, message", REJECTS)
def test_bad_field_is_one_error_naming_object_and_field(kind: str, raw: JSON, message: str) -> None:
    with pytest.raises(ObjectError) as err:
        PARSERS[kind](raw)
    assert str(err.value) == message
    assert "\n" not in str(err.value)
    assert err.value.kind == kind


def test_a_fractional_whole_gpu_count_is_rejected() -> None:
    with pytest.raises(ObjectError, match=r"GPU count 1\.5 is not whole") as err:
        Pod.from_dict(_requests({"nvidia.com/gpu": "1.5"}))
    assert err.value.field.startswith("spec.containers")


def test_a_missing_name_is_an_error() -> None:
    with pytest.raises(ObjectError, match=r"metadata\.name: missing name"):
        Node.from_dict({"metadata": {}, "status": {}})


@pytest.mark.parametrize(
    "annotations, want",
    [
        pytest.param({"gpu-fraction": "0.5"}, GpuRequest(fraction=0.5), id="a half GPU"),
        pytest.param({"gpu-fraction": "1"}, GpuRequest(fraction=1.0), id="the scheduler accepts a fraction of 1"),
        pytest.param(
            {"gpu-fraction": "0.25", "gpu-fraction-num-devices": "2"},
            GpuRequest(fraction=0.25, num_devices=2),
            id="the same portion on two devices",
        ),
        pytest.param({"gpu-memory": "2000"}, GpuRequest(memory_mib=2000), id="GPU memory in MiB"),
        pytest.param(
            {"gpu-memory": "2000", "gpu-fraction-num-devices": "3"},
            GpuRequest(memory_mib=2000, num_devices=3),
            id="GPU memory on three devices",
        ),
        pytest.param({}, GpuRequest(), id="no GPU"),
    ],
)
def test_gpu_request_forms(annotations: dict[str, str], want: GpuRequest) -> None:
    assert Pod.from_dict(_pod(meta={"annotations": annotations})).gpu == want


# --- the pod request rule (§3.1) ------------------------------------------------------------------------


def _container(cpu: str, memory: str = "1Gi", *, sidecar: bool = False, limits: bool = False) -> JSON:
    resources = {"limits" if limits else "requests": {"cpu": cpu, "memory": memory}}
    out: JSON = {"name": "c", "resources": resources}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@pytest.mark.parametrize(
    "spec, cpu, memory",
    [
        pytest.param({"containers": [_container("1"), _container("500m")]}, 1500, 2 * GiB, id="containers add up"),
        pytest.param(
            {"initContainers": [_container("4", "1Gi")], "containers": [_container("2", "3Gi")]},
            4000,
            3 * GiB,
            id="an init container larger than the containers sets the peak per resource",
        ),
        pytest.param(
            {"initContainers": [_container("1"), _container("3")], "containers": [_container("2")]},
            3000,
            GiB,
            id="init containers run one at a time: their max, not their sum",
        ),
        pytest.param(
            {"initContainers": [_container("1", sidecar=True)], "containers": [_container("2")]},
            3000,
            2 * GiB,
            id="a native sidecar runs beside the containers",
        ),
        pytest.param(
            {"initContainers": [_container("1", sidecar=True), _container("3")], "containers": [_container("1")]},
            4000,
            2 * GiB,
            id="an init container after a sidecar runs beside it",
        ),
        pytest.param(
            {"initContainers": [_container("3"), _container("1", sidecar=True)], "containers": [_container("1")]},
            3000,
            2 * GiB,
            id="an init container before a sidecar does not run beside it",
        ),
        pytest.param(
            {"containers": [_container("2")], "overhead": {"cpu": "250m", "memory": "120Mi"}},
            2250,
            GiB + 120 * 2**20,
            id="pod overhead is added",
        ),
        pytest.param(
            {"containers": [_container("2", "2Gi", limits=True)]},
            2000,
            2 * GiB,
            id="a limit without a request is the request",
        ),
        pytest.param({"containers": []}, 0, 0, id="no containers asks nothing but a pod slot"),
    ],
)
def test_pod_requests(spec: JSON, cpu: float, memory: float) -> None:
    requests = Pod.from_dict({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}).requests
    assert requests.get("cpu", 0) == cpu
    assert requests.get("memory", 0) == memory
    assert requests["pods"] == 1, "every pod takes one pod slot"


FIT_MESSAGES = [
    pytest.param([], "Unable to schedule podgroup", id="no reason"),
    pytest.param([("OverLimit", "queue q is full")], "OverLimit: queue q is full.", id="one reason names itself"),
    pytest.param(
        [("Unschedulable", "no room."), ("PodSchedulingErrors", "a taint")],
        "Unable to schedule podgroup: no room. a taint.",
        id="several reasons: KAI's generic head",
    ),
    pytest.param(
        [("Unschedulable", "a taint"), ("Unschedulable", "no room"), ("Unschedulable", "a taint")],
        "Unable to schedule podgroup: 2 a taint. no room.",
        id="a repeated message is counted",
    ),
]


@pytest.mark.parametrize("reasons, message", FIT_MESSAGES)
def test_fit_message_words_the_reasons_as_kai(reasons: list[tuple[str, str]], message: str) -> None:
    assert fit_message(reasons) == message
