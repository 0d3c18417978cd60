"""Taking over a cluster NVIDIA's KAI Scheduler was running (docs/kai-users.md, "Replacing KAI on a running cluster").

The suite's components are stopped; the test writes, object by object, what KAI's components leave behind on a
running cluster (BEHAVIOR.md §1, §2, §6, §8): queues with their status, PodGroups as KAI's pod grouper names and
fills them (a batch Job, a PyTorchJob gang, a Deployment's pod, a fractional pod), running pods with KAI's
annotations and labels and their Succeeded BindRequests (one bound before KAI's binder wrote its status), a GPU
shared through a reservation pod with its index and the shared-GPU ConfigMaps, BindRequests not yet bound (one of
a fractional pod whose reservation pod KAI's binder had made), a failed one, a pipelined pod, and a pending gang
with KAI's `UnschedulableOnNodePool` condition. Then this project's components start, and:

- no PodGroup is created or renamed, no pod is regrouped, the PodGroups' specs stay as KAI wrote them (but a root
  `minMember` beside subgroups, see `_gang_spec`);
- no pod is evicted (no Evict event) and none moves; the running pods' BindRequests are KAI's, all Succeeded;
- the in-flight BindRequests are bound, once, on their node (and GPU group); the failed one is dropped and its pod
  placed again with a new one (§8.1 item 4);
- the statuses the controllers write are KAI's (queue and PodGroup `resourcesStatus`), and so are the PodGroups'
  `last-start-timestamp`s;
- a new fractional pod gets the other half of the shared GPU: same GPU group, same reservation pod, its index;
- a whole-GPU pod is never given the GPU the reservation pod holds;
- the pending gang is placed once room appears, and its condition is cleared.

Where BEHAVIOR.md is silent, what KAI writes is assumed as noted beside each object.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest

from kai_scheduler.api.fields import format_time, parse_time
from kai_scheduler.api.quantity import parse_quantity
from kai_scheduler.store.interface import JSON, NotFound
from tests.e2e import harness
from tests.e2e.checks import hold
from tests.e2e.harness import COMPONENTS, NAMESPACE, NODE_PREFIX, RESERVATION_NAMESPACE, Cluster, pod, queue

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)

GPU = "nvidia.com/gpu"
ORG, TEAM_A, TEAM_B = "e2e-cut-org", "e2e-cut-a", "e2e-cut-b"
GROUP = "3f6c1a52-8d0e-4b7a-9c11-0f5e2d7a4b90"  # the GPU group KAI's scheduler chose (a UUID)
RESERVATION = f"gpu-reservation-{NODE_PREFIX}-1-x7k2q"  # KAI names it by node and a random suffix (assumed)
PREFIX_A = "cut-frac-a-2x9bq4m"  # runai/shared-gpu-configmap, as KAI's admission webhook set it
PREFIX_B = "cut-frac-b-7hk5wq2"
# A second group, on node 0: KAI's binder made its reservation pod (the device plugin gave it index 3) and stopped
# before binding the in-flight fractional pod that selected it.
GROUP_2 = "9d2e7b14-5a60-4c3f-8e21-6b7a0c9f3d58"
RESERVATION_2 = f"gpu-reservation-{NODE_PREFIX}-0-m4r8t"
PREFIX_C = "cut-frac-inflight-q2w6z9x"
NODE = [f"{NODE_PREFIX}-{i}" for i in range(4)]
QUOTA_A = 27.5  # the GPUs team A's running pods hold
CPU_PER_POD, MEM_PER_POD = "100m", "64Mi"  # what harness.pod requests


def test_a_cluster_kai_was_running_is_taken_over_as_it_is(clean: Cluster) -> None:
    processes = clean.processes
    for component in COMPONENTS:
        processes.kill(component)
    started = time.time()
    try:
        kai = _write_kais_state(clean)
        clean.wait("KAI's pods running", lambda: _running(clean, kai["running"]), timeout=60)
        before = _podgroups(clean)
        groups_of = {name: _pod(clean, name)["metadata"]["annotations"]["pod-group-name"] for name in kai["pods"]}
        nodes_of = {name: _pod(clean, name)["spec"]["nodeName"] for name in kai["running"]}
        kai["requests"] = _bind_requests(clean)
        for component in COMPONENTS:
            processes.start_component(component)
        _check_taken_over(clean, kai, before, groups_of, nodes_of, started)
        _check_new_work(clean, kai, started)
    finally:
        for component in COMPONENTS:
            if component not in processes.running:
                processes.start_component(component)
        for name in (ORG, TEAM_A, TEAM_B):
            with contextlib.suppress(NotFound):
                clean.store.delete("queues", name)


# --- what KAI left ---------------------------------------------------------------------------------------------


def _write_kais_state(cluster: Cluster) -> dict[str, Any]:
    store = cluster.store
    for q in (
        queue(ORG, gpu_quota=32),
        # Team A is given exactly what it holds, team B the rest: were team A counted above what it holds (a
        # shared GPU counted twice, a reservation pod charged to it), team B's probe pod, below its quota, would
        # reclaim from it (checked: with team A's quota 1 GPU below what it holds, a team A pod is reclaimed).
        queue(TEAM_A, gpu_quota=QUOTA_A, parent=ORG),
        queue(TEAM_B, gpu_quota=32 - QUOTA_A, parent=ORG),
    ):
        store.create(q)
    pods: list[str] = []
    running: list[str] = []
    pgs: dict[str, str] = {}  # what -> PodGroup name
    now = time.time()

    # A batch Job of one 1-GPU pod on node 0 (pg-<job>-<uid>, minMember 1, train).
    job = store.create(harness.suspended_job("cut-job", TEAM_A))
    pgs["job"] = _podgroup(cluster, job, min_member=1, queue_name=TEAM_A, priority="train", running=True)
    _running_pod(cluster, "cut-job-0", gpus=1, node=NODE[0], queue_name=TEAM_A, group=pgs["job"], owner=job)
    # A PyTorchJob gang (master + 2 workers, 2 GPUs each) on node 0, with KAI's master/worker subgroups.
    ptj = store.create(_pytorchjob("cut-ptj"))
    pgs["ptj"] = _podgroup(
        cluster,
        ptj,
        min_member=3,
        queue_name=TEAM_A,
        priority="train",
        running=True,
        subgroups=[{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}],
    )
    for i, role in enumerate(("master", "worker", "worker")):
        _running_pod(
            cluster,
            f"cut-ptj-{role}-{i}",
            gpus=2,
            node=NODE[0],
            queue_name=TEAM_A,
            group=pgs["ptj"],
            owner=ptj,
            controller=True,
            labels={
                "training.kubeflow.org/replica-type": role,
                "training.kubeflow.org/replica-index": str(i if role == "master" else i - 1),
                "kai.scheduler/subgroup-name": role,
            },
        )
    # A Deployment's pod (6 GPUs, node 1): its PodGroup is per pod, pg-<pod>-<pod uid>, owned by the pod, inference.
    deployment, replicaset = _deployment(cluster, "cut-dep")
    dep_pod = _running_pod(
        cluster,
        "cut-dep-6d4cf56db6-abcde",
        gpus=6,
        node=NODE[1],
        queue_name=TEAM_A,
        group="",
        owner=replicaset,
        controller=True,
        labels={"app": "cut-dep", "pod-template-hash": "6d4cf56db6"},
    )
    pgs["dep"] = _podgroup(
        cluster, dep_pod, min_member=1, queue_name=TEAM_A, priority="inference", running=True, top=deployment
    )
    store.patch(
        "pods", dep_pod["metadata"]["name"], NAMESPACE, {"metadata": {"annotations": {"pod-group-name": pgs["dep"]}}}
    )
    # Half a GPU on node 1, behind KAI's reservation pod for GPU group GROUP (index 0).
    store.create(_reservation_pod(RESERVATION, GROUP, NODE[1], "0"))
    frac = _running_pod(
        cluster,
        "cut-frac-a",
        gpus=0.5,
        node=NODE[1],
        queue_name=TEAM_A,
        group="",
        priority_class="build",
        labels={"runai-gpu-group": GROUP},
        annotations={"runai/shared-gpu-configmap": PREFIX_A},
    )
    pgs["frac"] = _podgroup(cluster, frac, min_member=1, queue_name=TEAM_A, priority="build", running=True)
    store.patch("pods", "cut-frac-a", NAMESPACE, {"metadata": {"annotations": {"pod-group-name": pgs["frac"]}}})
    for name, data in (
        (f"{PREFIX_A}-shared-gpu-0", {"NVIDIA_VISIBLE_DEVICES": "0", "RUNAI_NUM_OF_GPUS": "0.5"}),
        (f"{PREFIX_A}-shared-gpu-0-evar", {}),
    ):
        store.create(_configmap(name, frac, data))
    # A Job of two 6-GPU pods filling nodes 2 and 3: what stands between the pending gang and room.
    blocker = store.create(harness.suspended_job("cut-block", TEAM_A))
    pgs["block"] = _podgroup(cluster, blocker, min_member=1, queue_name=TEAM_A, priority="train", running=True)
    for i in (0, 1):
        _running_pod(
            cluster, f"cut-block-{i}", gpus=6, node=NODE[2 + i], queue_name=TEAM_A, group=pgs["block"], owner=blocker
        )
    # A bare pod KAI's binder bound on node 2 and stopped before writing its BindRequest's status.
    bound = _running_pod(cluster, "cut-bound", gpus=1, node=NODE[2], queue_name=TEAM_A, group="", bind_status={})
    pgs["bound"] = _podgroup(cluster, bound, min_member=1, queue_name=TEAM_A, priority="train", running=True)
    store.patch("pods", "cut-bound", NAMESPACE, {"metadata": {"annotations": {"pod-group-name": pgs["bound"]}}})
    # A 1-GPU pod on node 1, its last whole GPU: no node has a free one (nothing can be moved by consolidation).
    fill = _running_pod(cluster, "cut-fill", gpus=1, node=NODE[1], queue_name=TEAM_A, group="")
    pgs["fill"] = _podgroup(cluster, fill, min_member=1, queue_name=TEAM_A, priority="train", running=True)
    store.patch("pods", "cut-fill", NAMESPACE, {"metadata": {"annotations": {"pod-group-name": pgs["fill"]}}})
    running += [
        "cut-fill",
        "cut-bound",
        "cut-job-0",
        "cut-ptj-master-0",
        "cut-ptj-worker-1",
        "cut-ptj-worker-2",
        dep_pod["metadata"]["name"],
        "cut-frac-a",
        "cut-block-0",
        "cut-block-1",
    ]

    # In team B, waiting: a pod whose BindRequest KAI's scheduler created and its binder never bound (node 2) ...
    inflight = _pending_pod(cluster, "cut-inflight", gpus=1, queue_name=TEAM_B, node_selector=NODE[2])
    _bind_request(cluster, inflight, NODE[2])
    # ... a fractional one whose BindRequest selected a new GPU group on node 0, its reservation pod made ...
    store.create(_reservation_pod(RESERVATION_2, GROUP_2, NODE[0], "3"))
    # (non-preemptible: a preemptible half could be moved by consolidation to node 1's free half, freeing a whole
    # GPU here for cut-bound and node 2 for the probe below)
    frac_inflight = _pending_pod(
        cluster,
        "cut-frac-inflight",
        gpus=0.5,
        queue_name=TEAM_B,
        annotations={"runai/shared-gpu-configmap": PREFIX_C},
        priority_class="build",
    )
    _bind_request(cluster, frac_inflight, NODE[0], groups=[GROUP_2])
    # ... one whose BindRequest failed (backoffLimit unset, as the scheduler creates it; §8.1 item 4) ...
    failed = _pending_pod(cluster, "cut-failed", gpus=1, queue_name=TEAM_B, node_selector=NODE[3])
    _bind_request(
        cluster,
        failed,
        NODE[3],
        status={"phase": "Failed", "reason": "failed to bind pod: binding rejected", "failedAttempts": 1},
    )
    # ... a pipelined pod (Pending; KAI writes the Pipelined event only) ...
    pipelined = _pending_pod(cluster, "cut-pipe", gpus=1, queue_name=TEAM_B, node_selector=NODE[3])
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"cut-pipe.{pipelined['metadata']['uid'][:8]}", "namespace": NAMESPACE},
            "involvedObject": _ref(pipelined),
            "reason": "Pipelined",
            "message": f"pod {NAMESPACE}/cut-pipe is pipelined to node {NODE[3]}",
            "type": "Normal",
            "source": {"component": "kai-scheduler"},
            "firstTimestamp": format_time(now),
            "lastTimestamp": format_time(now),
            "count": 1,
        }
    )
    # ... and a gang of two 3-GPU pods (minMember 2) no node had room for.
    gang_job = harness.suspended_job("cut-gang", TEAM_B)
    gang_job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "2"}
    gang = store.create(gang_job)
    pgs["gang"] = _podgroup(cluster, gang, min_member=2, queue_name=TEAM_B, priority="train", running=False)
    store.patch(
        "podgroups",
        pgs["gang"],
        NAMESPACE,
        {
            "status": {
                "schedulingConditions": [
                    {
                        "type": "UnschedulableOnNodePool",
                        "nodePool": "default",
                        "reasons": [{"reason": "Unschedulable", "message": "2 pods of 3 GPUs: no node has room"}],
                        "status": "True",
                        "transitionID": "0",
                        "lastTransitionTime": format_time(now),
                    }
                ]
            }
        },
        "status",
    )
    for i in (0, 1):
        _pending_pod(cluster, f"cut-gang-{i}", gpus=3, queue_name=TEAM_B, group=pgs["gang"], owner=gang)
    for name in ("cut-inflight", "cut-frac-inflight", "cut-failed", "cut-pipe"):
        priority = "build" if name == "cut-frac-inflight" else "train"
        pg = _podgroup(cluster, _pod(cluster, name), min_member=1, queue_name=TEAM_B, priority=priority, running=False)
        pgs[name] = pg
        store.patch("pods", name, NAMESPACE, {"metadata": {"annotations": {"pod-group-name": pg}}})

    statuses = _write_statuses(cluster, pgs)
    pods = [*running, "cut-inflight", "cut-frac-inflight", "cut-failed", "cut-pipe", "cut-gang-0", "cut-gang-1"]
    return {"pods": pods, "running": running, "pgs": pgs, "statuses": statuses}


def _write_statuses(cluster: Cluster, pgs: dict[str, str]) -> dict[str, JSON]:
    """KAI's podgroup controller's resourcesStatus and its queue controller's status (§8.4); the PodGroups' by
    name."""
    written: dict[str, JSON] = {}
    a_gpu = {"job": 1, "ptj": 6, "dep": 6, "frac": 0.5, "block": 12, "bound": 1, "fill": 1}
    a_pods = {"job": 1, "ptj": 3, "dep": 1, "frac": 1, "block": 2, "bound": 1, "fill": 1}
    non_preemptible = ("dep", "frac")
    for what in a_gpu:
        held = _amounts(a_pods[what], a_gpu[what])
        status = {
            "allocated": held,
            "requested": held,
            "allocatedNonPreemptible": held if what in non_preemptible else {},
        }
        cluster.store.patch("podgroups", pgs[what], NAMESPACE, {"status": {"resourcesStatus": status}}, "status")
        written[pgs[what]] = status
    b_requested = {
        "cut-inflight": (1, 1),
        "cut-frac-inflight": (1, 0.5),
        "cut-failed": (1, 1),
        "cut-pipe": (1, 1),
        "gang": (2, 6),
    }
    for what, (count, gpus) in b_requested.items():
        status = {"allocated": {}, "requested": _amounts(count, gpus), "allocatedNonPreemptible": {}}
        cluster.store.patch("podgroups", pgs[what], NAMESPACE, {"status": {"resourcesStatus": status}}, "status")
    team_a: JSON = {
        "allocated": _amounts(10, 27.5),
        "allocatedNonPreemptible": _amounts(2, 6.5),
        "requested": _amounts(10, 27.5),
    }
    team_b: JSON = {"allocated": {}, "allocatedNonPreemptible": {}, "requested": _amounts(6, 9.5)}
    org: JSON = {
        "childQueues": [TEAM_A, TEAM_B],
        "allocated": _amounts(10, 27.5),
        "allocatedNonPreemptible": _amounts(2, 6.5),
        "requested": _amounts(16, 37),
    }
    for name, status in ((TEAM_A, team_a), (TEAM_B, team_b), (ORG, org)):
        cluster.store.patch("queues", name, "", {"status": status}, "status")
    return written


def _amounts(pods: int, gpus: float) -> JSON:
    if not pods:
        return {}
    return {
        "cpu": f"{pods * 100}m",
        "memory": f"{pods * 64}Mi",
        GPU: f"{int(gpus * 1000)}m" if gpus != int(gpus) else str(int(gpus)),
    }


def _podgroup(
    cluster: Cluster,
    owner: JSON,
    *,
    min_member: int,
    queue_name: str,
    priority: str,
    running: bool,
    subgroups: list[JSON] | None = None,
    top: JSON | None = None,
) -> str:
    """The PodGroup KAI's pod grouper writes for `owner`: `pg-<name>-<uid>`, owned by it, the top owner's labels
    and annotations copied, `kai.scheduler/top-owner-metadata`; the scheduler's last-start-timestamp once it ran."""
    meta = owner["metadata"]
    top = top or owner
    name = f"pg-{meta['name']}-{meta['uid']}"
    group, _, version = top["apiVersion"].rpartition("/")
    fields = {"group": group, "version": version, "kind": top["kind"]}
    fields |= {"name": top["metadata"]["name"], "uid": top["metadata"]["uid"]}
    top_meta = json.dumps(fields, separators=(",", ":"))
    annotations = {**(top["metadata"].get("annotations") or {}), "kai.scheduler/top-owner-metadata": top_meta}
    if running:
        annotations["kai.scheduler/last-start-timestamp"] = format_time(time.time() - 600)
    spec: JSON = {"minMember": min_member, "queue": queue_name, "priorityClassName": priority}
    if subgroups:
        spec["subGroups"] = subgroups
    cluster.store.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {**(top["metadata"].get("labels") or {})},
                "annotations": annotations,
                "ownerReferences": [{**_owner_ref(owner), "controller": False}],
            },
            "spec": spec,
        }
    )
    return name


