"""Workloads end to end: a Job run by the real Job controller, a PyTorchJob's master/worker subgroups, a
fractional GPU with its reservation pod and ConfigMap, and a topology-constrained gang."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.store.interface import JSON
from tests.e2e import harness
from tests.e2e.checks import never_over_committed
from tests.e2e.harness import NAMESPACE, RESERVATION_NAMESPACE, Cluster, pod, podgroup


def _phases(cluster: Cluster, selector: str) -> list[str]:
    return sorted(p.get("status", {}).get("phase", "") for p in cluster.pods(selector))


@pytest.mark.skipif(
    not harness.controllers_running(),
    reason="needs the Job controller of kube-controller-manager (KAI_E2E_CONTROLLERS=1)",
)
def test_a_job_of_the_job_controller_is_grouped_placed_run_and_succeeds(clean: Cluster) -> None:
    """A plain batch Job: the Job controller makes its two pods, the podgrouper groups them, the scheduler
    places them, the binder binds them, the fake kubelet runs them for 2 s, and the Job completes."""
    template = {
        "metadata": {"labels": {"app": "ctl-job", "e2e": "true"}, "annotations": {"kai.scheduler/fake-duration": "2s"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [{"name": "main", "image": "busybox", "resources": {"limits": {harness.GPU: "1"}}}],
        },
    }
    job = clean.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "ctl-job",
                "namespace": NAMESPACE,
                "labels": {"e2e": "true", "kai.scheduler/queue": "default-queue"},
            },
            "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": template},
        }
    )
    clean.wait("the Job's two pods", lambda: len(clean.pods("app=ctl-job")) == 2)
    group = f"pg-ctl-job-{job['metadata']['uid']}"
    clean.wait(
        "the Job's PodGroup",
        lambda: any(g["metadata"]["name"] == group for g in clean.store.list("podgroups", NAMESPACE)[0]),
    )
    clean.wait("the Job Complete", lambda: _job_complete(clean.store.get("jobs", "ctl-job", NAMESPACE)))
    assert _phases(clean, "app=ctl-job") == ["Succeeded", "Succeeded"]
    assert {p["spec"].get("nodeName", "") for p in clean.pods("app=ctl-job")} != {""}


def _job_complete(job: JSON) -> bool:
    return any(
        c.get("type") == "Complete" and c.get("status") == "True" for c in job.get("status", {}).get("conditions") or []
    )


@pytest.fixture(scope="module")
def pytorchjob_crd(cluster: Cluster) -> None:
    if harness.real_server():
        harness.apply_crd(cluster.processes.kubeconfig, harness.load_fixture("pytorchjob-crd.yaml")[0])


def test_a_pytorchjob_gets_master_and_worker_subgroups(clean: Cluster, pytorchjob_crd: None) -> None:
    """A PyTorchJob of one master and three workers (its pods created as its operator would, controlled by it):
    one PodGroup with subgroups master (1) and worker (3), and all four pods bound together."""
    job = clean.create(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": "ptj",
                "namespace": NAMESPACE,
                "labels": {"e2e": "true", "kai.scheduler/queue": "default-queue"},
            },
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m"}]}}},
                    "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "w"}]}}},
                }
            },
        }
    )
    owner = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": "ptj",
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }
    for i, role in enumerate(("master", "worker", "worker", "worker")):
        obj = pod(
            f"ptj-{role}-{i}",
            gpus=2,
            labels={
                "app": "ptj",
                "training.kubeflow.org/replica-type": role,
                "training.kubeflow.org/replica-index": str(i),
            },
        )
        obj["metadata"]["ownerReferences"] = [owner]
        clean.create(obj)
    clean.wait("the four PyTorchJob pods bound", lambda: len(clean.bound("app=ptj")) == 4)
    groups = [g for g in clean.store.list("podgroups", NAMESPACE)[0] if g["metadata"]["name"].startswith("pg-ptj-")]
    assert len(groups) == 1, [g["metadata"]["name"] for g in groups]
    subgroups = {s["name"]: s.get("minMember") for s in groups[0]["spec"].get("subGroups") or []}
    assert subgroups == {"master": 1, "worker": 3}
    never_over_committed(clean)


def test_a_fractional_gpu_pod_gets_a_reservation_pod_and_its_configmap(clean: Cluster) -> None:
    """A pod asking half a GPU (`gpu-fraction: 0.5`; the shared-GPU ConfigMap annotation is set here, as the
    admission webhook would): it is bound beside a reservation pod that holds the whole GPU, and the binder
    writes the ConfigMap naming the GPU."""
    prefix = "frac-cm"
    clean.create(pod("frac", gpus=0.5, labels={"app": "frac"}, annotations={"runai/shared-gpu-configmap": prefix}))
    clean.wait("the fractional pod bound", lambda: len(clean.bound("app=frac")) == 1)
    node = clean.bound("app=frac")[0]["spec"]["nodeName"]
    reservations = [
        p for p in clean.store.list("pods", RESERVATION_NAMESPACE)[0] if p.get("spec", {}).get("nodeName") == node
    ]
    assert reservations, f"no reservation pod on {node}"
    configmap = clean.store.get("configmaps", f"{prefix}-shared-gpu-0", NAMESPACE)
    assert configmap.get("data"), configmap


def test_a_topology_constrained_gang_stays_in_one_rack(clean: Cluster) -> None:
    """Racks of two nodes (`kai fake-nodes --rack-size 2`). One 8-GPU pod fills a node; a gang of two 8-GPU
    pods required in one rack cannot take the free node of that rack and another, so it takes the other rack."""
    clean.create(
        {
            "apiVersion": "kai.scheduler/v1alpha1",
            "kind": "Topology",
            "metadata": {"name": "e2e-racks", "labels": {"e2e": "true"}},
            "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kai.scheduler/rack"}]},
        }
    )
    clean.create(pod("filler", gpus=8, labels={"app": "filler"}))
    clean.wait("the filler bound", lambda: len(clean.bound("app=filler")) == 1)
    clean.create(
        podgroup(
            "racked", min_member=2, queue="default-queue", topology="e2e-racks", required_level="kai.scheduler/rack"
        )
    )
    for i in range(2):
        clean.create(pod(f"racked-{i}", gpus=8, group="racked", labels={"app": "racked"}))
    clean.wait("the gang bound", lambda: len(clean.bound("app=racked")) == 2)
    racks = {_rack(clean, p["spec"]["nodeName"]) for p in clean.bound("app=racked")}
    assert len(racks) == 1 and racks != {_rack(clean, clean.bound("app=filler")[0]["spec"]["nodeName"])}, racks


def _rack(cluster: Cluster, node: str) -> Any:
    return cluster.store.get("nodes", node)["metadata"]["labels"].get("kai.scheduler/rack")
