"""Faults the API server itself answers with (docs/reliability.md): a watch whose history etcd has compacted
(410 Gone: relist), API Priority and Fairness throttling (429 with Retry-After: back off, lose no write) and
bursts of 5xx answers and 429s, which a fault-injecting proxy in front of the server gives (faultproxy.py).

Run on a real server by `python -m tests.e2e.run_real -k fault_server` (tests/e2e/README.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import urllib3

from kai_scheduler.api import constants
from kai_scheduler.store.interface import JSON, StoreError
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import children, realkube
from tests.e2e import faultproxy, harness, invariants, serviceaccounts

NS = harness.NAMESPACE
real_only = pytest.mark.skipif(not harness.real_server(), reason="needs a real kube-apiserver (tests/e2e/README.md)")


# --- 410 Gone: etcd compaction ---


@pytest.fixture
def own() -> Iterator[realkube.Cluster]:
    """A cluster of the test's own (its API server restarted, its etcd compacted, its components' requests
    refused), stopped when the test ends."""
    if not harness.real_server():
        pytest.skip("needs a real kube-apiserver of its own (tests/e2e/README.md)")
    yield from harness.own_cluster("what the API server answers does not depend on the controllers")


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


def _flag(argv: list[str], name: str) -> str:
    for arg in argv:
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    index = argv.index(name)
    return argv[index + 1]


def without_watch_cache(cluster: realkube.Cluster, store: KubeStore) -> None:
    """Restart the API server with `--watch-cache=false`, so that a watch reads etcd's history: with the watch
    cache on, the server keeps at least 75 s of events of its own, past any compaction of etcd, and only a watch
    that far behind gets 410. The new pid goes where cluster.sh keeps it, so the cluster's teardown stops it."""
    pid_file = cluster.run / "apiserver.pid"
    pid = int(pid_file.read_text().strip())
    argv = _argv(pid)
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]:
            time.sleep(0.05)
    out = open(cluster.run / "logs" / "apiserver.log", "ab")  # noqa: SIM115 - the child owns it
    proc = children.spawn([*argv, "--watch-cache=false"], stdout=out, stderr=out)
    pid_file.write_text(f"{proc.pid}\n")
    _wait("the API server answering without its watch cache", lambda: _answers(store), 60)


def _answers(store: KubeStore) -> bool:
    try:
        store.list("namespaces")
    except StoreError:
        return False
    return True


def _wait(what: str, condition: Any, timeout: float, log: Path | None = None) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log else ""
            raise AssertionError(f"{what}: not within {timeout:g}s\n{tail}")
        time.sleep(0.2)
    return time.monotonic() - started


def etcd_url(cluster: realkube.Cluster) -> str:
    """etcd's client URL, as the API server was told it (cluster.sh puts etcd on a free loopback port)."""
    pid = int((cluster.run / "apiserver.pid").read_text().strip())
    return _flag(_argv(pid), "--etcd-servers").split(",")[0]


def compact(etcd: str) -> int:
    """Compact etcd's history up to its current revision (the v3 HTTP/JSON gateway); returns the revision."""
    http = urllib3.PoolManager()
    answer = http.request("POST", f"{etcd}/v3/kv/range", json={"key": "AA=="})  # the key "\0": any key will do
    revision = int(answer.json()["header"]["revision"])
    done = http.request("POST", f"{etcd}/v3/kv/compaction", json={"revision": str(revision), "physical": True})
    assert done.status == 200, done.data[:300]
    return revision


def connections(pid: int, port: str) -> list[str]:
    """The local ports of the established TCP connections of process `pid` to `port`."""
    listed = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"dport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    return [line.split()[2].rsplit(":", 1)[1] for line in listed.splitlines() if f"pid={pid}," in line]


def cut_connections(pid: int, server: str) -> tuple[int, int]:
    """Reset the TCP connections of process `pid` to `server` (host:port) from outside (`ss -K`, a socket kill as a
    network or load balancer reset does); returns how many there were and how many are left (a kernel without
    socket destruction leaves them all)."""
    port = server.rsplit(":", 1)[1]
    local = connections(pid, port)
    for source in local:
        subprocess.run(
            ["ss", "-K", "state", "established", f"sport = :{source}", f"dport = :{port}"],
            capture_output=True,
            check=True,
        )
    return len(local), len(connections(pid, port))


