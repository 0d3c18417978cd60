"""Reclaim rounds on a real control plane, recording every write to the pods: "a pipelined pod lost its
status.nominatedNodeName while its sibling kept it".

`python -m tests.e2e.repro_nomlost [--rounds N] [--grace SECONDS] [--gpus-per-pod G ...]` starts a real
kube-apiserver with kube-controller-manager (`../shared/kube/cluster.sh start --controllers`, run directory
`$KAI_KUBE_RUN` or /tmp/kube-nomlost, stopped in a `finally`), installs the CRDs and RBAC as the e2e suite does,
and runs the components (`kai scheduler|binder|podgrouper|controllers -v`, each as its own ServiceAccount; the
scheduler with `--pipelined-claims=true`, which writes the nominations this watches) and
`kai fake-nodes --count 4 --gpus 4` as processes. Each round:

1. queue team-a (quota 0) runs a Job of 16 one-GPU pods: it borrows every GPU of the 4 nodes; its pods have
   `terminationGracePeriodSeconds: GRACE` (a Job's default is 30 s), so an evicted one stays Releasing that long;
2. queue team-b (quota 16) submits a 2-pod Job of G GPUs per pod (within its quota), which reclaims;
3. a watch on the namespace records every pod event (resourceVersion, nodeName, nominatedNodeName, and the
   managedFields entry that owns `status.nominatedNodeName`) until both team-b pods are bound.

A team-b pod "lost" its nomination when an event shows it Pending, unbound, with no nominatedNodeName after an
event that had one. The report prints each round's team-b pod history and the scheduler's log lines about the
claims; the logs stay in $KAI_REPRO_LOGS (default a temporary directory, printed). Exit 1 when any round lost one.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import realkube
from tests.e2e import harness, serviceaccounts
from tests.e2e.podwatch import PodWatch, Seen, lost_nominations
from tests.loopback import free_port

NAMESPACE = "nomlost"
PREFIX = "nomlost-node"


def _job(name: str, queue: str, pods: int, gpus: int, grace: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kai.scheduler/queue": queue}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 100,
            "template": {
                "metadata": {"labels": {"kai.scheduler/queue": queue, "team": queue}},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": grace,
                    "automountServiceAccountToken": False,
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"limits": {harness.GPU: str(gpus)}}}
                    ],
                },
            },
        },
    }


def run(rounds: int, grace: int, sizes: list[int], logs: Path) -> int:
    run_dir = Path(os.environ.get("KAI_KUBE_RUN", "/tmp/kube-nomlost"))
    env = {**os.environ, "KAI_KUBE_RUN": str(run_dir)}
    script = str(realkube.script())
    processes: harness.Processes | None = None
    stack = contextlib.ExitStack()
    failures = 0
    try:
        started = subprocess.run(
            [script, "start", "--controllers"], env=env, capture_output=True, text=True, timeout=180, check=False
        )
        if started.returncode != 0:
            print(f"cluster.sh start failed: {started.stderr[-2000:]}", file=sys.stderr)
            return 2
        kubeconfig = started.stdout.strip().splitlines()[-1]
        store = harness.connect(kubeconfig)
        harness.install(store, kubeconfig, real=True)
        realkube.kubectl(kubeconfig, "create", "namespace", NAMESPACE)
        serviceaccounts.install_rbac(kubeconfig)
        processes = harness.Processes(kubeconfig, logs)
        tokens = logs / "tokens"
        tokens.mkdir(exist_ok=True)
        processes.kubeconfigs = {c: serviceaccounts.kubeconfig_for(kubeconfig, c, tokens) for c in harness.COMPONENTS}
        processes.start("fake-nodes", "fake-nodes", "--count", "4", "--gpus", "4", "--prefix", PREFIX,
                        "--heartbeat-period", "5s", "--delete-on-exit")  # fmt: skip
        for component in harness.COMPONENTS:
            if component == "scheduler":  # -vv: the decisions and the claims written and cleared
                listen = f"--listen-address=127.0.0.1:{free_port()}"
                args = (
                    "-v",
                    "scheduler",
                    listen,
                    f"--plugin-server-port={free_port()}",
                    *harness.COMPONENT_FLAGS["scheduler"],
                    "--pipelined-claims=true",  # the claims are what this reproduces (off by default)
                )
                processes.start("scheduler", *args, kubeconfig=processes.kubeconfigs["scheduler"])
            else:
                processes.start_component(component)
        _wait(lambda: _ready_nodes(store) == 4, "4 ready fake nodes", 90)
        _wait(lambda: _exists(store, "queues", "default-queue"), "the default queue", 60)
        _wait(
            lambda: realkube.kubectl(kubeconfig, "-n", NAMESPACE, "get", "serviceaccount", "default").returncode == 0,
            "the namespace's default ServiceAccount",
            60,
        )
        store.create(harness.queue("team-a", gpu_quota=0))
        store.create(harness.queue("team-b", gpu_quota=16))
        watcher = stack.enter_context(PodWatch(kubeconfig, NAMESPACE))
        for k in range(rounds):
            gpus = sizes[k % len(sizes)]
            first = len(watcher.seen)
            begun = time.time()
            store.create(_job(f"a-{k}", "team-a", 16, 1, grace))
            _wait(lambda k=k: len(_bound(store, f"a-{k}")) == 16, "team-a on all 16 GPUs", 120)
            store.create(_job(f"b-{k}", "team-b", 2, gpus, grace))
            try:
                _wait(lambda k=k: len(_bound(store, f"b-{k}")) == 2, "team-b's 2 pods bound", 180)
                outcome = f"bound after {time.time() - begun:.0f} s"
            except RuntimeError as err:
                outcome = str(err)
            time.sleep(1.0)  # the watch catches up
            history: dict[str, list[Seen]] = {}
            evicted: set[str] = set()
            for s in watcher.seen[first:]:
                if s.name.startswith(f"b-{k}-"):
                    history.setdefault(s.name, []).append(s)
                elif s.name.startswith(f"a-{k}-") and s.deleting:
                    evicted.add(s.name)
            lost = {name: lost_nominations(h) for name, h in history.items()}
            bad = [name for name, pairs in lost.items() if pairs]
            failures += bool(bad)
            print(
                f"\n=== round {k}: team-b 2 x {gpus} GPUs, grace {grace}s: {outcome}; team-a pods evicted "
                f"{len(evicted)} (needed {2 * gpus}); nomination lost by {bad or 'none'}"
            )
            for name, h in sorted(history.items()):
                print(f"  {name}")
                for s in h:
                    print(
                        f"    +{s.at - begun:6.2f}s {s.kind:8} rv={s.rv:>6} node={s.node or '-':16} "
                        f"nominated={s.nominated or '-':16} {s.phase} {'deleting ' if s.deleting else ''}"
                        f"nnn-owner={s.owner or '-'} newest={s.last}"
                    )
            with open(logs / f"round-{k}-pods.jsonl", "w", encoding="utf-8") as out:
                for s in watcher.seen[first:]:
                    out.write(json.dumps({**dataclasses.asdict(s), "at": round(s.at - begun, 2)}) + "\n")
            victims: dict[str, list[Seen]] = {}
            for s in watcher.seen[first:]:
                if s.name in evicted:
                    victims.setdefault(s.name, []).append(s)
            print("  team-a pods evicted: node, seen terminating, gone (+s from the round's start)")
            for name, h in sorted(victims.items(), key=lambda item: item[1][0].at):
                deleting = next((x.at - begun for x in h if x.deleting), None)
                gone = next((x.at - begun for x in h if x.kind == "DELETED"), None)
                print(
                    f"    {name} {h[0].node or '-'} terminating +{deleting or 0:.1f}s "
                    f"gone {'+' + format(gone, '.1f') + 's' if gone is not None else 'not yet'} "
                    f"finalizers {h[-1].finalizers}"
                )
            claims = [
                line
                for line in processes.log_of("scheduler").splitlines()
                if "scheduler.commit: claim" in line and f"pod={NAMESPACE}/b-{k}-" in line
            ]
            print("  scheduler log about their claims:\n    " + "\n    ".join(claims or ["(none)"]))
            realkube.kubectl(kubeconfig, "-n", NAMESPACE, "delete", "jobs", "--all", "--wait=false")
            realkube.kubectl(kubeconfig, "-n", NAMESPACE, "delete", "pods", "--all", "--grace-period=0", "--force")
            _wait(lambda: not store.list("pods", NAMESPACE)[0], "the namespace to empty", 90)
            for resource in ("podgroups", "bindrequests"):
                for obj in store.list(resource, NAMESPACE)[0]:
                    with contextlib.suppress(Exception):
                        store.delete(resource, obj["metadata"]["name"], NAMESPACE)
        return 1 if failures else 0
    finally:
        stack.close()
        if processes is not None:
            processes.stop_all()
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=60, check=False)
        print(f"\nlogs: {logs}")


def _wait(check: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.3)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def _bound(store: Any, job: str) -> list[Any]:
    pods = store.list("pods", NAMESPACE, f"job-name={job}")[0]
    return [p for p in pods if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]


def _ready_nodes(store: Any) -> int:
    nodes = store.list("nodes")[0]
    return sum(
        1
        for n in nodes
        if n["metadata"]["name"].startswith(PREFIX)
        and not any(t.get("effect") == "NoSchedule" for t in n.get("spec", {}).get("taints") or [])
    )


def _exists(store: Any, resource: str, name: str) -> bool:
    store.get(resource, name)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--grace", type=int, default=30, help="terminationGracePeriodSeconds of the pods")
    parser.add_argument("--gpus-per-pod", type=int, nargs="+", default=[4, 1, 2], help="team-b pod sizes, in turn")
    args = parser.parse_args()
    logs = Path(os.environ.get("KAI_REPRO_LOGS") or tempfile.mkdtemp(prefix="nomlost-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    return run(args.rounds, args.grace, args.gpus_per_pod, logs)


if __name__ == "__main__":
    sys.exit(main())
