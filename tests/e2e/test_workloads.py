"""Workloads end to end: a Job run by the real Job controller, a PyTorchJob's master/worker subgroups, a
fractional GPU with its reservation pod and ConfigMap, and a topology-constrained gang."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.store.interface import JSON
from tests.e2e import harness
from tests.e2e.checks import at_most, hold, never_over_committed
from tests.e2e.harness import (
    NAMESPACE,
    RESERVATION_NAMESPACE,
    Cluster,
    grouper_warnings,
    owner_reference,
    pod,
    podgroup,
    rack_of,
    subgroup_of,
)

pytestmark = pytest.mark.run_in("controllers")  # the Job controller, the garbage collector (tests/e2e/split.py)


def _phases(cluster: Cluster, selector: str) -> list[str]:
    return sorted(p.get("status", {}).get("phase", "") for p in cluster.pods(selector))


@pytest.mark.needs_controllers  # the Job controller
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


def test_a_pytorchjob_gets_master_and_worker_subgroups(clean: Cluster) -> None:
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


def test_a_job_pod_on_its_per_pod_podgroup_of_an_older_kai_keeps_it(clean: Cluster) -> None:
    """Upgrading from a KAI that gave each pod of a Job its own PodGroup (`pg-<pod>-<job uid>`): the pod that has
    one keeps it, taken over in place (minMember 1, what the pod grouper writes now added: the top owner's
    metadata), a new pod of the Job joins `pg-<job>-<job uid>`; both run."""
    job = clean.create(harness.suspended_job("legacy-job", "default-queue"))
    uid = job["metadata"]["uid"]
    legacy = podgroup(f"pg-legacy-job-0-{uid}", min_member=1, queue="default-queue")
    legacy["metadata"]["ownerReferences"] = [owner_reference(job)]
    clean.create(legacy)
    clean.create(pod("legacy-job-0", owner=job, group=legacy["metadata"]["name"], labels={"app": "legacy-job"}))
    clean.create(pod("legacy-job-1", owner=job, labels={"app": "legacy-job"}))
    clean.wait("both pods Running", lambda: _phases(clean, "app=legacy-job") == ["Running", "Running"])
    groups = {
        p["metadata"]["name"]: p["metadata"]["annotations"]["pod-group-name"] for p in clean.pods("app=legacy-job")
    }
    assert groups == {"legacy-job-0": legacy["metadata"]["name"], "legacy-job-1": f"pg-legacy-job-{uid}"}
    mine = [g for g in clean.store.list("podgroups", NAMESPACE)[0] if uid in g["metadata"]["name"]]
    assert sorted((g["metadata"]["name"], g["spec"]["minMember"]) for g in mine) == [
        (f"pg-legacy-job-0-{uid}", 1),
        (f"pg-legacy-job-{uid}", 1),
    ]

    def taken_over() -> bool:
        taken = clean.store.get("podgroups", legacy["metadata"]["name"], NAMESPACE)
        return "legacy-job" in (taken["metadata"].get("annotations") or {}).get("kai.scheduler/top-owner-metadata", "")

    clean.wait("the per-pod PodGroup taken over", taken_over, timeout=20)


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
    racks = {rack_of(clean, p["spec"]["nodeName"]) for p in clean.bound("app=racked")}
    assert len(racks) == 1 and racks != {rack_of(clean, clean.bound("app=filler")[0]["spec"]["nodeName"])}, racks


# Every kind of KAI's pod grouper table (BEHAVIOR.md §8.2) on the API server. No operator runs: each test creates
# the custom object from a minimal CRD (fixtures/workload-crds.yaml) and its pods as that operator would, with
# its labels and owner references. Where a built-in controller owns the object in between (the Job of a
# JobSet, the StatefulSet of a Notebook), the pods reference it without a controller reference and carry none of
# its selector's labels, so a running kube-controller-manager neither adopts, releases nor deletes them.

QUEUE = "e2e-wl"
TEMPLATE: JSON = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}


@pytest.fixture
def wl(clean: Cluster) -> Cluster:
    """A clean cluster with the workload CRDs and the queue `e2e-wl` (8 GPUs deserved: room for the
    non-preemptible `inference` and `build` workloads, which may use only what their queue deserves)."""
    clean.create(harness.queue(QUEUE, gpu_quota=8))
    return clean


def _custom(api_version: str, kind: str, name: str, spec: JSON, **meta: Any) -> JSON:
    labels = {"e2e": "true", "kai.scheduler/queue": QUEUE, **meta.pop("labels", {})}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels, **meta},
        "spec": spec,
    }


def _owned(cluster: Cluster, name: str, owner: JSON, labels: dict[str, str], *, gpus: float = 0, **kw: Any) -> JSON:
    """A pod of `owner`, as its operator makes it (a controller reference unless `controller=False`)."""
    controller = kw.pop("controller", True)
    obj = pod(name, gpus=gpus, queue=QUEUE, labels={"wl": owner["metadata"]["name"], **labels}, **kw)
    obj["metadata"]["ownerReferences"] = [owner_reference(owner, controller=controller)]
    return cluster.create(obj)


def _names_group(cluster: Cluster, pod_name: str) -> bool:
    return bool(cluster.store.get("pods", pod_name, NAMESPACE)["metadata"].get("annotations", {}).get("pod-group-name"))


def _group_of(cluster: Cluster, pod_name: str) -> JSON:
    name = cluster.store.get("pods", pod_name, NAMESPACE)["metadata"].get("annotations", {}).get("pod-group-name")
    assert name, f"pod {pod_name} names no PodGroup"
    return cluster.store.get("podgroups", name, NAMESPACE)


def _grouped(cluster: Cluster, selector: str, count: int) -> bool:
    pods = cluster.pods(selector)
    return len(pods) == count and all((p["metadata"].get("annotations") or {}).get("pod-group-name") for p in pods)


def _shape(group: JSON) -> JSON:
    """What the pod grouper decides of a PodGroup: its minimum, subgroups, queue, priority, preemptibility."""
    spec = group["spec"]
    out = {
        k: spec[k] for k in ("minMember", "minSubGroup", "queue", "priorityClassName", "preemptibility") if k in spec
    }
    if spec.get("subGroups"):
        out["subGroups"] = {
            s["name"]: s.get("minMember", s.get("minSubGroup")) if "parent" not in s else (s["parent"], s["minMember"])
            for s in spec["subGroups"]
        }
    return out


def _kubeflow_pods(cluster: Cluster, job: JSON, replicas: dict[str, int], **kw: Any) -> None:
    name = job["metadata"]["name"]
    for replica_type, count in replicas.items():
        for i in range(count):
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": replica_type.lower(),
                "training.kubeflow.org/replica-index": str(i),
            }
            if replica_type in ("Master", "Launcher", "Worker") and job["kind"] != "TFJob":
                labels["training.kubeflow.org/job-role"] = replica_type.lower()
            _owned(cluster, f"{name}-{replica_type.lower()}-{i}", job, labels, **kw)


def _replicas(counts: dict[str, int]) -> JSON:
    return {t: {"replicas": n, "template": TEMPLATE} for t, n in counts.items()}


def _ray_cluster_spec(groups: list[JSON]) -> JSON:
    return {"headGroupSpec": {"template": TEMPLATE}, "workerGroupSpecs": [{**g, "template": TEMPLATE} for g in groups]}


def _ray_pods(cluster: Cluster, owner: JSON, prefix: str, groups: dict[str, int], **kw: Any) -> None:
    _owned(cluster, f"{prefix}-head", owner, {"ray.io/node-type": "head", "ray.io/group": "headgroup"}, **kw)
    for group, count in groups.items():
        for i in range(count):
            _owned(cluster, f"{prefix}-{group}-{i}", owner, {"ray.io/node-type": "worker", "ray.io/group": group}, **kw)


def _lws_pods(cluster: Cluster, lws: JSON, group: int, size: int, **kw: Any) -> None:
    name = lws["metadata"]["name"]
    for worker in range(size):
        labels = {
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
        }
        _owned(cluster, f"{name}-{group}" + (f"-{worker}" if worker else ""), lws, labels, **kw)


def _jobset(cluster: Cluster, name: str, jobs: dict[str, tuple[int, int]], **spec: Any) -> JSON:
    """A JobSet of replicated jobs {name: (replicas, parallelism)}, its Jobs (suspended, as the JobSet controller
    would make them, but left alone by the Job controller) and their pods."""
    replicated = [
        {"name": rj, "replicas": n, "template": {"spec": {"parallelism": p, "template": TEMPLATE}}}
        for rj, (n, p) in jobs.items()
    ]
    jobset = cluster.create(_custom("jobset.x-k8s.io/v1alpha2", "JobSet", name, {"replicatedJobs": replicated, **spec}))
    for rj, (n, p) in jobs.items():
        for index in range(n):
            marks = {
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": rj,
                "jobset.sigs.k8s.io/job-index": str(index),
            }
            job = harness.suspended_job(f"{name}-{rj}-{index}", QUEUE)
            job["metadata"]["labels"].update(marks)
            job["metadata"]["ownerReferences"] = [owner_reference(jobset)]
            job = cluster.create(job)
            for i in range(p):
                _owned(cluster, f"{name}-{rj}-{index}-{i}", job, marks, controller=False)
    return jobset


def test_each_workload_kind_gets_the_podgroup_kai_gives_it(wl: Cluster) -> None:
    """TFJob, elastic PyTorchJob, MPIJob (with and without WaitForWorkersReady), RayCluster, RayJob,
    LeaderWorkerSet, JobSet (AnyOrder and InOrder), Notebook, Knative Service, Argo Workflow and Spark driver and
    executors, their pods made as their operators make them: each PodGroup has the name, minimum, subgroups and
    priority of BEHAVIOR.md §8.2 (the table of docs/kai-users.md), each pod its subgroup, and every gang is
    placed."""
    tf = wl.create(
        _custom("kubeflow.org/v1", "TFJob", "tf", {"tfReplicaSpecs": _replicas({"Chief": 1, "PS": 1, "Worker": 2})})
    )
    _kubeflow_pods(wl, tf, {"Chief": 1, "PS": 1, "Worker": 2})
    elastic = wl.create(
        _custom(
            "kubeflow.org/v1",
            "PyTorchJob",
            "elastic",
            {"elasticPolicy": {"minReplicas": 2, "maxReplicas": 4}, "pytorchReplicaSpecs": _replicas({"Worker": 4})},
        )
    )
    _kubeflow_pods(wl, elastic, {"Worker": 4})
    mpi = wl.create(
        _custom("kubeflow.org/v2beta1", "MPIJob", "mpi", {"mpiReplicaSpecs": _replicas({"Launcher": 1, "Worker": 2})})
    )
    _kubeflow_pods(wl, mpi, {"Launcher": 1, "Worker": 2})
    waiting = wl.create(
        _custom(
            "kubeflow.org/v2beta1",
            "MPIJob",
            "mpiwait",
            {
                "launcherCreationPolicy": "WaitForWorkersReady",
                "mpiReplicaSpecs": _replicas({"Launcher": 1, "Worker": 2}),
            },
        )
    )
    _kubeflow_pods(wl, waiting, {"Worker": 2})  # the launcher comes once the workers are ready
    ray = wl.create(
        _custom(
            "ray.io/v1",
            "RayCluster",
            "rc",
            _ray_cluster_spec(
                [
                    {"groupName": "cpu", "replicas": 3, "minReplicas": 1, "maxReplicas": 4},
                    {"groupName": "tpu", "replicas": 1, "numOfHosts": 2},
                ]
            ),
            labels={"ray.io/priority-class-name": "build"},
        )
    )
    _ray_pods(wl, ray, "rc", {"cpu": 3, "tpu": 2})
    rayjob = wl.create(
        _custom(
            "ray.io/v1",
            "RayJob",
            "rj",
            {"entrypoint": "python train.py", "rayClusterSpec": _ray_cluster_spec([{"groupName": "w", "replicas": 2}])},
        )
    )
    rj_cluster = _custom("ray.io/v1", "RayCluster", "rj-raycluster", rayjob["spec"]["rayClusterSpec"])
    rj_cluster["metadata"]["ownerReferences"] = [owner_reference(rayjob)]
    _ray_pods(wl, wl.create(rj_cluster), "rj", {"w": 2})
    lws = wl.create(
        _custom(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            "lws",
            {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": TEMPLATE}},
        )
    )
    for group in range(2):
        _lws_pods(wl, lws, group, 3)
    any_order = _jobset(wl, "js", {"driver": (1, 1), "workers": (2, 2)})
    in_order = _jobset(wl, "jsio", {"a": (1, 1), "b": (1, 1)}, startupPolicy={"startupPolicyOrder": "InOrder"})
    notebook = wl.create(_custom("kubeflow.org/v1beta1", "Notebook", "nb", {"template": TEMPLATE}))
    statefulset = wl.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "nb", "namespace": NAMESPACE, "ownerReferences": [owner_reference(notebook)]},
            "spec": {
                "replicas": 0,
                "serviceName": "nb",
                "selector": {"matchLabels": {"statefulset": "nb"}},
                "template": {"metadata": {"labels": {"statefulset": "nb"}}, **TEMPLATE},
            },
        }
    )
    _owned(wl, "nb-0", statefulset, {"notebook-name": "nb"}, controller=False)
    service = wl.create(_custom("serving.knative.dev/v1", "Service", "ksvc", {"template": TEMPLATE}))
    configuration = _custom("serving.knative.dev/v1", "Configuration", "ksvc", {})
    configuration["metadata"]["ownerReferences"] = [owner_reference(service)]
    revision = _custom("serving.knative.dev/v1", "Revision", "ksvc-00001", {})
    revision["metadata"]["ownerReferences"] = [owner_reference(wl.create(configuration))]
    revision = wl.create(revision)
    for i in range(2):
        _owned(wl, f"ksvc-00001-{i}", revision, {"serving.knative.dev/revision": "ksvc-00001"})
    workflow = wl.create(_custom("argoproj.io/v1alpha1", "Workflow", "wf", {"entrypoint": "main"}))
    for i in range(2):
        _owned(wl, f"wf-step-{i}", workflow, {"workflows.argoproj.io/workflow": "wf"})

    spark = {"spark-app-selector": "spark-0123abcd", "spark-app-name": "etl"}
    driver = wl.create(pod("etl-driver", queue=QUEUE, labels={**spark, "spark-role": "driver", "wl": "spark"}))
    for i in range(2):
        _owned(wl, f"etl-exec-{i}", driver, {**spark, "spark-role": "executor"})

    total = 4 + 4 + 3 + 2 + 6 + 3 + 6 + 5 + 2 + 1 + 2 + 2 + 3
    wl.wait("every pod grouped", lambda: _grouped(wl, "e2e=true", total))
    base = {"queue": QUEUE, "priorityClassName": "train"}
    uid = {o["metadata"]["name"]: o["metadata"]["uid"] for o in (tf, elastic, mpi, waiting, ray, rayjob, lws)}
    uid.update({o["metadata"]["name"]: o["metadata"]["uid"] for o in (any_order, in_order, notebook)})
    want: dict[str, tuple[str, JSON]] = {
        "tf-chief-0": (f"pg-tf-{uid['tf']}", {**base, "minMember": 4}),
        "elastic-worker-0": (f"pg-elastic-{uid['elastic']}", {**base, "minMember": 2, "subGroups": {"worker": 2}}),
        "mpi-launcher-0": (f"pg-mpi-{uid['mpi']}", {**base, "minMember": 3}),
        "mpiwait-worker-0": (f"pg-mpiwait-{uid['mpiwait']}", {**base, "minMember": 2}),
        "rc-head": (
            f"pg-rc-{uid['rc']}",
            {**base, "priorityClassName": "build", "minMember": 4, "subGroups": {"head": 1, "cpu": 1, "tpu": 2}},
        ),
        "rj-head": (f"pg-rj-{uid['rj']}", {**base, "minMember": 3, "subGroups": {"head": 1, "w": 2}}),
        "lws-0": (f"pg-lws-{uid['lws']}-group-0", {**base, "minMember": 3, "subGroups": {"leader": 1, "workers": 2}}),
        "lws-1-2": (
            f"pg-lws-{uid['lws']}-group-1",
            {**base, "minMember": 3, "subGroups": {"leader": 1, "workers": 2}},
        ),
        "js-workers-1-0": (
            f"pg-js-{uid['js']}",
            {
                **base,
                "minSubGroup": 2,
                "subGroups": {
                    "driver": 1,
                    "driver-replica-0": ("driver", 1),
                    "workers": 2,
                    "workers-replica-0": ("workers", 2),
                    "workers-replica-1": ("workers", 2),
                },
            },
        ),
        "jsio-a-0-0": (
            f"pg-jsio-{uid['jsio']}",
            {**base, "minSubGroup": 1, "subGroups": {"a": 1, "a-replica-0": ("a", 1), "b": 1, "b-replica-0": ("b", 1)}},
        ),
        "nb-0": (f"pg-nb-{uid['nb']}", {**base, "minMember": 1, "priorityClassName": "build"}),
    }
    # Spark (spark-submit, no operator): the executors' owner is the driver pod, so all share its PodGroup.
    for pod_name in ("etl-driver", "etl-exec-1"):
        want[pod_name] = (f"pg-etl-driver-{driver['metadata']['uid']}", {**base, "minMember": 1})
    # Knative: one gang per Revision (KAI's default), minMember its min-scale (none here: 1).
    rev = f"pg-ksvc-00001-{revision['metadata']['uid']}"
    for pod_name in ("ksvc-00001-0", "ksvc-00001-1"):
        want[pod_name] = (rev, {**base, "minMember": 1, "priorityClassName": "inference"})
    pod_uid = wl.store.get("pods", "wf-step-0", NAMESPACE)["metadata"]["uid"]
    want["wf-step-0"] = (f"pg-wf-step-0-{pod_uid}", {**base, "minMember": 1})
    got = {p: (_group_of(wl, p)["metadata"]["name"], _shape(_group_of(wl, p))) for p in want}
    assert got == want
    subgroups = {p: subgroup_of(wl, p) for p in ("rc-head", "rc-tpu-1", "rj-w-0", "lws-0", "lws-0-2", "js-driver-0-0")}
    assert subgroups == {
        "rc-head": "head",
        "rc-tpu-1": "tpu",
        "rj-w-0": "w",
        "lws-0": "leader",
        "lws-0-2": "workers",
        "js-driver-0-0": "driver-replica-0",
    }
    wl.wait("every pod bound", lambda: len(wl.bound("e2e=true")) == total)


def _reasons(group: JSON) -> list[str]:
    conditions = (group.get("status") or {}).get("schedulingConditions") or []
    return [r.get("message", "") for c in conditions for r in c.get("reasons") or []]


def test_a_ray_gang_too_big_for_the_cluster_runs_nothing_and_says_why(wl: Cluster) -> None:
    """A RayCluster of a head and 4 workers of 8 GPUs each (40 GPUs on 32): none of its pods is placed, not even the
    head, and its PodGroup says what it lacks."""
    ray = wl.create(
        _custom("ray.io/v1", "RayCluster", "huge", _ray_cluster_spec([{"groupName": "gpu", "replicas": 4}]))
    )
    _ray_pods(wl, ray, "huge", {"gpu": 4}, gpus=8)
    wl.wait("the gang grouped", lambda: _grouped(wl, "wl=huge", 5))
    wl.wait("its PodGroup says why", lambda: any("needs" in r for r in _reasons(_group_of(wl, "huge-head"))))
    assert any(
        "Resources were found for 4 pods while 5 are required for gang scheduling" in r
        for r in _reasons(_group_of(wl, "huge-head"))
    ), _reasons(_group_of(wl, "huge-head"))
    hold(2, lambda: at_most(wl, "wl=huge", 0))


def test_scaling_a_workload_updates_its_podgroup_and_deleting_it_collects_it(wl: Cluster) -> None:
    """More Ray workers (replicas 2 → 3 and the third pod), a LeaderWorkerSet's second group (replicas 1 → 2) and
    an MPIJob's launcher once its workers run (WaitForWorkersReady): each PodGroup follows, as KAI's does, and
    everything is placed. Fewer Ray workers again: the PodGroup follows the spec without waiting for a pod. With a
    garbage collector, deleting the owners takes their PodGroups (owner references)."""
    groups = [{"groupName": "w", "replicas": 2}]
    ray = wl.create(_custom("ray.io/v1", "RayCluster", "grow", _ray_cluster_spec(groups)))
    _ray_pods(wl, ray, "grow", {"w": 2})
    lws = wl.create(
        _custom(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            "lw",
            {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}},
        )
    )
    _lws_pods(wl, lws, 0, 2)
    mpi = wl.create(
        _custom(
            "kubeflow.org/v2beta1",
            "MPIJob",
            "mw",
            {
                "launcherCreationPolicy": "WaitForWorkersReady",
                "mpiReplicaSpecs": _replicas({"Launcher": 1, "Worker": 2}),
            },
        )
    )
    _kubeflow_pods(wl, mpi, {"Worker": 2})
    wl.wait("the first pods bound", lambda: len(wl.bound("e2e=true")) == 3 + 2 + 2)
    assert _shape(_group_of(wl, "grow-head"))["subGroups"] == {"head": 1, "w": 2}
    assert _shape(_group_of(wl, "mw-worker-0"))["minMember"] == 2

    wl.store.patch("rayclusters", "grow", NAMESPACE, {"spec": {"workerGroupSpecs": [{**groups[0], "replicas": 3}]}})
    _owned(wl, "grow-w-2", ray, {"ray.io/node-type": "worker", "ray.io/group": "w"})
    wl.store.patch("leaderworkersets", "lw", NAMESPACE, {"spec": {"replicas": 2}})
    _lws_pods(wl, lws, 1, 2)
    _kubeflow_pods(wl, mpi, {"Launcher": 1})
    wl.wait("the new pods bound", lambda: len(wl.bound("e2e=true")) == 4 + 4 + 3)
    assert _shape(_group_of(wl, "grow-head"))["subGroups"] == {"head": 1, "w": 3}
    assert _group_of(wl, "lw-1")["metadata"]["name"] == f"pg-lw-{lws['metadata']['uid']}-group-1"
    assert _shape(_group_of(wl, "mw-launcher-0"))["minMember"] == 3

    # Scaled down as KubeRay does it: the spec, then a pod deleted; no remaining pod changes. The PodGroup follows
    # the spec at once (it kept 3, and the running cluster was evicted as a stale gang a minute later).
    wl.store.patch("rayclusters", "grow", NAMESPACE, {"spec": {"workerGroupSpecs": groups}})
    wl.store.delete("pods", "grow-w-2", NAMESPACE, grace_period_seconds=0)
    wl.wait(
        "the Ray PodGroup down to 2 workers",
        lambda: _shape(_group_of(wl, "grow-head"))["subGroups"] == {"head": 1, "w": 2},
        timeout=10,
    )

    if not harness.controllers_running():
        return  # no garbage collector: `clean` deletes what is left
    names = {_group_of(wl, p)["metadata"]["name"] for p in ("grow-head", "lw-0", "lw-1", "mw-worker-0")}
    for resource, name in (("rayclusters", "grow"), ("leaderworkersets", "lw"), ("mpijobs", "mw")):
        wl.delete_background(resource, name, NAMESPACE)
    wl.wait(
        "the PodGroups collected",
        lambda: not names & {g["metadata"]["name"] for g in wl.store.list("podgroups", NAMESPACE)[0]},
        timeout=30,
    )
    wl.wait("the pods collected", lambda: not wl.pods("e2e=true"), timeout=30)


def test_workload_mistakes_are_one_line_on_the_pod(wl: Cluster) -> None:
    """A PyTorchJob whose minAvailable exceeds its replicas, a JobSet whose min-member annotation is not a number, a
    pod labelled for another queue than its owner: each pod gets one Warning event saying so, and nothing
    crashes (a good workload beside them is placed)."""
    short = wl.create(
        _custom(
            "kubeflow.org/v1",
            "PyTorchJob",
            "short",
            {
                "runPolicy": {"schedulingPolicy": {"minAvailable": 5}},
                "pytorchReplicaSpecs": _replicas({"Master": 1, "Worker": 2}),
            },
        )
    )
    _kubeflow_pods(wl, short, {"Master": 1, "Worker": 2})
    _jobset(wl, "jsbad", {"w": (1, 1)})
    wl.store.patch(
        "jobsets", "jsbad", NAMESPACE, {"metadata": {"annotations": {"kai.scheduler/batch-min-member": "two"}}}
    )
    _owned(
        wl,
        "jsbad-w-0-1",
        wl.store.get("jobs", "jsbad-w-0", NAMESPACE),
        {
            "jobset.sigs.k8s.io/replicatedjob-name": "w",
            "jobset.sigs.k8s.io/job-index": "0",
        },
        controller=False,
    )
    job = wl.create(harness.suspended_job("qjob", QUEUE))
    wl.create(pod("qjob-0", queue="default-queue", owner=job, labels={"wl": "qjob"}))
    wl.wait("the three told", lambda: all(grouper_warnings(wl, p) for p in ("short-master-0", "jsbad-w-0-1", "qjob-0")))
    assert grouper_warnings(wl, "short-master-0") == [
        f"PyTorchJob {NAMESPACE}/short spec.runPolicy.schedulingPolicy.minAvailable: 5 is more than the 3 replicas "
        "of the job; it will not start until that many pods exist"
    ]
    assert grouper_warnings(wl, "jsbad-w-0-1") == [
        f"JobSet {NAMESPACE}/jsbad annotation kai.scheduler/batch-min-member: want an integer from 0 to 2147483647, "
        "got 'two'; ignored"
    ]
    assert grouper_warnings(wl, "qjob-0") == [
        f"pod label kai.scheduler/queue: 'default-queue' differs from its Job qjob's '{QUEUE}'; the Job's is used"
    ]
    # The warning event may come before the pod's pod-group-name patch.
    wl.wait("qjob-0 grouped", lambda: _names_group(wl, "qjob-0"))
    assert _shape(_group_of(wl, "qjob-0"))["queue"] == QUEUE
    wl.wait("the good job bound", lambda: len(wl.bound("wl=qjob")) == 1)
    assert wl.bound("wl=short") == []


def _pod_template(app: str) -> JSON:
    return {
        "metadata": {"labels": {"e2e": "true", "wl": app, "kai.scheduler/queue": QUEUE}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [{"name": "main", "image": "busybox", "resources": {"limits": {harness.GPU: "1"}}}],
        },
    }


@pytest.mark.needs_controllers  # the Deployment, StatefulSet, Job and CronJob controllers
def test_deployments_statefulsets_and_cronjob_runs_of_the_real_controllers(wl: Cluster) -> None:
    """Pods of the real controllers: a Deployment gets one `inference` PodGroup per pod (owned by the pod) and one
    more when scaled 2 → 3; a StatefulSet one PodGroup of minMember 1 for all its pods; a CronJob's run (a Job it
    owns, as `kubectl create job --from=cronjob/…` makes) a PodGroup of that Job, named after it."""
    selector = {"matchLabels": {"wl": "web"}}
    wl.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NAMESPACE, "labels": {"e2e": "true"}},
            "spec": {"replicas": 2, "selector": selector, "template": _pod_template("web")},
        }
    )
    sts = wl.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": NAMESPACE, "labels": {"e2e": "true"}},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"wl": "db"}},
                "template": _pod_template("db"),
            },
        }
    )
    run_pod = _pod_template("cron")
    run_pod["spec"]["restartPolicy"] = "Never"
    job_template = {"spec": {"template": run_pod}}
    cron = wl.create(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": NAMESPACE, "labels": {"e2e": "true"}},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": job_template},
        }
    )
    run = wl.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "nightly-manual", "namespace": NAMESPACE, "ownerReferences": [owner_reference(cron)]},
            "spec": job_template["spec"],
        }
    )
    wl.wait("web, db and the cron run bound", lambda: len(wl.bound("e2e=true")) == 5)
    web = [p["metadata"]["name"] for p in wl.pods("wl=web")]
    for name in web:
        group = _group_of(wl, name)
        uid = wl.store.get("pods", name, NAMESPACE)["metadata"]["uid"]
        assert group["metadata"]["name"] == f"pg-{name}-{uid}"
        assert group["metadata"]["ownerReferences"][0]["kind"] == "Pod"
        assert _shape(group) == {"minMember": 1, "queue": QUEUE, "priorityClassName": "inference"}
    assert {_group_of(wl, f"db-{i}")["metadata"]["name"] for i in range(2)} == {f"pg-db-{sts['metadata']['uid']}"}
    assert _shape(_group_of(wl, "db-0")) == {"minMember": 1, "queue": QUEUE, "priorityClassName": "train"}
    cron_pod = wl.pods("wl=cron")[0]["metadata"]["name"]
    assert _group_of(wl, cron_pod)["metadata"]["name"] == f"pg-nightly-manual-{run['metadata']['uid']}"

    wl.store.patch("deployments", "web", NAMESPACE, {"spec": {"replicas": 3}})
    wl.wait("the third web pod bound in a PodGroup of its own", lambda: len(wl.bound("wl=web")) == 3)
    assert len({_group_of(wl, p["metadata"]["name"])["metadata"]["name"] for p in wl.pods("wl=web")}) == 3


def test_a_leader_ready_group_whose_worker_comes_early_is_placed(wl: Cluster) -> None:
    """A LeaderWorkerSet with `startupPolicy: LeaderReady` whose worker pod exists before its leader is placed: the
    leader is placed alone first, then the worker with the whole group (the two pods used to compute different
    PodGroups, and the leader was left in no subgroup, never placed, without a word)."""
    lws = wl.create(
        _custom(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            "lr",
            {"replicas": 1, "startupPolicy": "LeaderReady", "leaderWorkerTemplate": {"size": 2}},
        )
    )
    _lws_pods(wl, lws, 0, 2)
    wl.wait("the leader and its worker bound", lambda: len(wl.bound("wl=lr")) == 2, timeout=30)
    assert _shape(_group_of(wl, "lr-0"))["subGroups"] == {"leader": 1, "workers": 1}
    assert (subgroup_of(wl, "lr-0"), subgroup_of(wl, "lr-0-1")) == ("leader", "workers")