def _running_pod(
    cluster: Cluster,
    name: str,
    *,
    gpus: float,
    node: str,
    queue_name: str,
    group: str,
    owner: JSON | None = None,
    controller: bool = False,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    priority_class: str = "",
    bind_status: JSON | None = None,
) -> JSON:
    """A pod KAI placed and bound: on its node, `received-resource-type` written by KAI's binder, with its
    Succeeded BindRequest (same name, owned by the pod)."""
    notes = {"received-resource-type": "Fraction" if gpus != int(gpus) else "Regular", **(annotations or {})}
    obj = pod(
        name, gpus=gpus, queue=queue_name, group=group, labels=labels, annotations=notes, priority_class=priority_class
    )
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [{**_owner_ref(owner), "controller": controller}]
    obj["spec"]["nodeName"] = node
    created = cluster.store.create(obj)
    status = {"phase": "Succeeded"} if bind_status is None else bind_status
    _bind_request(cluster, created, node, status=status, groups=[GROUP] if gpus != int(gpus) else [])
    return created


def _pending_pod(
    cluster: Cluster,
    name: str,
    *,
    gpus: float,
    queue_name: str,
    group: str = "",
    owner: JSON | None = None,
    node_selector: str = "",
    annotations: dict[str, str] | None = None,
    priority_class: str = "",
) -> JSON:
    obj = pod(name, gpus=gpus, queue=queue_name, group=group, annotations=annotations, priority_class=priority_class)
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [{**_owner_ref(owner), "controller": False}]
    if node_selector:
        obj["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node_selector}
    return cluster.store.create(obj)


def _bind_request(
    cluster: Cluster, pod_obj: JSON, node: str, *, status: JSON | None = None, groups: list[str] | None = None
) -> None:
    """A BindRequest as KAI's scheduler creates it (§1.3): the pod's name, owned by the pod, `selected-node`."""
    gpus = 0.0
    for c in pod_obj["spec"]["containers"]:
        gpus += float(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0))
    fraction = (pod_obj["metadata"].get("annotations") or {}).get("gpu-fraction")
    spec: JSON = {"podName": pod_obj["metadata"]["name"], "selectedNode": node}
    if fraction:
        spec |= {"receivedResourceType": "Fraction", "receivedGPU": {"count": 1, "portion": f"{float(fraction):.2f}"}}
        spec["selectedGPUGroups"] = groups or [GROUP]
    else:
        spec |= {"receivedResourceType": "Regular", "receivedGPU": {"count": int(gpus), "portion": "1.00"}}
    br = cluster.store.create(
        {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {
                "name": pod_obj["metadata"]["name"],
                "namespace": NAMESPACE,
                "labels": {"selected-node": node},
                "ownerReferences": [{**_owner_ref(pod_obj), "controller": False}],
            },
            "spec": spec,
        }
    )
    if status:
        cluster.store.patch("bindrequests", br["metadata"]["name"], NAMESPACE, {"status": status}, "status")