def _socket_kill_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "resetting a process's connections (ss -K) needs root"
    try:
        subprocess.run(["ss", "-V"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "no ss (iproute2) to reset a process's connections"
    return None


def bound(store: KubeStore, prefix: str) -> list[JSON]:
    pods = store.list("pods", NS, "e2e=true")[0]
    return [p for p in pods if p["spec"].get("nodeName") and p["metadata"]["name"].startswith(prefix)]


GPUS = 4  # per fake node; two nodes


def test_a_watch_behind_a_compaction_relists_and_neither_loses_nor_replays_a_decision(
    own: realkube.Cluster, tmp_path: Path
) -> None:
    """`kai run` stopped (SIGSTOP) with its watches open; meanwhile two bound pods are deleted, four pods are
    submitted, etcd is compacted to its current revision and the stopped process's connections are reset. Once
    resumed, each watch reconnects from its old resourceVersion, gets 410 Gone and the component relists: the
    deletions it never saw as events free their GPUs, the four new pods are placed (two of them only there), no
    pod bound before is bound again, and the log says the relists, without a traceback."""
    why = _socket_kill_unavailable()
    if why:
        pytest.skip(why)
    store = KubeStore.connect(own.kubeconfig, None, KubeOptions(qps=0))
    processes = harness.Processes(own.kubeconfig, tmp_path)
    cluster = harness.Cluster(store, processes, "kai-fake-node")
    try:
        without_watch_cache(own, store)
        harness.install(store, own.kubeconfig, real=True)
        reservations = harness.RESERVATION_NAMESPACE  # the install's: the binder's reservation pods go there
        realkube.kubectl(own.kubeconfig, "create", "namespace", reservations, check=True)
        realkube.kubectl(own.kubeconfig, "create", "serviceaccount", "default", "-n", reservations, check=True)
        # the reservation pods run as the account the install makes (the server refuses them without it)
        account = constants.RESERVATION_SERVICE_ACCOUNT
        realkube.kubectl(own.kubeconfig, "create", "serviceaccount", account, "-n", reservations, check=True)
        processes.start("fake-nodes", "fake-nodes", "--count", "2", "--gpus", str(GPUS))
        processes.start_component("run")
        log = tmp_path / "run.log"
        _wait("the default queue", lambda: bool(store.list("queues")[0]), 60, log)
        for i in range(2 * GPUS):  # every GPU taken
            store.create(harness.pod(f"before-{i}", gpus=1))
        _wait("the first pods bound", lambda: len(bound(store, "before-")) == 2 * GPUS, 60, log)
        decided = {r["metadata"]["name"] for r in store.list("bindrequests", NS)[0]}

        run = processes.running["run"]
        run.send_signal(signal.SIGSTOP)
        try:
            for i in range(2):
                store.delete("pods", f"before-{i}", NS, grace_period_seconds=0)
            for i in range(4):
                store.create(harness.pod(f"during-{i}", gpus=0.5))
            # Two writes of a kind no component watches after the last pod event: the compaction then removes the
            # revision after that event too, so the pod watch cannot resume where it stopped even when the server
            # wrote it the gap's events before its connection was reset (one stream reads them all).
            for i in range(2):
                store.create(
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"gap-{i}", "namespace": NS}}
                )
            revision = compact(etcd_url(own))
            server = str(store.transport.api_client.configuration.host).split("//", 1)[1]
            cut, left = cut_connections(run.pid, server)
        finally:
            run.send_signal(signal.SIGCONT)
        assert cut > 0, "kai run had no connection to the API server to reset"
        if left:
            pytest.skip(f"ss -K reset none of {cut} connections: this kernel cannot destroy sockets")

        seconds = _wait("the pods of the gap placed", lambda: len(bound(store, "during-")) == 4, 45, log)
        print(f"\ncompacted at revision {revision}, {cut} connections reset; the gap's 4 pods bound {seconds:.1f}s on")
        invariants.settled(cluster)
        requests = store.list("bindrequests", NS)[0]
        by_pod: dict[str, int] = {}
        for request in requests:
            by_pod[request["spec"]["podName"]] = by_pod.get(request["spec"]["podName"], 0) + 1
        again = {pod: n for pod, n in by_pod.items() if n > 1}
        assert not again, f"pods decided more than once: {again}"
        assert decided <= {r["metadata"]["name"] for r in requests}, "a BindRequest of before the gap went"
        text = log.read_text(errors="replace")
        relisted = [line for line in text.splitlines() if "watch expired, relisting" in line]
        assert any("pods" in line for line in relisted), "no relist of the pods:\n" + text[-3000:]
        expired = [line for line in text.splitlines() if " ended: " in line and "too old" in line]
        assert expired, "no watch was told its resourceVersion was compacted:\n" + text[-3000:]
        assert "Traceback" not in text, text[-3000:]
    finally:
        processes.stop_all()
        store.close()


