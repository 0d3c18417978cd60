"""The kube-apiserver killed and started again while binds are in flight (docs/components.md, "Failures and
recovery"): every watch comes back (the restarted server has forgotten their resourceVersions: 410 Gone, relist),
the leader leads again and scheduling resumes, nothing is bound twice, no BindRequest is left open, and the log
says the outage in two lines, not one per watch and attempt.

A cluster of this test's own (tests/realkube.py: the suite's shared cluster and its components must not lose their
server), with `kai run --leader-elect` and `kai fake-nodes` as processes. Real server only (the mock has no
process to kill); bare mode only (the restart does not depend on the controllers). Run by
`python -m tests.e2e.run_real -k apiserver_restart`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kai_scheduler.store.interface import JSON, StoreError
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import children, realkube
from tests.e2e import harness
from tests.loopback import free_port

NS = harness.NAMESPACE
GPUS = 4  # per fake node; two nodes

pytestmark = pytest.mark.skipif(
    not harness.real_server(), reason="needs a real kube-apiserver to kill and start again (tests/e2e/README.md)"
)


@pytest.fixture(scope="module")
def own() -> Iterator[realkube.Cluster]:
    yield from harness.own_cluster("the restart does not depend on the controllers")


def kai(kubeconfig: str, log: Path, *argv: str) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - the child owns it
    return children.spawn_kai(["-v", *argv, "--kubeconfig", kubeconfig], stdout=out, stderr=out)


def wait(what: str, condition: Callable[[], bool], timeout: float, log: Path | None = None) -> float:
    """Seconds it took; an AssertionError with the log's tail when it does not happen in time."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log else ""
            raise AssertionError(f"{what}: not within {timeout:g}s\n{tail}")
        time.sleep(0.2)
    return time.monotonic() - started


def answers(store: KubeStore) -> bool:
    try:
        store.list("namespaces")
    except StoreError:
        return False
    return True


# Seconds without a server: every process has requests in that window (the leases renew every 0.5 s).
DOWN = 3.0


def bound(store: KubeStore) -> list[JSON]:
    pods = store.list("pods", NS, "e2e=true")[0]
    return [p for p in pods if p["spec"].get("nodeName")]


def test_an_api_server_restart_mid_binding_loses_nothing_binds_nothing_twice_and_is_said_in_two_lines(
    own: realkube.Cluster, tmp_path: Path
) -> None:
    store = KubeStore.connect(own.kubeconfig, None, KubeOptions(qps=0))
    harness.install(store, own.kubeconfig, real=True)  # CRDs, namespace and its ServiceAccount, priority classes
    nodes = kai(own.kubeconfig, tmp_path / "fake-nodes.log", "fake-nodes", "--count", "2", "--gpus", str(GPUS))
    log = tmp_path / "run.log"
    run = kai(
        own.kubeconfig,
        log,
        *("run", "--listen-address", f"127.0.0.1:{free_port()}", "--plugin-server-port=0", "--leader-elect"),
        *("--leader-elect-namespace", NS, "--leader-elect-retry-period", "500ms"),
    )
    try:
        wait("the default queue", lambda: bool(store.list("queues")[0]), 60, log)
        first = [harness.pod(f"before-{i}", gpus=1) for i in range(GPUS)]
        for pod in first:
            store.create(pod)
        # Binds in flight: the first pod is bound, the others are being placed and bound when the server dies.
        wait("a first bind", lambda: len(bound(store)) >= 1, 60, log)
        realkube.restart_apiserver(own, DOWN)
        wait("the API server answering again", lambda: answers(store), 90)
        back = time.monotonic()
        later = [harness.pod(f"after-{i}", gpus=1) for i in range(GPUS)]
        for pod in later:
            store.create(pod)
        seconds = wait("every pod bound after the restart", lambda: len(bound(store)) == 2 * GPUS, 60, log)
        print(f"\nall {2 * GPUS} pods bound {seconds:.1f}s after the API server answered again")
        time.sleep(2)  # any late second bind or stray BindRequest would show by now
        requests = store.list("bindrequests", NS)[0]
        succeeded: dict[str, int] = {}
        for request in requests:
            if (request.get("status") or {}).get("phase") == "Succeeded":
                succeeded[request["spec"]["podName"]] = succeeded.get(request["spec"]["podName"], 0) + 1
        assert sorted(succeeded.values()) == [1] * (2 * GPUS), f"successful BindRequests per pod: {succeeded}"
        assert len(requests) == 2 * GPUS, f"BindRequests left over: {[r['metadata']['name'] for r in requests]}"
        used = harness.gpus_by_node(store.list("pods", NS)[0])
        assert all(v <= GPUS for v in used.values()), f"a node holds more GPUs than it has: {used}"
        assert time.monotonic() - back < 60
        text = log.read_text(errors="replace")
        down = [line for line in text.splitlines() if "API server unreachable" in line]
        up = [line for line in text.splitlines() if "API server reachable again" in line]
        assert len(down) == 1 and len(up) == 1, "\n".join(down + up)
        assert "Traceback" not in text, text[-3000:]
        broke = [
            line for line in text.splitlines() if line.partition(" ")[2].startswith("WARNING") and " broke (" in line
        ]
        assert broke == [], "watches said their reconnects at warning level:\n" + "\n".join(broke[:10])
    finally:
        for proc in (run, nodes):
            children.stop(proc)
        store.close()
