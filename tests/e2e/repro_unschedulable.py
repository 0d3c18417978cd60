"""Orders tried to reproduce "a pending 16-GPU pod got no Unschedulable condition nor event for 30 s".

`python -m tests.e2e.repro_unschedulable [ORDER ...]` starts a real kube-apiserver with kube-controller-manager
(`../shared/kube/cluster.sh`, its own run directory, stopped in a `finally`), installs the CRDs and RBAC as
docs/components.md says for running from a machine, and plays each order with `kai run` and `kai fake-nodes`
(4 nodes x 8 GPUs) as processes (their logs kept in $KAI_REPRO_LOGS when set). For every order it prints how
long after the pod's creation (a) its PodGroup had an `UnschedulableOnNodePool` condition, (b) the pod a
`PodScheduled=False` condition, (c) an event whose `involvedObject.uid` is the pod's own (what `kubectl describe
pod` shows), or `never` within the limit. Looking starts once the order's steps are done (pod-before-nodes waits
5 s and for the nodes first, so about 6 s is its floor). Exit 1 when any order missed one of them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import realkube

LIMIT = 40.0  # seconds: the report said "for over 30 s"
POD = "big"
ROOT = realkube.ROOT
KAI = [sys.executable, "-m", "kai_scheduler.cli"]


class Rig:
    def __init__(self, kubeconfig: str, workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {**os.environ, "KUBECONFIG": kubeconfig}

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            ["kubectl", *args], input=stdin, capture_output=True, text=True, env=self.env, timeout=60, check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def get(self, *args: str) -> Any:
        out = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(out) if out.strip() else None

    def start(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - kept open while the process runs
        self.procs[name] = subprocess.Popen(
            [*KAI, *args, "--kubeconfig", self.kubeconfig], stdout=log, stderr=log, cwd=ROOT, env=self.env
        )

    def start_run(self, *flags: str) -> None:
        self.start("run", "-v", "run", "--listen-address", "127.0.0.1:0", "--plugin-server-port=0", *flags)

    def start_nodes(self) -> None:
        self.start("nodes", "fake-nodes", "--count", "4", "--gpus", "8", "--delete-on-exit")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            nodes = (self.get("nodes") or {}).get("items", [])
            if len(nodes) == 4:
                return
            time.sleep(0.2)
        raise RuntimeError("fake nodes did not appear")

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def create_pod(self, *, annotate_group: str = "") -> str:
        annotations = {"pod-group-name": annotate_group} if annotate_group else {}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": POD,
                "namespace": "default",
                "labels": {"kai.scheduler/queue": "default-queue"},
                "annotations": annotations,
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"limits": {"nvidia.com/gpu": "16"}},
                    }
                ],
            },
        }
        out = self.kubectl("create", "-f", "-", "-o", "json", stdin=json.dumps(pod))
        return str(json.loads(out)["metadata"]["uid"])

    def create_podgroup(self, name: str) -> None:
        pg = {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default-queue"},
        }
        self.kubectl("create", "-f", "-", stdin=json.dumps(pg))

    def delete_pod(self) -> None:
        self.kubectl("delete", "pod", POD, "--wait=true", "--timeout=60s", check=False)

    def clean(self) -> None:
        self.stop_all()
        self.delete_pod()
        self.kubectl("delete", "podgroups", "--all", "-n", "default", "--wait=true", "--timeout=60s", check=False)
        self.kubectl("delete", "events", "--all", "-n", "default", check=False)

    def seen(self, uid: str) -> dict[str, bool]:
        pod = self.get("pod", POD, "-n", "default") or {}
        group = (pod.get("metadata", {}).get("annotations") or {}).get("pod-group-name", "")
        pg = self.get("podgroup", group, "-n", "default") if group else None
        conditions = ((pg or {}).get("status") or {}).get("schedulingConditions") or []
        pod_conditions = (pod.get("status") or {}).get("conditions") or []
        events = (self.get("events", "-n", "default") or {}).get("items", [])
        return {
            "podgroup condition": any(c.get("type") == "UnschedulableOnNodePool" for c in conditions),
            "pod condition": any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in pod_conditions
            ),
            "pod event": any(
                e.get("reason") == "Unschedulable" and (e.get("involvedObject") or {}).get("uid") == uid for e in events
            ),
        }

    def watch(self, uid: str, created: float) -> dict[str, float | None]:
        found: dict[str, float | None] = {"podgroup condition": None, "pod condition": None, "pod event": None}
        while time.monotonic() - created < LIMIT and any(v is None for v in found.values()):
            for key, ok in self.seen(uid).items():
                if ok and found[key] is None:
                    found[key] = time.monotonic() - created
            time.sleep(0.5)
        return found


def pod_before_nodes(rig: Rig) -> tuple[str, float]:
    uid = rig.create_pod()
    created = time.monotonic()
    rig.start_run()
    time.sleep(5)
    rig.start_nodes()
    return uid, created


def nodes_first(rig: Rig) -> tuple[str, float]:
    rig.start_nodes()
    rig.start_run()
    time.sleep(3)
    return rig.create_pod(), time.monotonic()


def components_after_pod(rig: Rig) -> tuple[str, float]:
    rig.start_nodes()
    uid = rig.create_pod()
    created = time.monotonic()
    rig.start_run()
    return uid, created


def podgroup_after_pod(rig: Rig) -> tuple[str, float]:
    """The pod names its PodGroup (annotation) that is created 5 s later; the pod grouper leaves it alone."""
    rig.start_nodes()
    rig.start_run()
    uid = rig.create_pod(annotate_group="user-pg")
    created = time.monotonic()
    time.sleep(5)
    rig.create_podgroup("user-pg")
    return uid, created


def restart_while_pending(rig: Rig, sig: int = signal.SIGTERM) -> tuple[str, float]:
    rig.start_nodes()
    rig.start_run()
    uid = rig.create_pod()
    created = time.monotonic()
    time.sleep(1.0)
    rig.stop("run", sig)
    rig.start_run()
    return uid, created


def killed_while_pending(rig: Rig) -> tuple[str, float]:
    return restart_while_pending(rig, signal.SIGKILL)


def killed_with_leader_election(rig: Rig) -> tuple[str, float]:
    """`kai run --leader-elect` killed (its Leases not released) while the pod is pending, and started again: the
    new process waits out the old Leases (15 s) before it groups and schedules."""
    rig.start_nodes()
    rig.start_run("--leader-elect")
    time.sleep(3)
    rig.stop("run", signal.SIGKILL)
    rig.start_run("--leader-elect")
    return rig.create_pod(), time.monotonic()


def two_processes_overlapping(rig: Rig) -> tuple[str, float]:
    """A second `kai run` (without leader election, the default) started before the first one stops."""
    rig.start_nodes()
    rig.start_run()
    uid = rig.create_pod()
    created = time.monotonic()
    first = rig.procs.pop("run")
    rig.start_run()
    time.sleep(2)
    first.terminate()
    first.wait(timeout=20)
    return uid, created


def recreated_while_down(rig: Rig) -> tuple[str, float]:
    """A first pod of the same name is told; the components stop; the pod is deleted and made again; they
    start again."""
    rig.start_nodes()
    rig.start_run()
    first = rig.create_pod()
    rig.watch(first, time.monotonic())
    rig.stop("run")
    rig.delete_pod()
    uid = rig.create_pod()
    created = time.monotonic()
    rig.start_run()
    return uid, created


def recreated_while_running(rig: Rig) -> tuple[str, float]:
    """The same, with the components running throughout."""
    rig.start_nodes()
    rig.start_run()
    first = rig.create_pod()
    rig.watch(first, time.monotonic())
    rig.delete_pod()
    uid = rig.create_pod()
    return uid, time.monotonic()


def podgroup_deleted_while_pending(rig: Rig) -> tuple[str, float]:
    """The pod's PodGroup is deleted (by hand, or by the garbage collector) while the pod stays pending: only
    the PodGroup's condition counts here (the pod still carries what it was told before)."""
    rig.start_nodes()
    rig.start_run()
    uid = rig.create_pod()
    rig.watch(uid, time.monotonic())
    group = rig.get("pod", POD, "-n", "default")["metadata"]["annotations"]["pod-group-name"]
    rig.kubectl("delete", "podgroup", group, "-n", "default", "--wait=true")
    return uid, time.monotonic()


