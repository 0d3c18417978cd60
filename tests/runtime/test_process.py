"""The components as one process against a mock API server over real HTTP (`kai run` without the CLI)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api import constants
from kai_scheduler.api.clock import SystemClock
from kai_scheduler.runtime import components as builders
from kai_scheduler.runtime.leader import LeaderConfig
from kai_scheduler.runtime.options import BinderOptions, GrouperOptions, ProcessOptions, SchedulerOptions
from kai_scheduler.runtime.process import Process, connect
from kai_scheduler.store.interface import JSON
from kai_scheduler.store.memory import MemoryStore
from tests.builders import node, queue
from tests.loopback import eventually, write_kubeconfig
from tests.loopback import free_port as closed_port
from tests.store.mock_apiserver import MockApiServer

FAST = 0.05


def pending_pod(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "labels": {constants.DEFAULT_QUEUE_LABEL_KEY: "q"}},
        "spec": {
            "schedulerName": constants.DEFAULT_SCHEDULER_NAME,
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
        "status": {"phase": "Pending"},
    }


def kubeconfig(tmp_path: Path, url: str) -> str:
    return write_kubeconfig(tmp_path / "kubeconfig", url)


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def process(config: str, *, leader_elect: bool = False) -> Process:
    options = ProcessOptions(
        kubeconfig=config,
        listen_address="127.0.0.1:0",
        leader_elect=leader_elect,
        leader_elect_namespace="kai-system",
        leader=LeaderConfig(lease_duration=3, renew_deadline=2, retry_period=0.1),
    )
    store = connect(options)
    registry = CollectorRegistry()
    clock = SystemClock()
    components = builders.build(
        builders.NAMES,
        store,
        clock,
        registry,
        scheduler_options=SchedulerOptions(flags={"schedule_period": FAST}),
        binder_options=BinderOptions(reconcile_period=FAST),
        grouper_options=GrouperOptions(reconcile_period=FAST),
    )
    return Process(components, store, options, registry, clock)


@pytest.fixture
def cluster() -> Iterator[MockApiServer]:
    memory = MemoryStore(SystemClock())
    memory.add_many([node("n1", gpus=0), queue("q"), pending_pod("p")])
    with MockApiServer(memory) as server:
        yield server


def test_run_binds_a_pending_pod_end_to_end(cluster: MockApiServer, tmp_path: Path) -> None:
    proc = process(kubeconfig(tmp_path, cluster.url), leader_elect=True)
    proc.start()
    try:
        bound = eventually(lambda: bool(cluster.memory.get("pods", "p", "team-a")["spec"].get("nodeName")))
        assert bound, "the pod was not bound"
        assert cluster.memory.get("pods", "p", "team-a")["spec"]["nodeName"] == "n1"
        assert cluster.memory.list("podgroups")[0]  # the podgrouper made its PodGroup
        assert eventually(lambda: get(proc.server.port, "/readyz")[0] == 200)
        assert get(proc.server.port, "/healthz") == (200, "ok")
        # The binder may bind before the scheduler has ended its cycle and recorded it, and the queue controller
        # (which shares the registry) writes on its own period: the metrics are looked at until they are there.
        wanted = [
            "kai_e2e_scheduling_latency_milliseconds",
            'kai_podgroups_scheduled_by_action{action="allocate"} 1.0',
            "kai_queue_info",
            # Which replica leads, per Lease, and what the process costs (as the Go components export them).
            'leader_election_master_status{name="kai-scheduler"} 1.0',
            'leader_election_master_status{name="kai-binder"} 1.0',
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
        ]
        scraped: list[tuple[int, str]] = []

        def metrics_in() -> bool:
            scraped[:] = [get(proc.server.port, "/metrics")]
            return scraped[0][0] == 200 and all(w in scraped[0][1] for w in wanted)

        assert eventually(metrics_in), [w for w in wanted if w not in scraped[0][1]]
        assert "_created" not in scraped[0][1], "the Python client's _created series, which KAI's metrics lack"
        holders = {
            lease["metadata"]["name"]: lease["spec"]["holderIdentity"]
            for lease in cluster.memory.list("leases", "kai-system")[0]
        }
        assert set(holders) == {"kai-scheduler", "kai-binder", "kai-podgrouper", "kai-controllers"}
        assert len(set(holders.values())) == 1 and "" not in holders.values()
    finally:
        proc.shutdown()
    leases = cluster.memory.list("leases", "kai-system")[0]
    assert {lease["spec"]["holderIdentity"] for lease in leases} == {""}  # released on shutdown


def test_run_lists_and_watches_each_resource_once(cluster: MockApiServer, tmp_path: Path) -> None:
    """Every component reads through the process's shared informers: one LIST and one watch request per resource,
    however many components read it (pods: the scheduler, the podgrouper, the binder and the PodGroup status)."""
    proc = process(kubeconfig(tmp_path, cluster.url))
    proc.start()
    try:
        assert eventually(lambda: bool(cluster.memory.get("pods", "p", "team-a")["spec"].get("nodeName")))
        assert eventually(lambda: all(runner.steps >= 2 for runner in proc.runners))
    finally:
        proc.shutdown()
    watches = Counter(r.path for r in cluster.watch_requests())
    lists = Counter(r.path for r in cluster.list_requests() if "labelSelector" not in r.query)
    assert watches["/api/v1/pods"] == 1, watches
    assert watches["/apis/scheduling.run.ai/v2alpha2/podgroups"] == 1, watches
    assert watches["/apis/scheduling.run.ai/v1alpha2/bindrequests"] == 1, watches
    assert set(watches.values()) == {1}, watches
    assert {path: lists[path] for path in watches} == dict.fromkeys(watches, 1)


def test_an_unreachable_api_server_is_not_ready_but_not_fatal(tmp_path: Path) -> None:
    proc = process(kubeconfig(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    proc.start()
    try:
        assert eventually(lambda: all(r.backoff.failures >= 1 for r in proc.runners))
        code, body = get(proc.server.port, "/readyz")
        assert code == 503
        assert all(name in body for name in builders.NAMES)
        assert get(proc.server.port, "/healthz")[0] == 200  # alive: retrying with backoff
    finally:
        proc.shutdown()
    assert all(not t.is_alive() for t in proc._threads)
