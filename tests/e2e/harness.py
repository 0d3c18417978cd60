"""What the end-to-end suite needs of a cluster: a store to submit and read objects, the components and the
fake kubelet as real processes (`kai scheduler|binder|podgrouper|controllers`, `kai fake-nodes`), and waiting.

The cluster is a real kube-apiserver named by `KAI_E2E_KUBECONFIG`, or, with `KAI_E2E_MOCK=1`, the project's
mock API server (tests/store/mock_apiserver.py) started in this process: the same suite, the same processes
and HTTP, without a cluster. See tests/e2e/README.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kai_scheduler.store.interface import JSON, AlreadyExists, NotFound
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests.loopback import free_port, write_kubeconfig

NAMESPACE = "kai-e2e"
GPU = "nvidia.com/gpu"
COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")
@dataclass
class Processes:
    """The components and fake nodes as child processes of the test run; their output goes to `logs`."""

    kubeconfig: str
    logs: Path
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, *args: str) -> None:
        log = open(self.logs / f"{name}.log", "ab")    # noqa: SIM115 - the child owns it
        command = [sys.executable, "-m", "kai_scheduler.cli", "-v", *args, "--kubeconfig", self.kubeconfig]
        self.running[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def start_component(self, component: str, *flags: str) -> None:
        self.start(component, component, f"--listen-address=127.0.0.1:{free_port()}", *flags)

    def kill(self, name: str) -> None:
        """SIGKILL: no clean shutdown, as a crashed or evicted process."""
        proc = self.running.pop(name)
        proc.kill()
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.running.values():
            proc.send_signal(signal.SIGTERM)
        for proc in self.running.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.running.clear()

    def alive(self) -> dict[str, int | None]:
        return {name: proc.poll() for name, proc in self.running.items()}

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for path in sorted(self.logs.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(out)


@dataclass
class Cluster:
    store: KubeStore
    processes: Processes
    node_prefix: str

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 90.0, every: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            dead = {name: code for name, code in self.processes.alive().items() if code is not None}
            if dead:
                raise AssertionError(f"processes exited ({dead}) while waiting for {what}\n"
                                     f"{self.processes.log_tail()}")
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{self.processes.log_tail()}")

    def pods(self, selector: str = "") -> list[JSON]:
        items, _ = self.store.list("pods", NAMESPACE, selector or None)
        return items

    def bound(self, selector: str) -> list[JSON]:
        return [p for p in self.pods(selector) if p.get("spec", {}).get("nodeName")
                and not p["metadata"].get("deletionTimestamp")]

    def create(self, obj: JSON) -> JSON:
        return self.store.create(obj)

    def delete_everything_submitted(self) -> None:
        """Remove what a test submitted (labelled e2e=true) so the next test starts on empty nodes."""
        for resource in ("pods", "podgroups", "jobs", "bindrequests"):
            items, _ = self.store.list(resource, NAMESPACE)
            for obj in items:
                with contextlib.suppress(NotFound):
                    self.store.delete(resource, obj["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
        self.wait("the namespace to empty", lambda: not self.store.list("pods", NAMESPACE)[0], timeout=60)


def gpus_by_node(pods: list[JSON]) -> dict[str, float]:
    """GPUs requested by the live (bound, not finished) pods on each node."""
    used: dict[str, float] = {}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in pod["spec"].get("containers", []):
            amount = float(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0))
            used[node] = used.get(node, 0.0) + amount
    return used


def pod(name: str, *, gpus: int = 1, queue: str = "default-queue", group: str = "",
        labels: dict[str, str] | None = None, owner: JSON | None = None, duration: str = "") -> JSON:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE,
                            "labels": {"e2e": "true", "kai.scheduler/queue": queue, **(labels or {})}}
    annotations = {}
    if group:
        annotations["pod-group-name"] = group
    if duration:
        annotations["kai.scheduler/fake-duration"] = duration
    if annotations:
        meta["annotations"] = annotations
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
    container = {"name": "main", "image": "busybox",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {GPU: str(gpus)}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": "kai-scheduler", "containers": [container], "terminationGracePeriodSeconds": 0,
                     "automountServiceAccountToken": False}}


def podgroup(name: str, *, min_member: int, queue: str) -> JSON:
    """An external PodGroup, as a PyTorchJob's operator integration would write it."""
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true"}},
            "spec": {"minMember": min_member, "queue": queue, "priorityClassName": "train"}}


def suspended_job(name: str, queue: str) -> JSON:
    """A batch Job the Job controller leaves alone (suspended); the test creates its pods, referencing it
    without a controller reference, so nothing depends on a controller-manager."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true", "kai.scheduler/queue": queue}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox"}]}}}}


def queue(name: str, *, gpu_quota: float, gpu_limit: float = -1, parent: str = "") -> JSON:
    spec: dict[str, Any] = {"resources": {
        "gpu": {"quota": gpu_quota, "overQuotaWeight": 1, "limit": gpu_limit},
        "cpu": {"quota": -1, "overQuotaWeight": 1, "limit": -1},
        "memory": {"quota": -1, "overQuotaWeight": 1, "limit": -1}}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
            "metadata": {"name": name, "labels": {"e2e": "true"}}, "spec": spec}


def install(store: KubeStore, kubeconfig: str, *, real: bool) -> None:
    """The parts of the install set the suite needs, each created unless present: on a real cluster the test
    namespace with its `default` ServiceAccount (pods are refused without it, and no controller-manager may be
    there to make it) and the CRDs, waited for until established; then the priority classes and default
    queues. The mock serves every kind and needs neither."""
    from kai_scheduler import install as installer

    objects = installer.manifests(installer.defaults())
    if real:
        _real_cluster_basics(kubeconfig, [o for o in objects if o["kind"] == "CustomResourceDefinition"])
    for obj in objects:
        if obj["kind"] in ("PriorityClass", "Queue"):
            with contextlib.suppress(AlreadyExists):
                store.create(obj)


def _real_cluster_basics(kubeconfig: str, crds: list[dict[str, Any]]) -> None:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    core, extensions = client.CoreV1Api(api_client), client.ApiextensionsV1Api(api_client)
    _unless_exists(lambda: core.create_namespace({"metadata": {"name": NAMESPACE}}))
    _unless_exists(lambda: core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": "default"}}))
    for crd in crds:
        _unless_exists(lambda crd=crd: extensions.create_custom_resource_definition(crd))
    deadline = time.monotonic() + 60
    for crd in crds:
        name = crd["metadata"]["name"]
        while not _established(extensions.read_custom_resource_definition(name)):
            if time.monotonic() > deadline:
                raise AssertionError(f"CRD {name} not established after 60 s")
            time.sleep(0.5)


def _established(crd: Any) -> bool:
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def _unless_exists(create: Callable[[], object]) -> None:
    from kubernetes import client

    try:
        create()
    except client.ApiException as err:
        if err.status != 409:
            raise


def connect(kubeconfig: str) -> KubeStore:
    return KubeStore.connect(kubeconfig, None, KubeOptions(qps=200, burst=400))


@contextlib.contextmanager
def mock_apiserver(workdir: Path) -> Iterator[str]:
    """The mock API server in this process, on the wall clock; yields a kubeconfig path."""
    from kai_scheduler.api.clock import SystemClock
    from kai_scheduler.store.memory import MemoryStore
    from tests.store.mock_apiserver import MockApiServer

    with MockApiServer(MemoryStore(SystemClock())) as server:
        yield write_kubeconfig(workdir / "kubeconfig", server.url)


def kubeconfig_from_env() -> str | None:
    return os.environ.get("KAI_E2E_KUBECONFIG") or None