def reapplied_with_old_annotation(rig: Rig) -> tuple[str, float]:
    """`kubectl get pod -o yaml` saved, the pod deleted and the saved manifest applied again: the new pod names
    the old pod's PodGroup, which the garbage collector removes (its owner is gone)."""
    rig.start_nodes()
    rig.start_run()
    first = rig.create_pod()
    rig.watch(first, time.monotonic())
    group = rig.get("pod", POD, "-n", "default")["metadata"]["annotations"]["pod-group-name"]
    rig.kubectl("delete", "pod", POD, "--wait=false")
    uid = rig.create_pod(annotate_group=group)
    deadline = time.monotonic() + 120  # the garbage collector watches a new CRD's objects only after a while
    while rig.get("podgroup", group, "-n", "default") is not None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the old PodGroup {group} was not collected in 120 s")
        time.sleep(1)
    return uid, time.monotonic()  # looking starts once the old PodGroup is gone


ORDERS: dict[str, Callable[[Rig], tuple[str, float]]] = {
    "pod-before-nodes": pod_before_nodes,
    "nodes-first": nodes_first,
    "components-after-pod": components_after_pod,
    "podgroup-after-pod": podgroup_after_pod,
    "restart-while-pending": restart_while_pending,
    "killed-while-pending": killed_while_pending,
    "killed-with-leader-election": killed_with_leader_election,
    "two-processes-overlapping": two_processes_overlapping,
    "podgroup-deleted-while-pending": podgroup_deleted_while_pending,
    "reapplied-with-old-annotation": reapplied_with_old_annotation,
    "recreated-while-down": recreated_while_down,
    "recreated-while-running": recreated_while_running,
}


def install(rig: Rig) -> None:
    manifests = subprocess.run(
        [*KAI, "manifests", "--set", "operator.replicas=0", "--set", "admission.crdFailurePolicy=Ignore"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    rig.kubectl("apply", "--server-side", "-f", "-", stdin=manifests)
    rig.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")


def main(argv: list[str]) -> int:
    if (why := realkube.unavailable()) is not None:
        print(f"no real API server here: {why}")
        return 0
    chosen = argv or list(ORDERS)
    missed = False
    keep = os.environ.get("KAI_REPRO_LOGS")  # a directory to keep the components' logs in
    with realkube.cluster(controllers=True) as cluster, tempfile.TemporaryDirectory() as tmp:
        rig = Rig(cluster.kubeconfig, Path(keep or tmp))
        install(rig)
        for name in chosen:
            try:
                uid, created = ORDERS[name](rig)
                found = rig.watch(uid, created)
            finally:
                rig.clean()
            text = ", ".join(f"{k} {'never' if v is None else f'{v:.1f}s'}" for k, v in found.items())
            missed |= any(v is None for v in found.values())
            print(f"{name}: {text}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
