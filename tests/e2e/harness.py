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

import pytest

from kai_scheduler.api import constants
from kai_scheduler.fakenodes.nodes import LABEL_RACK
from kai_scheduler.store.interface import JSON, AlreadyExists, NotFound, StoreError, resource_named
from kai_scheduler.store.kube import KubeOptions, KubeStore, object_path
from tests import children, realkube
from tests.loopback import free_port, write_kubeconfig

NAMESPACE = "kai-e2e"
GPU = "nvidia.com/gpu"
COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")
# Queue access control is on for the suite: queues that set no access fields admit every namespace, so only
# test_queue_access.py's queues are affected.
COMPONENT_FLAGS = {"scheduler": ("--queue-access-control",)}
RESERVATION_NAMESPACE = constants.RESERVATION_NAMESPACE
NODE_PREFIX = "kai-e2e-node"
# How often a wait looks again (seconds): what it waits for is mostly a few cycles of the components away, so a
# short step ends the wait soon after; each look is a list or two on a loopback server.
POLL = 0.2
# Kept by cleanup: what the API server or kube-controller-manager put in every namespace.
KEPT_CONFIGMAPS = ("kube-root-ca.crt",)
# The workload kinds a test may submit (test_workloads.py; the CRDs in fixtures/), owners before what they own.
WORKLOAD_RESOURCES = (
    "jobs",
    "pytorchjobs",
    "tfjobs",
    "mpijobs",
    "notebooks",
    "rayjobs",
    "rayclusters",
    "leaderworkersets",
    "jobsets",
    "services.serving.knative.dev",
    "configurations",
    "revisions",
    "workflows",
    "podcliquesets",
    "podcliquescalinggroups",
    "podcliques",
    "podgangs",
    "cronjobs",
    "deployments",
    "replicasets",
    "statefulsets",
)


def controllers_running() -> bool:
    """KAI_E2E_CONTROLLERS=1: kube-controller-manager runs (Job controller, garbage collector, node lifecycle)."""
    return os.environ.get("KAI_E2E_CONTROLLERS") == "1"


def real_server() -> bool:
    return kubeconfig_from_env() is not None


def own_cluster(why_bare: str) -> Iterator[realkube.Cluster]:
    """A module fixture's body: a cluster of the test's own (its server may be stopped or killed without the suite's
    shared cluster losing its), in the bare mode only (`why_bare` says why the controllers do not matter)."""
    if controllers_running():
        pytest.skip(f"{why_bare}: run once, in the bare mode")
    why = realkube.unavailable()
    if why:
        pytest.skip(why)
    with realkube.cluster() as cluster:
        yield cluster