def _reservation_pod(name: str, group: str, node: str, index: str) -> JSON:
    """KAI's binder's reservation pod of `group` on `node`, after it reported the GPU index it was given (§6)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": RESERVATION_NAMESPACE,
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
            "annotations": {"karpenter.sh/do-not-disrupt": "true", "run.ai/reserve_for_gpu_index": index},
        },
        "spec": {
            "nodeName": node,
            "runtimeClassName": "nvidia",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "resource-reservation",
                    "image": "ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.9.0",
                    "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}},
                }
            ],
        },
    }


def _configmap(name: str, owner: JSON, data: dict[str, str]) -> JSON:
    obj: JSON = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "ownerReferences": [{**_owner_ref(owner), "controller": False}],
        },
    }
    if data:
        obj["data"] = data
    return obj


def _pytorchjob(name: str) -> JSON:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true", "kai.scheduler/queue": TEAM_A}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}},
            }
        },
    }


def _deployment(cluster: Cluster, name: str) -> tuple[JSON, JSON]:
    """A paused 1-replica Deployment and its ReplicaSet (the template of both the same, so a Deployment controller,
    where one runs, adopts the ReplicaSet rather than making another)."""
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}]},
    }
    labels = {"e2e": "true", "kai.scheduler/queue": TEAM_A}
    deployment = cluster.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"replicas": 1, "paused": True, "selector": {"matchLabels": {"app": name}}, "template": template},
        }
    )
    hashed = {"app": name, "pod-template-hash": "6d4cf56db6"}
    replicaset = cluster.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name}-6d4cf56db6",
                "namespace": NAMESPACE,
                "labels": {**labels, **hashed},
                "ownerReferences": [{**_owner_ref(deployment), "controller": True}],
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": hashed},
                "template": {**template, "metadata": {"labels": hashed}},
            },
        }
    )
    return deployment, replicaset


# --- checks ------------------------------------------------------------------------------------------------------


def _check_taken_over(
    cluster: Cluster,
    kai: dict[str, Any],
    before: dict[str, JSON],
    groups_of: dict[str, str],
    nodes_of: dict[str, str],
    started: float,
) -> None:
    cluster.wait("the in-flight BindRequest bound", lambda: _bound_to(cluster, "cut-inflight") == NODE[2])
    cluster.wait("the in-flight fractional pod bound", lambda: _bound_to(cluster, "cut-frac-inflight") == NODE[0])
    cluster.wait("the pod of the failed BindRequest bound", lambda: _bound_to(cluster, "cut-failed") == NODE[3])
    cluster.wait("the pipelined pod bound", lambda: _bound_to(cluster, "cut-pipe") == NODE[3])
    # Every node is full now. A 1-GPU pod of team B (below its quota) for node 2, where only a reclaim of cut-bound
    # would make room: with team A counted as holding no more than its quota, it waits.
    probe = _pending_pod(cluster, "cut-probe", gpus=1, queue_name=TEAM_B, node_selector=NODE[2])
    name = f"pg-cut-probe-{probe['metadata']['uid']}"  # a new pod: this project's pod grouper groups it
    cluster.wait(
        "the probe grouped",
        lambda: (_pod(cluster, "cut-probe")["metadata"].get("annotations") or {}).get("pod-group-name") == name,
    )
    before[name] = cluster.store.get("podgroups", name, NAMESPACE)
    groups_of["cut-probe"] = name

    def unchanged() -> None:
        after = _podgroups(cluster)
        assert sorted(after) == sorted(before), f"PodGroups before {sorted(before)}, after {sorted(after)}"
        for name, pg in after.items():
            was, now = _gang_spec(before[name]), _gang_spec(pg)
            assert now == was, f"PodGroup {name} spec {before[name]['spec']} -> {pg['spec']}"
        for name, group in groups_of.items():
            try:
                annotations = _pod(cluster, name)["metadata"].get("annotations") or {}
            except NotFound:
                raise AssertionError(f"pod {name} is gone after the cutover") from None
            assert annotations.get("pod-group-name") == group, f"pod {name} regrouped: {annotations}"
        for name, node in nodes_of.items():
            try:
                obj = _pod(cluster, name)
            except NotFound:
                raise AssertionError(f"KAI's running pod {name} is gone after the cutover") from None
            assert obj["spec"].get("nodeName") == node and not obj["metadata"].get("deletionTimestamp"), name
        evictions = _evictions(cluster, started)
        assert not evictions, f"pods evicted after the cutover: {evictions}"
        assert _bound_to(cluster, "cut-probe") == "", "the probe pod was given room on node 2"

    hold(10.0, unchanged)  # a few cycles of the scheduler (1 s each) and the controllers
    requests = _bind_requests(cluster)
    for name in [*kai["running"], "cut-inflight", "cut-frac-inflight", "cut-failed"]:
        assert [phase for _, phase in requests.get(name, [])] == ["Succeeded"], f"BindRequests of {name}: {requests}"
    for name in [
        *kai["running"],
        "cut-inflight",
        "cut-frac-inflight",
    ]:  # KAI's own requests, bound by the binder: not made again
        assert requests[name][0][0] == kai["requests"][name][0][0], f"{name}'s BindRequest was made again"
    # §8.1 item 4: the failed request (no backoffLimit) is dropped and the pod placed again by a new one.
    assert requests["cut-failed"][0][0] != kai["requests"]["cut-failed"][0][0], "the failed BindRequest was kept"
    for name, pg in _podgroups(cluster).items():
        key = "kai.scheduler/last-start-timestamp"
        was = (before[name]["metadata"].get("annotations") or {}).get(key)
        if was:  # the running jobs' start, which their min-runtime counts from, is KAI's
            assert pg["metadata"]["annotations"].get(key) == was, f"{name}: {key} {was} -> {pg['metadata']}"
    _same_statuses(cluster, kai["statuses"])
    reservations = cluster.store.list("pods", RESERVATION_NAMESPACE)[0]
    names = sorted(p["metadata"]["name"] for p in reservations)
    assert names == sorted([RESERVATION, RESERVATION_2]), f"reservation pods {names}: KAI's are not kept alone"
    frac = _pod(cluster, "cut-frac-inflight")
    assert (frac["metadata"].get("labels") or {}).get("runai-gpu-group") == GROUP_2, frac["metadata"]
    configmap = cluster.store.get("configmaps", f"{PREFIX_C}-shared-gpu-0", NAMESPACE)
    assert (configmap.get("data") or {}).get("NVIDIA_VISIBLE_DEVICES") == "3", configmap
    configmap = cluster.store.get("configmaps", f"{PREFIX_A}-shared-gpu-0", NAMESPACE)
    assert configmap.get("data") == {"NVIDIA_VISIBLE_DEVICES": "0", "RUNAI_NUM_OF_GPUS": "0.5"}, configmap


def _same_statuses(cluster: Cluster, written: dict[str, JSON]) -> None:
    """The controllers' statuses equal KAI's, as quantities, for what did not change since (team A's queue and
    the PodGroups of its running jobs)."""
    want_a = {
        "allocated": _amounts(10, 27.5),
        "allocatedNonPreemptible": _amounts(2, 6.5),
        "requested": _amounts(10, 27.5),
    }

    def same() -> bool:
        status = cluster.store.get("queues", TEAM_A).get("status") or {}
        return all(_quantities(status.get(k)) == _quantities(v) for k, v in want_a.items())

    with contextlib.suppress(AssertionError):
        cluster.wait("team A's status", same, timeout=10)
    got = cluster.store.get("queues", TEAM_A).get("status") or {}
    for key, want in want_a.items():
        assert _quantities(got.get(key)) == _quantities(want), f"queue {TEAM_A} status.{key}: {got.get(key)} != {want}"
    assert cluster.store.get("queues", ORG)["status"].get("childQueues") == [TEAM_A, TEAM_B]
    for name, want in written.items():
        got = (cluster.store.get("podgroups", name, NAMESPACE).get("status") or {}).get("resourcesStatus") or {}
        for key, amounts in want.items():
            assert _quantities(got.get(key)) == _quantities(amounts), f"{name} resourcesStatus.{key}: {got} != {want}"


def _check_new_work(cluster: Cluster, kai: dict[str, Any], started: float) -> None:
    store = cluster.store
    # The probe has shown what it had to; node 1's last whole GPU is freed (its pod ends, as its owner would).
    for name in ("cut-probe", "cut-fill"):
        store.delete("pods", name, NAMESPACE, grace_period_seconds=0)
    cluster.wait("cut-fill gone", lambda: _bound_to(cluster, "cut-fill") == "")

    # The other half of the shared GPU: same node, same group, same reservation pod and its index.
    # On node 1 (node 0's shared GPU, half used too, would do as well): beside KAI's running half.
    frac_b = pod("cut-frac-b", gpus=0.5, queue=TEAM_B, labels={"app": "cut-new"})
    frac_b["metadata"]["annotations"]["runai/shared-gpu-configmap"] = PREFIX_B
    frac_b["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE[1]}
    store.create(frac_b)
    cluster.wait("the new fractional pod bound", lambda: _bound_to(cluster, "cut-frac-b") != "")
    frac_b = _pod(cluster, "cut-frac-b")
    assert frac_b["spec"]["nodeName"] == NODE[1], f"the new half-GPU pod went to {frac_b['spec']['nodeName']}"
    assert (frac_b["metadata"].get("labels") or {}).get("runai-gpu-group") == GROUP, frac_b["metadata"].get("labels")
    reservations = store.list("pods", RESERVATION_NAMESPACE)[0]
    names = sorted(p["metadata"]["name"] for p in reservations)
    assert names == sorted([RESERVATION, RESERVATION_2]), f"reservation pods {names}: a second one for the shared GPU"
    configmap = store.get("configmaps", f"{PREFIX_B}-shared-gpu-0", NAMESPACE)
    assert (configmap.get("data") or {}).get("NVIDIA_VISIBLE_DEVICES") == "0", configmap

    # Node 1: 6 GPUs of the Deployment's pod + the shared GPU = 7 of 8. One whole GPU is left, not two.
    two = pod("cut-whole-2", gpus=2, queue=TEAM_B, labels={"app": "cut-new"})
    two["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE[1]}
    store.create(two)
    one = pod("cut-whole-1", gpus=1, queue=TEAM_B, labels={"app": "cut-new"})
    one["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE[1]}
    store.create(one)
    cluster.wait("a 1-GPU pod bound on node 1", lambda: _bound_to(cluster, "cut-whole-1") == NODE[1])

    def not_over() -> None:
        assert _bound_to(cluster, "cut-whole-2") == "", "a 2-GPU pod was given the reservation pod's GPU"
        used = _gpus_on(cluster, NODE[1])
        assert used <= 8, f"node 1 holds {used} GPUs of 8"
        assert not _evictions(cluster, started), _evictions(cluster, started)

    hold(6.0, not_over)

    # Room for the gang: a pod of the blocking Job ends (deleted, as its owner would); node 2 has room for both of
    # the gang's pods, which are placed there, and its condition is cleared.
    store.delete("pods", "cut-block-0", NAMESPACE, grace_period_seconds=0)
    cluster.wait(
        "the gang placed", lambda: bool(_bound_to(cluster, "cut-gang-0")) and bool(_bound_to(cluster, "cut-gang-1"))
    )

    def cleared() -> bool:
        status = store.get("podgroups", kai["pgs"]["gang"], NAMESPACE).get("status") or {}
        return not any(
            c.get("type") == "UnschedulableOnNodePool" and c.get("status") == "True"
            for c in status.get("schedulingConditions") or []
        )

    cluster.wait("the gang's UnschedulableOnNodePool condition cleared", cleared, timeout=30)
    assert _bound_to(cluster, "cut-whole-2") == "", "a 2-GPU pod was given the reservation pod's GPU"
    assert not _evictions(cluster, started), _evictions(cluster, started)
    for node in NODE:
        assert _gpus_on(cluster, node) <= 8, f"{node} holds {_gpus_on(cluster, node)} GPUs of 8"


# --- reading -----------------------------------------------------------------------------------------------------


def _pod(cluster: Cluster, name: str) -> JSON:
    return cluster.store.get("pods", name, NAMESPACE)


def _bound_to(cluster: Cluster, name: str) -> str:
    try:
        obj = _pod(cluster, name)
    except NotFound:
        return ""
    return str(obj["spec"].get("nodeName") or "")


def _running(cluster: Cluster, names: list[str]) -> bool:
    pods = {p["metadata"]["name"]: p for p in cluster.pods()}
    pods |= {p["metadata"]["name"]: p for p in cluster.store.list("pods", RESERVATION_NAMESPACE)[0]}
    return all(
        (pods.get(n) or {}).get("status", {}).get("phase") == "Running" for n in [*names, RESERVATION, RESERVATION_2]
    )


def _podgroups(cluster: Cluster) -> dict[str, JSON]:
    return {g["metadata"]["name"]: g for g in cluster.store.list("podgroups", NAMESPACE)[0]}


def _bind_requests(cluster: Cluster) -> dict[str, list[tuple[str, str]]]:
    """(uid, phase) of each pod's BindRequests, by pod name."""
    out: dict[str, list[tuple[str, str]]] = {}
    for r in cluster.store.list("bindrequests", NAMESPACE)[0]:
        phase = str((r.get("status") or {}).get("phase") or "")
        out.setdefault(r["spec"]["podName"], []).append((r["metadata"]["uid"], phase))
    return out


