"""`kai run` stops within the bound when the real kube-apiserver stops answering (docs/components.md, "Stopping").

The API server of a cluster of this test's own (tests/realkube.py: the suite's shared cluster and its components
must not freeze) is stopped with SIGSTOP while `kai run` leads and runs; `kai run` gets SIGTERM and must exit 0
within the bound, saying what it abandoned. The API server is resumed (SIGCONT) in a `finally`; the Leases
`kai run` could not release (the server was stopped) expire, and the next `kai run` leads. On a real cluster
only (the mock has its own test, tests/cli/test_stop_bound.py); run by
`python -m tests.e2e.run_real -k stop_bound`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kai_scheduler.runtime import process as runtime
from kai_scheduler.store.kube import KubeOptions, KubeStore
from tests import children, realkube
from tests.e2e import harness
from tests.loopback import free_port

NAMESPACE = "stop-bound"
GAVE_UP = "shutdown: gave up waiting for the API server"

pytestmark = pytest.mark.skipif(
    not harness.real_server(), reason="needs a real kube-apiserver to stop with SIGSTOP (tests/e2e/README.md)"
)


@pytest.fixture(scope="module")
def own() -> Iterator[realkube.Cluster]:
    yield from harness.own_cluster("the stop does not depend on the controllers")


def spawn(kubeconfig: str, port: int) -> subprocess.Popen[str]:
    argv = [
        *("run", "--kubeconfig", kubeconfig, "--listen-address", f"127.0.0.1:{port}", "--plugin-server-port=0"),
        *("--leader-elect", "--leader-elect-namespace", NAMESPACE, "--leader-elect-retry-period", "200ms"),
    ]
    return children.spawn_kai(["-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return int(answer.status) == 200
    except (urllib.error.HTTPError, OSError):
        return False


def wait(what: str, condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s"
        time.sleep(0.1)


def test_kai_run_exits_within_the_bound_while_the_api_server_is_stopped(own: realkube.Cluster) -> None:
    store = KubeStore.connect(own.kubeconfig, None, KubeOptions(qps=0))
    harness.install(store, own.kubeconfig, real=True)  # the CRDs, established, and the priority classes
    realkube.kubectl(own.kubeconfig, "create", "namespace", NAMESPACE, check=True)
    apiserver = int((own.run / "apiserver.pid").read_text().strip())
    port = free_port()
    proc = spawn(own.kubeconfig, port)
    stopped = False
    try:
        wait("kai run ready", lambda: proc.poll() is not None or ready(port), 90)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        wait("kai run leading", lambda: len(holders(store)) == 4 and "" not in holders(store).values(), 30)
        before = holders(store)
        os.kill(apiserver, signal.SIGSTOP)
        stopped = True
        time.sleep(1.0)  # the lease renewals (every 200 ms) and the loops' requests are now unanswered
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=runtime.SHUTDOWN_BOUND + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            limit = runtime.SHUTDOWN_BOUND + 10
            raise AssertionError(f"kai run still running {limit:g}s after SIGTERM: {err[-3000:]}") from None
        seconds = time.monotonic() - started
        assert proc.returncode == 0, err[-3000:]
        assert seconds <= runtime.SHUTDOWN_BOUND, f"{seconds:.1f}s: {err[-3000:]}"
        assert GAVE_UP in err, err[-3000:]
    finally:
        if stopped:
            os.kill(apiserver, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # The server answers again: the Leases it could not release expire and the next process leads.
    again = spawn(own.kubeconfig, free_port())
    try:
        wait(
            "the next process leading", lambda: all(holders(store).get(n) not in ("", h) for n, h in before.items()), 60
        )
    finally:
        children.stop(again)
        store.close()


def holders(store: KubeStore) -> dict[str, str]:
    leases = store.list("leases", NAMESPACE)[0]
    return {o["metadata"]["name"]: str(o["spec"].get("holderIdentity") or "") for o in leases}