@dataclass
class Processes:
    """The components and fake nodes as child processes of the test run; their output goes to `logs`.

    A component runs with `kubeconfigs[component]` when given (its own ServiceAccount), else the admin one."""

    kubeconfig: str
    logs: Path
    kubeconfigs: dict[str, str] = field(default_factory=dict)
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    read_up_to: dict[str, int] = field(default_factory=dict)  # log name -> bytes already seen by refusals()
    ports: dict[str, int] = field(default_factory=dict)  # component name -> its --listen-address port
    plugin_ports: dict[str, int] = field(default_factory=dict)  # process name -> its --plugin-server-port

    def start(self, name: str, *args: str, kubeconfig: str = "") -> None:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        command = [
            sys.executable,
            "-m",
            "kai_scheduler.cli",
            "-v",
            *args,
            "--kubeconfig",
            kubeconfig or self.kubeconfig,
        ]
        self.running[name] = children.spawn(command, stdout=log, stderr=subprocess.STDOUT)

    def start_component(self, component: str, *flags: str, name: str = "", kubeconfig: str = "") -> None:
        """Start a component with the suite's flags for it (COMPONENT_FLAGS) and `flags`. A scheduler gets a free
        --plugin-server-port of its own (in `plugin_ports`) unless `flags` name one: KAI's 8081 is for one alone.
        `kubeconfig`: instead of the component's own (`kubeconfigs`)."""
        extra: tuple[str, ...] = ()
        if component in ("scheduler", "run") and not any(f.startswith("--plugin-server-port") for f in flags):
            self.plugin_ports[name or component] = free_port()
            extra = (f"--plugin-server-port={self.plugin_ports[name or component]}",)
        port = self.ports[name or component] = free_port()
        self.start(
            name or component,
            component,
            f"--listen-address=127.0.0.1:{port}",
            *COMPONENT_FLAGS.get(component, ()),
            *extra,
            *flags,
            kubeconfig=kubeconfig or self.kubeconfigs.get(component, ""),
        )

    def start_fake_nodes(self) -> None:
        self.start(
            "fake-nodes",
            "fake-nodes",
            "--count",
            "4",
            "--gpus",
            "8",
            "--prefix",
            NODE_PREFIX,
            "--rack-size",
            "2",
            "--zone-size",
            "4",
            "--heartbeat-period",
            "5s",
            "--delete-on-exit",
        )

    def start_all(self) -> None:
        self.start_fake_nodes()
        for component in COMPONENTS:
            self.start_component(component)

    def log_of(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def refusals(self) -> list[str]:
        """Lines written to the components' logs since the last call where the API server refused a request
        (403: a verb their RBAC lacks, or an admission plugin's refusal)."""
        found = []
        for path in sorted(self.logs.glob("*.log")):
            data = path.read_bytes()
            start, self.read_up_to[path.name] = self.read_up_to.get(path.name, 0), len(data)
            found += [
                f"{path.name}: {line}"
                for line in data[start:].decode(errors="replace").splitlines()
                if "forbidden" in line.lower()
            ]
        return found

    def kill(self, name: str) -> None:
        """SIGKILL: no clean shutdown, as a crashed or evicted process."""
        proc = self.running.pop(name)
        proc.kill()
        proc.wait(timeout=30)

    def stop(self, names: list[str]) -> None:
        """SIGTERM the named processes that still run, last started first, each waited for (30 s)."""
        for name in reversed(names):
            proc = self.running.pop(name, None)
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
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

    def wait(
        self,
        what: str,
        check: Callable[[], bool],
        timeout: float = 90.0,
        every: float = POLL,
        explain: Callable[[], str] | None = None,
    ) -> None:
        """Until `check()` holds; past `timeout`, fail with the components' last log lines and `explain()`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            dead = {name: code for name, code in self.processes.alive().items() if code is not None}
            if dead:
                raise AssertionError(f"processes exited ({dead}) while waiting for {what}\n{self.processes.log_tail()}")
            time.sleep(every)
        found = f"\n{explain()}" if explain is not None else ""
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{found}\n{self.processes.log_tail()}")

    def pods(self, selector: str = "") -> list[JSON]:
        items, _ = self.store.list("pods", NAMESPACE, selector or None)
        return items

    def bound(self, selector: str) -> list[JSON]:
        return [
            p
            for p in self.pods(selector)
            if p.get("spec", {}).get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]

    def create(self, obj: JSON) -> JSON:
        return self.store.create(obj)

    def delete_everything_submitted(self) -> None:
        """Leave the cluster as before the test, with or without a garbage collector: the workloads first (each
        kind of WORKLOAD_RESOURCES the cluster serves), with background propagation (a foreground deletion would
        wait forever where no garbage collector runs), then their pods explicitly (no garbage collector may remove
        them), the reservation pods, PodGroups, BindRequests, shared-GPU ConfigMaps, and the cluster-scoped objects
        a test labelled e2e=true."""
        for resource in WORKLOAD_RESOURCES:
            for obj in self._list(resource, NAMESPACE):
                self.delete_background(resource, obj["metadata"]["name"], NAMESPACE)
        for namespace in (NAMESPACE, RESERVATION_NAMESPACE):
            for obj in self._list("pods", namespace):
                self._delete_pod(obj)
        for resource in ("podgroups", "bindrequests", "configmaps"):
            for obj in self._list(resource, NAMESPACE):
                if resource == "configmaps" and obj["metadata"]["name"] in KEPT_CONFIGMAPS:
                    continue
                with contextlib.suppress(NotFound):
                    self.store.delete(resource, obj["metadata"]["name"], NAMESPACE)
        for resource in ("queues", "topologies"):
            for obj in self._list(resource, None, "e2e=true"):
                with contextlib.suppress(NotFound):
                    self.store.delete(resource, obj["metadata"]["name"])

        left: dict[str, list[str]] = {}

        def empty() -> bool:
            """Whether nothing is left; what is left is deleted again, since a component may still act on what
            its cache holds (the pod grouper writes a PodGroup again for a pod it has not seen go)."""
            left.clear()
            for resource, namespace in (
                ("pods", NAMESPACE),
                ("pods", RESERVATION_NAMESPACE),
                ("jobs", NAMESPACE),
                ("podgroups", NAMESPACE),
            ):
                for obj in self._list(resource, namespace):
                    left.setdefault(f"{resource} in {namespace}", []).append(obj["metadata"]["name"])
                    if resource == "pods":
                        self._delete_pod(obj)
                    elif resource == "podgroups":
                        with contextlib.suppress(NotFound):
                            self.store.delete(resource, obj["metadata"]["name"], namespace)
            return not left

        try:
            self.wait("the namespace to empty", empty, timeout=60)
        except AssertionError as err:
            raise AssertionError(f"left: {left}\n{err}") from None

    def delete_background(self, resource: str, name: str, namespace: str) -> None:
        """DELETE with propagationPolicy Background: the owner goes at once; its dependents are the caller's."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background", "gracePeriodSeconds": 0}
        with contextlib.suppress(NotFound):
            self.store.transport.call(
                "DELETE",
                object_path(resource_named(resource), name, namespace),
                body=body,
                what=f"delete {resource} {namespace}/{name}",
            )

    def _delete_pod(self, obj: JSON) -> None:
        meta = obj["metadata"]
        with contextlib.suppress(NotFound):
            if meta.get("finalizers"):  # the Job controller's job-tracking finalizer, once its Job is gone
                self.store.patch("pods", meta["name"], meta["namespace"], {"metadata": {"finalizers": None}})
            self.store.delete("pods", meta["name"], meta["namespace"], grace_period_seconds=0)

    def _list(self, resource: str, namespace: str | None, selector: str = "") -> list[JSON]:
        """The objects, or none when the kind is not served (a CRD a test installs only when it runs)."""
        try:
            return self.store.list(resource, namespace, selector or None)[0]
        except StoreError:
            return []


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


def pod(
    name: str,
    *,
    gpus: float = 1,
    queue: str = "default-queue",
    group: str = "",
    labels: dict[str, str] | None = None,
    owner: JSON | None = None,
    duration: str = "",
    priority_class: str = "",
    annotations: dict[str, str] | None = None,
) -> JSON:
    """A pod for kai-scheduler; a fractional `gpus` is a `gpu-fraction` annotation instead of a GPU limit."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "labels": {"e2e": "true", "kai.scheduler/queue": queue, **(labels or {})},
    }
    notes = dict(annotations or {})
    if group:
        notes["pod-group-name"] = group
    if duration:
        notes["kai.scheduler/fake-duration"] = duration
    limits = {GPU: str(int(gpus))}
    if gpus != int(gpus):
        notes["gpu-fraction"] = str(gpus)
        limits = {}
    if notes:
        meta["annotations"] = notes
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": limits},
    }
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def owner_reference(owner: JSON, *, controller: bool = True) -> JSON:
    """A reference to `owner` as its operator writes one in what it makes (a controller reference unless
    `controller=False`)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": False,
    }