# --- 429: API Priority and Fairness ---

LEVEL = "e2e-throttle"  # the PriorityLevelConfiguration and FlowSchema of the components' accounts
NOISY = "e2e-noisy"  # a ServiceAccount in the same priority level that holds its seats
HOLDERS = 6  # requests the noisy account keeps waiting on the server (the level has 3 seats)
THROTTLED_FOR = 10.0  # seconds the level stays after the pods are submitted
FILL = 8  # one-GPU pods submitted while throttled


def priority_level_objects() -> str:
    """A priority level with a nominal share of 1 (3 seats of the server's 600 beside the default levels'), no
    borrowing and no queue (Reject: a request finding no free seat gets 429 at once), and a FlowSchema that puts the
    four components' ServiceAccounts and the noisy one in it, before every default schema but `exempt`."""
    accounts = [("kai-scheduler", f"kai-{c}") for c in harness.COMPONENTS] + [(NS, NOISY)]
    subjects = ", ".join(
        f"{{kind: ServiceAccount, serviceAccount: {{name: {n}, namespace: {ns}}}}}" for ns, n in accounts
    )
    return f"""
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {LEVEL}, labels: {{e2e: "true"}}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {{type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {LEVEL}, labels: {{e2e: "true"}}}}
spec:
  priorityLevelConfiguration: {{name: {LEVEL}}}
  matchingPrecedence: 10
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{subjects}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}}]
    nonResourceRules: [{{verbs: ["*"], nonResourceURLs: ["*"]}}]
"""


class SeatHolders:
    """Threads of the noisy account that each keep one request waiting on the server: a LIST at a resourceVersion
    far ahead of the server's, which the API server holds up to 3 s for its cache to catch up (then 504), so while
    they run the level's seats are taken and the components' requests in it are rejected."""

    def __init__(self, kubeconfig: str, count: int) -> None:
        self.store = KubeStore.connect(kubeconfig, None, KubeOptions(qps=0, max_retries=0))
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._hold, daemon=True) for _ in range(count)]
        for thread in self.threads:
            thread.start()

    def _hold(self) -> None:
        query = [("resourceVersion", "999999999"), ("resourceVersionMatch", "NotOlderThan"), ("limit", "1")]
        while not self.stop.is_set():
            try:
                self.store.transport.call("GET", f"/api/v1/namespaces/{NS}/configmaps", query=query, what="hold")
            except StoreError as err:
                if err.code == 429:  # a seat was free a moment ago and taken again: try again shortly
                    self.stop.wait(0.05)

    def close(self) -> None:
        self.stop.set()
        self.store.cancel()
        for thread in self.threads:
            thread.join(5)
        self.store.close()


def throttled(kubeconfig: str) -> bool:
    """Whether a request of the noisy account is rejected now (the level exists and its seats are held)."""
    with KubeStore.connect(kubeconfig, None, KubeOptions(qps=0, max_retries=0)) as store:
        try:
            store.list("configmaps", NS)
        except StoreError as err:
            return err.code == 429
    return False


def serving_metrics(cluster: harness.Cluster) -> bool:
    try:
        rejections(cluster)
    except urllib3.exceptions.HTTPError:
        return False
    return True


def rejections(cluster: harness.Cluster) -> dict[str, int]:
    """429 answers each component has had so far (its `rest_client_requests_total{code="429"}`)."""
    http = urllib3.PoolManager(retries=False)
    out = {}
    for component in harness.COMPONENTS:
        text = http.request("GET", f"http://127.0.0.1:{cluster.processes.ports[component]}/metrics").data.decode()
        out[component] = sum(
            int(float(line.rsplit(" ", 1)[1]))
            for line in text.splitlines()
            if line.startswith("rest_client_requests_total{") and 'code="429"' in line
        )
    return out


