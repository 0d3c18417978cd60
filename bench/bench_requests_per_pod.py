"""The API requests `kai run` sends per bound pod, request by request, against what KAI's components send:
`python bench/bench_requests_per_pod.py [--rounds 3]`.

A fresh control plane (`../shared/kube/cluster.sh`, as `bench_fill.py`), 4 `kai fake-nodes` × 8 GPUs and one
`kai run` process (the four components in one) whose every request is written to a ledger on its client side
(`request_ledger.py`: the API server keeps no audit log here). Then, `--rounds` times each, one after another:

- `single`: one single-GPU pod with no owner (the podgrouper makes its PodGroup, as in `bench_fill.py`);
- `gang8`: a batch Job (suspended; `kai.scheduler/batch-min-member: 8`) and its 8 single-GPU pods, one PodGroup
  with minMember 8 made by the podgrouper.

Each submission is counted from its first create until its pods are Running (the fake kubelet) and `kai run` has
sent nothing for `--quiet` seconds; a first submission of each kind before the counted ones is not counted (the
podgrouper's first Job owner starts its watch of Jobs). Printed per kind: every request in the window by verb,
resource, subresource (and what a PodGroup patch or an event says), per pod, beside KAI's count for the same
request (from KAI's components: podgrouper, scheduler and its status updater, binder, podgroup and queue
controllers); `--show` prints the ledger lines themselves.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_fill import ControlPlane, start_fake_nodes, start_through  # noqa: E402
from fill_timeline import Timeline, create_all  # noqa: E402
from request_ledger import parse  # noqa: E402
from tests.e2e import harness  # noqa: E402

NODES = 4

# KAI's requests for the same pod, per pod ("1 j": once per job, spread over its pods), from its sources: the
# podgrouper's PodGroup apply and pod patch; the scheduler's BindRequest, Scheduled event and, in its status
# updater, one PodGroup update per job and cycle (the annotations as one patch, the status as one update, each only
# when it changed); the binder's pod annotation patch (received-resource-type), binding, BindRequest status patch,
# Bound event and pod condition patch; the podgroup controller's status patch and the queue controller's, each when
# a reconcile finds the status changed (a pod's request appearing and its allocation: up to 2 per pod, fewer when
# one reconcile sees both).
KAI = {
    "create podgroups": "1 j",
    "patch pods (pod-group-name)": "1",
    "create bindrequests": "1",
    "create events (Scheduled)": "1",
    "patch podgroups (last-start-timestamp)": "1 j",
    "patch pods (received-resource-type)": "1",
    "create pods/binding": "1",
    "patch bindrequests/status": "1",
    "create events (Bound)": "1",
    "patch pods/status (Bound condition)": "1",
    "patch podgroups/status (resourcesStatus)": "1 per reconcile that finds it changed (≤ 2 per pod)",
    "patch queues/status": "the same, per queue and its parents",
}


def label(line: dict[str, Any]) -> str:
    """The ledger line as a table row: verb, resource/subresource, and for patches and events what they say."""
    target = parse(line["path"])
    method = line["method"]
    if line["watch"]:
        verb = "watch"
    elif method == "GET":
        verb = "get" if target.name else "list"
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}.get(method, method)
    resource = target.resource
    if verb == "create" and target.subresource == "" and target.name and resource == "pods":
        resource = "pods"
    what = f"{resource}/{target.subresource}" if target.subresource else resource
    detail = _detail(verb, target.resource, target.subresource, line["body"])
    return f"{verb} {what}" + (f" ({detail})" if detail else "")


def _detail(verb: str, resource: str, subresource: str, body: str) -> str:
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        data = {}  # cut at 400 characters: read what can be read
        if '"reason": "' in body or '"reason":"' in body:
            data = {"reason": body.split('"reason"', 1)[1].split('"')[1]}
    if resource == "events" and verb == "create":
        return str(data.get("reason", "?"))
    if verb != "patch" or not isinstance(data, dict):
        return ""
    meta = data.get("metadata") or {}
    keys = [*(meta.get("annotations") or {}), *(meta.get("labels") or {})]
    if subresource == "status":
        status = data.get("status") or {}
        return ", ".join(sorted(status)) if resource == "podgroups" else ""
    return ", ".join(k.rpartition("/")[2] for k in keys)


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, since: float = 0.0) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for text in self.path.read_text().splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue  # being written
            if line["t"] >= since:
                out.append(line)
        return out

    def quiet_for(self, seconds: float) -> bool:
        lines = [ln for ln in self.lines(time.time() - seconds) if not ln["watch"]]
        return not lines


def submit(store: Any, kind: str, n: int, kubeconfig: str = "", fill: int = 0) -> list[str]:
    """Create one job of `kind` (`fill`: that many single pods at once); its pod names."""
    if kind == "fill":
        names = [f"fill-{n}-{i}" for i in range(fill)]
        pods = []
        for name in names:
            pod = harness.pod(name, gpus=1)
            pod["spec"]["schedulerName"] = "kai-scheduler"
            pods.append((name, pod))
        create_all(kubeconfig, pods, Timeline())
        return names
    if kind == "single":
        name = f"single-{n}"
        pod = harness.pod(name, gpus=1)
        pod["spec"]["schedulerName"] = "kai-scheduler"
        store.create(pod)
        return [name]
    job = harness.suspended_job(f"gang-{n}", "default-queue")
    job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "8"}
    job = store.create(job)
    names = [f"gang-{n}-{i}" for i in range(8)]
    for name in names:
        pod = harness.pod(name, gpus=1, owner=job)
        pod["spec"]["schedulerName"] = "kai-scheduler"
        store.create(pod)
    return names


def redundant(lines: list[dict[str, Any]]) -> Counter[str]:
    """Writes whose body is the body of the write before them to the same object and subresource (nothing
    else in the ledger wrote it between): by their row label. Only this process writes these objects' status and
    annotations here, so such a write changed nothing."""
    last: dict[str, str] = {}
    out: Counter[str] = Counter()
    for line in lines:
        if line["method"] not in ("PATCH", "PUT"):
            continue
        key = line["path"]
        if last.get(key) == line["body"]:
            out[label(line)] += 1
        last[key] = line["body"]
    return out


def wait_running(store: Any, names: list[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods, _ = store.list("pods", harness.NAMESPACE)
        phase = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
        if all(phase.get(n) == "Running" for n in names):
            return
        time.sleep(0.1)
    raise TimeoutError(f"pods not Running after {timeout}s: {names}")


def wait_quiet(ledger: Ledger, quiet: float, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ledger.quiet_for(quiet):
            return time.time()
        time.sleep(0.2)
    return time.time()


def measure(rounds: int, quiet: float, show: bool, fill: int) -> dict[str, tuple[Counter[str], int, Counter[str]]]:
    out: dict[str, tuple[Counter[str], int, Counter[str]]] = {}
    nodes = NODES + -(-(fill + (rounds + 1) * 9) // 8)  # room for every pod submitted: 1 GPU each
    with tempfile.TemporaryDirectory(prefix="kai-bench-reqs-") as tmp:
        workdir = Path(tmp)
        with ControlPlane(workdir / "kube") as plane:
            store = harness.connect(plane.kubeconfig)
            harness.install(store, plane.kubeconfig, real=True)
            processes = harness.Processes(plane.kubeconfig, workdir)
            ledger = Ledger(workdir / "ledger.jsonl")
            try:
                start_fake_nodes(processes, nodes)
                cluster = harness.Cluster(store, processes, "bench-node")
                cluster.wait("nodes", lambda: len(store.list("nodes")[0]) >= nodes, timeout=300)
                start_through(processes, ["request_ledger.py", str(ledger.path)], "run", "--qps=1000", "--burst=1000")
                cluster.wait("default queues", lambda: len(store.list("queues")[0]) >= 2, timeout=120)
                time.sleep(3)
                wait_quiet(ledger, quiet)
                n = 0
                for kind in ("single", "gang8", *(("fill",) if fill else ())):
                    counts: Counter[str] = Counter()
                    again: Counter[str] = Counter()
                    pods = 0
                    for counted in [False] + [True] * rounds if kind != "fill" else [True]:
                        start = time.time()
                        names = submit(store, kind, n, plane.kubeconfig, fill)
                        n += 1
                        wait_running(store, names)
                        end = wait_quiet(ledger, quiet)
                        if not counted:
                            continue
                        window = [ln for ln in ledger.lines(start) if ln["t"] <= end]
                        pods += len(names)
                        again += redundant(window)
                        for line in window:
                            counts[label(line)] += 1
                            if show:
                                print(f"# {kind} {line['method']} {line['path']} {line['status']} {line['body'][:160]}")
                    out[kind] = (counts, pods, again)
            finally:
                processes.stop_all()
                store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="counted submissions of each kind")
    parser.add_argument("--quiet", type=float, default=3.0, help="seconds without a request that end a window")
    parser.add_argument("--show", action="store_true", help="print every ledger line counted")
    parser.add_argument(
        "--fill", type=int, default=0, help="also this many single pods at once (after a first fill not counted)"
    )
    args = parser.parse_args()
    result = measure(args.rounds, args.quiet, args.show, args.fill)
    kinds = list(result)
    rows = sorted({row for counts, _, _ in result.values() for row in counts})
    titles = {"single": "single pod", "gang8": "gang of 8", "fill": f"{args.fill} pods at once"}
    print(f"requests per bound pod, `kai run`, {args.rounds} submissions of each kind counted")
    print("| request | " + " | ".join(titles[k] for k in kinds) + " | KAI |")
    print("|---" * (len(kinds) + 2) + "|")
    kai_rows = dict(KAI)
    for row in rows:
        cells = [f"{result[k][0][row] / result[k][1]:.3g}" for k in kinds]
        print(f"| {row} | " + " | ".join(cells) + f" | {kai_rows.pop(row, '')} |")
    for row, count in kai_rows.items():
        print(f"| {row} | " + " | ".join("0" for _ in kinds) + f" | {count} |")
    print("| total | " + " | ".join(f"{sum(result[k][0].values()) / result[k][1]:.3g}" for k in kinds) + " | |")
    print(
        "| of which writes that changed nothing | "
        + " | ".join(f"{sum(result[k][2].values()) / result[k][1]:.3g}" for k in kinds)
        + " | 0 |"
    )
    for k in kinds:
        for row, count in sorted(result[k][2].items()):
            print(f"#   {k}: {count} × {row} wrote what the write before it to the object wrote")


if __name__ == "__main__":
    main()