def subgroup_of(cluster: Cluster, pod_name: str) -> str:
    """The SubGroup the pod grouper put the pod in (its `kai.scheduler/subgroup-name` label; "" for none)."""
    labels = cluster.store.get("pods", pod_name, NAMESPACE)["metadata"].get("labels") or {}
    return str(labels.get("kai.scheduler/subgroup-name", ""))


def event_messages(cluster: Cluster, kind: str, name: str, reason: str, namespace: str | None = NAMESPACE) -> list[str]:
    """The messages of the events of `reason` on the object `kind`/`name` (in `namespace`; None: any)."""
    events, _ = cluster.store.list("events", namespace)
    return [
        str(e.get("message"))
        for e in events
        if e.get("reason") == reason
        and (e.get("involvedObject") or {}).get("kind") == kind
        and (e.get("involvedObject") or {}).get("name") == name
    ]


def grouper_warnings(cluster: Cluster, pod_name: str) -> list[str]:
    """The messages of the pod grouper's `PodGrouperWarning` events on the pod."""
    return [
        e["message"]
        for e in cluster.store.list("events", NAMESPACE)[0]
        if e.get("involvedObject", {}).get("name") == pod_name and e.get("reason") == "PodGrouperWarning"
    ]


def rack_of(cluster: Cluster, node: str) -> Any:
    """The node's rack label (`kai fake-nodes --rack-size`)."""
    return cluster.store.get("nodes", node)["metadata"]["labels"].get(LABEL_RACK)