@real_only
def test_priority_and_fairness_429s_are_waited_out_and_lose_no_write(clean: harness.Cluster, tmp_path: Path) -> None:
    """The components' ServiceAccounts put in a priority level of 3 seats that a noisy account in it keeps full:
    their requests get 429 with the Retry-After of API Priority and Fairness while 8 pods are submitted. They wait
    what the server asks (no busy loop: a few rejections per component, each logged retry delayed by the server's
    Retry-After), and once the FlowSchema is deleted every pod is bound, once, within capacity."""
    kubeconfig = harness.kubeconfig_from_env()
    assert kubeconfig is not None
    cluster = clean
    serviceaccounts.bind_account(
        kubeconfig, NOISY, NS, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    )
    noisy = serviceaccounts.token_kubeconfig(kubeconfig, NOISY, NS, tmp_path / "noisy")
    cluster.wait("the components serving their metrics", lambda: serving_metrics(cluster), timeout=30)
    logs = {c: len(cluster.processes.log_of(c)) for c in harness.COMPONENTS}
    before = rejections(cluster)
    holders = SeatHolders(noisy, HOLDERS)
    applied = False
    try:
        realkube.kubectl(kubeconfig, "apply", "-f", "-", stdin=priority_level_objects(), check=True)
        applied = True
        cluster.wait("the priority level rejecting requests", lambda: throttled(noisy), timeout=20)
        started = time.monotonic()
        for i in range(FILL):
            cluster.create(harness.pod(f"apf-{i}", gpus=1))
        time.sleep(THROTTLED_FOR)
        realkube.kubectl(kubeconfig, "delete", "flowschema,prioritylevelconfiguration", LEVEL, check=True)
        applied = False
        window = time.monotonic() - started
        lifted = time.monotonic()
        cluster.wait("every pod bound once the FlowSchema is gone", lambda: len(cluster.bound("e2e=true")) == FILL, 45)
        recovered = time.monotonic() - lifted
    finally:
        holders.close()
        if applied:
            realkube.kubectl(kubeconfig, "delete", "flowschema,prioritylevelconfiguration", LEVEL)
    invariants.settled(cluster)
    after = rejections(cluster)
    got = {c: after[c] - before[c] for c in harness.COMPONENTS}
    print(f"\n429s per component over {window:.1f}s throttled: {got}; all {FILL} bound {recovered:.1f}s after lifting")
    assert sum(got.values()) > 0, "no component was throttled: the priority level did not hold"
    for component, start in logs.items():
        text = cluster.processes.log_of(component)[start:]
        assert "Traceback" not in text, text[-3000:]
        retries = _retries_of_429s(text)
        delays = [delay for attempts in retries.values() for _, delay in attempts]
        assert all(d >= 1.0 for d in delays), f"{component} retried a 429 sooner than a second: {delays}"
        for what, attempts in retries.items():  # each attempt after the delay the one before it was told
            for (at, delay), (next_at, _) in itertools.pairwise(attempts):
                assert next_at - at >= delay - 0.05, f"{component}: {what} tried again too soon: {attempts}"
        # Several requests of a component may be throttled at once (the podgrouper groups the pods it found
        # together); each waited as asked is rejected at most once a second.
        count = got[component]
        requests = max(1, len(retries))
        assert count <= window * requests, f"{component} had {count} 429s of {requests} requests in {window:.1f}s"


_RETRY_LINE = re.compile(r"^(\S+)Z INFO \S+: (.+): HTTP 429, retrying in ([0-9.]+)s as the server asks", re.M)


def _retries_of_429s(text: str) -> dict[str, list[tuple[float, float]]]:
    """Each request's logged 429 retries: (when, the delay it was told), by the request's name."""
    out: dict[str, list[tuple[float, float]]] = {}
    for when, what, delay in _RETRY_LINE.findall(text):
        at = dt.datetime.fromisoformat(when).timestamp()
        out.setdefault(what, []).append((at, float(delay)))
    return out


# --- 5xx bursts and 429s (a fault-injecting proxy in front of the real server) ---

WRITES, LISTS, WATCHES = faultproxy.WRITES, frozenset({"list"}), frozenset({"watch"})
RETRY_AFTER = 2  # seconds: longer than the components' own first backoffs (0.5 s, 1 s), so waiting it shows
PROCESSES = (*harness.COMPONENTS, "fake-nodes")
Wanted = tuple[str, str, str]  # a client, a verb and a regular expression of the path: a refusal to see