def _gang_spec(pg: JSON) -> JSON:
    """The PodGroup's spec, less a root `minMember` beside `subGroups`: KAI's pod grouper writes the job's minimum
    there too (assumed), this project's omits it; with subgroups the scheduler reads neither's (§1.2)."""
    spec = dict(pg["spec"])
    if spec.get("subGroups"):
        spec.pop("minMember", None)
    return spec


def _evictions(cluster: Cluster, since: float) -> list[str]:
    """The Evict events of this test's pods (made since `since`: an earlier run's on the same cluster are not)."""
    events = cluster.store.list("events", NAMESPACE)[0]
    return [
        f"{e['involvedObject'].get('name')}: {e.get('message')}"
        for e in events
        if e.get("reason") == "Evict"
        and str(e["involvedObject"].get("name", "")).startswith("cut-")
        and parse_time(e["metadata"]["creationTimestamp"]) >= since - 1
    ]


def _gpus_on(cluster: Cluster, node: str) -> float:
    """Whole GPUs held on `node`: each live pod's GPU limit, reservation pods included (the shared GPU), the
    fractional pods' portions not (their reservation pod holds the device)."""
    pods = cluster.pods() + cluster.store.list("pods", RESERVATION_NAMESPACE)[0]
    return sum(harness.gpus_by_node([p for p in pods if p["spec"].get("nodeName") == node]).values())


def _quantities(amounts: JSON | None) -> dict[str, float]:
    return {k: float(parse_quantity(v)) for k, v in (amounts or {}).items() if float(parse_quantity(v))}


def _owner_ref(obj: JSON) -> JSON:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "blockOwnerDeletion": False,
    }


def _ref(obj: JSON) -> JSON:
    meta = obj["metadata"]
    return {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1"}