def podgroup(
    name: str, *, min_member: int, queue: str, staleness_grace: str = "", topology: str = "", required_level: str = ""
) -> JSON:
    """An external PodGroup, as a PyTorchJob's operator integration would write it."""
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue, "priorityClassName": "train"}
    if staleness_grace:
        spec["stalenessGracePeriod"] = staleness_grace
    if topology:
        spec["topologyConstraint"] = {"topology": topology, "requiredTopologyLevel": required_level}
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true"}},
        "spec": spec,
    }


def suspended_job(name: str, queue: str) -> JSON:
    """A batch Job the Job controller leaves alone (suspended); the test creates its pods, referencing it
    without a controller reference, so nothing depends on a controller-manager."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"e2e": "true", "kai.scheduler/queue": queue}},
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}},
        },
    }


def queue(name: str, *, gpu_quota: float, gpu_limit: float = -1, parent: str = "") -> JSON:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "overQuotaWeight": 1, "limit": gpu_limit},
            "cpu": {"quota": -1, "overQuotaWeight": 1, "limit": -1},
            "memory": {"quota": -1, "overQuotaWeight": 1, "limit": -1},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {"e2e": "true"}},
        "spec": spec,
    }


WORKLOAD_CRDS = ("grove-crds.yaml", "pytorchjob-crd.yaml", "workload-crds.yaml")  # minimal CRDs of the operators


def load_fixture(name: str) -> list[JSON]:
    import yaml

    text = (Path(__file__).parent / "fixtures" / name).read_text(encoding="utf-8")
    return [doc for doc in yaml.safe_load_all(text) if doc]


def install(store: KubeStore, kubeconfig: str, *, real: bool) -> None:
    """The parts of the install set the suite needs, each created unless present: on a real cluster the test
    namespace with its `default` ServiceAccount (pods are refused without it, and no controller-manager may be
    there to make it) and the CRDs, waited for until established; then the priority classes and default
    queues (`kai controllers` creates the default queues when it starts). The mock serves every kind and needs
    neither."""
    from kai_scheduler import install as installer

    objects = installer.manifests(installer.defaults())
    if real:
        # The workload operators' CRDs with KAI's, now rather than when their tests come: kube-controller-manager's
        # garbage collector learns of a new resource on its next discovery (every 30 s), and until then it cannot
        # see an owner of that kind deleted, so the owner's PodGroup would be collected only by chance in time.
        kai_crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        _real_cluster_basics(kubeconfig, kai_crds + [crd for name in WORKLOAD_CRDS for crd in load_fixture(name)])
    for obj in objects:
        if obj["kind"] in ("PriorityClass",):
            with contextlib.suppress(AlreadyExists):
                store.create(obj)


def _real_cluster_basics(kubeconfig: str, crds: list[dict[str, Any]], *, namespace: bool = True) -> None:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    core, extensions = client.CoreV1Api(api_client), client.ApiextensionsV1Api(api_client)
    if namespace:
        _unless_exists(lambda: core.create_namespace({"metadata": {"name": NAMESPACE}}))
        _unless_exists(lambda: core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": "default"}}))
    for crd in crds:
        _unless_exists(lambda crd=crd: extensions.create_custom_resource_definition(crd))
    # What the GPU operator installs on a GPU cluster; the binder's reservation pods name it, and the API server's
    # RuntimeClass admission refuses a pod naming one that does not exist.
    _unless_exists(
        lambda: client.NodeV1Api(api_client).create_runtime_class({"metadata": {"name": "nvidia"}, "handler": "nvidia"})
    )
    deadline = time.monotonic() + 60
    for crd in crds:
        name = crd["metadata"]["name"]
        while not _established(extensions.read_custom_resource_definition(name)):
            if time.monotonic() > deadline:
                raise AssertionError(f"CRD {name} not established after 60 s")
            time.sleep(POLL)


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