@dataclass(frozen=True, slots=True)
class Phase:
    """What the proxy answers for at least `seconds`, and until it has refused each request of `until` once
    (however long a loaded machine takes to get there, within PHASE_LIMIT)."""

    name: str
    seconds: float
    faults: tuple[faultproxy.Fault, ...]
    cut_watches: bool = False  # as it starts
    until: tuple[Wanted, ...] = ()


# The writes first, while the watches bring the pods in (all refused; then each refused once and let through
# when retried, so the pods go on through every stage and each stage meets refusals); then the lists the
# components make once every watch is told its resourceVersion is too old.
PHASES = (
    Phase("500 on every write", 4.0, (faultproxy.Fault(500, WRITES),)),
    Phase(
        "429 with Retry-After on each write once",
        4.0,
        (faultproxy.Fault(429, WRITES, RETRY_AFTER, every=2),),
        until=(
            ("podgrouper", "create", r"/podgroups$"),
            ("scheduler", "create", r"/bindrequests$"),
            ("binder", "create", r"/binding$"),
            ("controllers", "patch", r"/podgroups/[^/]+/status$"),
            ("fake-nodes", "patch", r"/pods/[^/]+/status$"),
        ),
    ),
    Phase(
        "503 on lists",
        2.0,
        (faultproxy.Fault(503, LISTS), faultproxy.Fault(410, WATCHES)),
        cut_watches=True,
        until=tuple((p, "list", ".") for p in PROCESSES),
    ),
    Phase(
        "429 with Retry-After on lists",
        4.0,
        (faultproxy.Fault(429, LISTS, RETRY_AFTER), faultproxy.Fault(410, WATCHES)),
        until=tuple((p, "list", ".") for p in PROCESSES),
    ),
)
PHASE_LIMIT = 30.0
STREAM = 24  # one-GPU pods submitted, one every PACE seconds from LEAD seconds before the first phase
PACE = 0.3
LEAD = 2.0
REFUSED_PER_SECOND = 30  # at most, all five processes together: a retry without backoff makes hundreds
MOST_REFUSALS = 8  # of one request, over the whole burst


def refused(seen: list[faultproxy.Seen], wanted: Wanted) -> bool:
    client, verb, path = wanted
    return any(r.injected and r.client == client and r.verb == verb and re.search(path, r.target) for r in seen)


def met(proxy: faultproxy.FaultProxy, since: float, phase: Phase) -> Callable[[], bool]:
    """Whether the proxy has refused each request the phase waits for since it began."""
    return lambda: all(refused(proxy.requests(since), wanted) for wanted in phase.until)


def sent_before_retry_after(seen: list[faultproxy.Seen]) -> list[str]:
    """The requests sent again sooner than the Retry-After the proxy answered them with."""
    last: dict[tuple[str, str, str, str], faultproxy.Seen] = {}
    early = []
    for request in seen:
        before = last.get(request.key)
        gap = request.at - before.at if before is not None else 0.0
        if before is not None and before.retry_after is not None and gap < before.retry_after - 0.05:
            early.append(f"{request.client} {request.method} {request.target} again after {gap:.2f}s")
        last[request.key] = request
    return early


def most_refused(seen: list[faultproxy.Seen]) -> list[tuple[int, str]]:
    """How many times each request was refused (the same client, method, target and body), most first."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for request in seen:
        if request.injected and request.status != 410:  # a watch told 410 is not retried but relisted
            counts[request.key] = counts.get(request.key, 0) + 1
    return sorted(((n, " ".join(k[:3])) for k, n in counts.items()), reverse=True)


def kinds(seen: list[faultproxy.Seen]) -> str:
    """The requests counted by answer, client, verb and path (names and namespaces left out), most first."""
    counts: dict[str, int] = {}
    for request in seen:
        path = re.sub(r"/namespaces/[^/]+/", "/namespaces/*/", request.target.split("?")[0])
        path = re.sub(r"/(pods|bindrequests|podgroups|queues|nodes|leases)/[^/]+", r"/\1/*", path)
        key = f"{request.status} {request.client} {request.verb} {path}"
        counts[key] = counts.get(key, 0) + 1
    return "\n".join(f"{n:4d} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def test_bursts_of_5xx_and_429s_are_backed_off_and_lose_no_write(own: realkube.Cluster, tmp_path: Path) -> None:
    """The four components and the fake nodes reach a real kube-apiserver through a proxy (faultproxy.py) that,
    while 24 pods are submitted, refuses their writes (500 for 4 s; then 429 with Retry-After 2 s on the first
    attempt of each write until it has refused a PodGroup create, a BindRequest create, a bind and two status
    patches) and then, their watches cut and told 410, their lists (503, then 429 with Retry-After, until it has
    refused a list of each process). No request is sent again before the Retry-After it was given; none is
    refused more than 8 times and all refusals together stay under 30 a second (no busy loop); once the proxy
    forwards again every pod is bound once and Running, with the invariants, and no log has a traceback."""
    store = KubeStore.connect(own.kubeconfig, None, KubeOptions(qps=0))  # the test's own requests go direct
    proxy = faultproxy.FaultProxy(own.kubeconfig)
    processes = harness.Processes(
        proxy.kubeconfig("fake-nodes", tmp_path),
        tmp_path,
        kubeconfigs={c: proxy.kubeconfig(c, tmp_path) for c in harness.COMPONENTS},
    )
    cluster = harness.Cluster(store, processes, harness.NODE_PREFIX)

    def submit() -> None:
        for i in range(STREAM):
            cluster.create(harness.pod(f"burst-{i}", gpus=1))
            time.sleep(PACE)

    submitter = threading.Thread(target=submit, daemon=True)
    spans: list[tuple[str, float, float]] = []
    try:
        harness.install(store, own.kubeconfig, real=True)
        processes.start_all()
        cluster.wait("4 fake nodes", lambda: len(store.list("nodes")[0]) == 4, timeout=60)
        cluster.wait("the default queue", lambda: bool(store.list("queues")[0]), timeout=60)
        submitter.start()
        time.sleep(LEAD)
        for phase in PHASES:
            started = time.monotonic()
            proxy.inject(*phase.faults)
            if phase.cut_watches:
                proxy.end_watches()
            cluster.wait(f"{phase.name}: each of {phase.until} refused", met(proxy, started, phase), PHASE_LIMIT)
            time.sleep(max(0.0, started + phase.seconds - time.monotonic()))
            spans.append((phase.name, started, time.monotonic()))
        proxy.forward()
        lifted = time.monotonic()
        submitter.join(30)
        cluster.wait("every pod bound after the burst", lambda: len(cluster.bound("e2e=true")) == STREAM, 45)
        recovered = time.monotonic() - lifted
        cluster.wait(
            "every pod Running (the fake kubelet's status write)",
            lambda: all((p.get("status") or {}).get("phase") == "Running" for p in cluster.pods("e2e=true")),
            30,
        )
        invariants.settled(cluster)
    finally:
        proxy.forward()
        processes.stop_all()
        proxy.close()
        store.close()
    burst = proxy.requests(spans[0][1], lifted)
    for name, since, until in spans:
        seen = proxy.requests(since, until)
        print(f"\n{name}, {until - since:.1f}s: {sum(r.injected for r in seen)} of {len(seen)} requests refused")
    print(f"all {STREAM} pods bound {recovered:.1f}s after the proxy forwarded again")
    early = sent_before_retry_after(proxy.requests())
    assert not early, "sent again before the Retry-After:\n" + "\n".join(early[:20])
    most = most_refused(burst)
    print(f"refused most often: {most[0][0]} times, {most[0][1]}")
    # Measured: 4 or 5 (the scheduler's BindRequest, once a cycle through the 500s and once more at its 429);
    # before its cycles waited their period after refused writes, 9 to 15 in the 500s alone.
    assert most[0][0] <= MOST_REFUSALS, "refused again and again:\n" + "\n".join(f"{n:3d} {w}" for n, w in most[:20])
    count, seconds = sum(r.injected for r in burst), lifted - spans[0][1]
    assert count <= REFUSED_PER_SECOND * seconds, f"{count} refused in {seconds:.1f}s: a busy loop\n{kinds(burst)}"
    for name in PROCESSES:
        text = processes.log_of(name)
        assert "Traceback" not in text, f"{name}: {text[-3000:]}"
