"""`/get-snapshot` of the scheduler component over a mock API server, and the round trip: a cluster's objects →
the live scheduler → its snapshot.zip → `kai schedule snapshot.zip` decides as `kai schedule` on the objects;
and the plugin server's other path, `/get-job-order` (the reflectjoborder plugin)."""

from __future__ import annotations

import json
import logging
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler import scenario as scenarios
from kai_scheduler.api.clock import SystemClock
from kai_scheduler.cli import main
from kai_scheduler.runtime import components as builders
from kai_scheduler.runtime.options import ProcessOptions, SchedulerOptions
from kai_scheduler.runtime.process import Process, connect
from kai_scheduler.store.memory import MemoryStore
from tests.loopback import eventually, free_port, write_kubeconfig
from tests.store.mock_apiserver import MockApiServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


def fetch(port: int, path: str = "/get-snapshot") -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)
    except OSError:
        return 0, b"", {}


@pytest.fixture
def read_only_cluster() -> Iterator[MockApiServer]:
    """The example's objects on a mock API server that refuses every write: the scheduler's cycles decide but
    change nothing, so its cache (and the snapshot) stays the cluster as given."""
    memory = MemoryStore(SystemClock())
    memory.add_many(scenarios.load(EXAMPLE).objects)
    with MockApiServer(memory) as server:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            server.refuse(method, ".", 403, "Forbidden", "this test's cluster is read only")
        yield server


def scheduler_process(tmp_path: Path, url: str, plugin_port: int, conf: str | None = None) -> Process:
    options = ProcessOptions(kubeconfig=write_kubeconfig(tmp_path / "kubeconfig", url), listen_address="127.0.0.1:0")
    store = connect(options)
    components = builders.build(
        ["scheduler"],
        store,
        SystemClock(),
        CollectorRegistry(),
        scheduler_options=SchedulerOptions(
            scheduler_conf=conf, flags={"schedule_period": 0.05}, plugin_server_port=plugin_port
        ),
    )
    return Process(components, store, options, CollectorRegistry(), SystemClock())


def schedule_json(path: Path | str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schedule", str(path), "-o", "json", "--no-progress"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def decisions(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "tasks": {key: (t["status"], t["node"]) for key, t in result["tasks"].items()},
        "evictions": result["evictions"],
        "unplaced": result["unplaced"],
        "queues": result["queues"],
    }


def test_the_snapshot_of_the_live_scheduler_replays_to_the_same_decisions(
    read_only_cluster: MockApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    proc = scheduler_process(tmp_path, read_only_cluster.url, port)
    proc.start()
    try:
        answers: list[tuple[int, bytes, dict[str, str]]] = []
        assert eventually(lambda: answers.append(fetch(port)) or answers[-1][0] == 200), answers[-1][:2]
    finally:
        proc.shutdown()
        proc.store.close()
    _, data, headers = answers[-1]
    assert headers["Content-Type"] == "application/zip"
    assert headers["Content-Disposition"] == "attachment; filename=snapshot.zip"
    zipped = tmp_path / "snapshot.zip"
    zipped.write_bytes(data)
    replayed, original = schedule_json(zipped, capsys), schedule_json(EXAMPLE, capsys)
    assert decisions(replayed) == decisions(original)
    assert replayed["evictionCount"] == 2 and replayed["binds"] == 2, "the example's reclaim was not replayed"
    # KAI's tool name and flag, the same replay.
    capsys.readouterr()
    assert main(["snapshot-tool", "--filename", str(zipped), "-o", "json", "--no-progress"]) == 0
    assert decisions(json.loads(capsys.readouterr().out)) == decisions(original)
    # `kai explain` reads it as it reads a manifest.
    assert main(["explain", "notebook", str(zipped), "-o", "json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["job"] == "default/notebook" and explained["state"] == "pending"


def test_without_the_snapshot_plugin_the_path_is_404_and_port_0_serves_nothing(
    read_only_cluster: MockApiServer, tmp_path: Path
) -> None:
    conf = tmp_path / "config.yaml"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: proportion\n")
    port = free_port()
    proc = scheduler_process(tmp_path, read_only_cluster.url, port, str(conf))
    proc.start()
    try:
        answers: list[tuple[int, bytes, dict[str, str]]] = []
        assert eventually(lambda: answers.append(fetch(port)) or answers[-1][0] == 404), answers[-1][:2]
        assert b"the snapshot plugin is not in the scheduler configuration" in answers[-1][1]
        assert fetch(port, "/other")[0] == 404
    finally:
        proc.shutdown()
        proc.store.close()
    off = scheduler_process(tmp_path, read_only_cluster.url, 0)
    assert off.plugin_servers == []


def test_a_taken_port_is_one_error_line_and_the_scheduler_goes_on(
    read_only_cluster: MockApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = scheduler_process(tmp_path, read_only_cluster.url, port)
        with caplog.at_level(logging.ERROR):
            proc.start()
        try:
            assert eventually(lambda: proc.runners[0].steps > 0), "the scheduler did not run"
        finally:
            proc.shutdown()
            proc.store.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith(f"--plugin-server-port: cannot listen on port {port}"), errors


def test_the_reflectjoborder_plugin_serves_the_job_order(read_only_cluster: MockApiServer, tmp_path: Path) -> None:
    conf = tmp_path / "config.yaml"
    conf.write_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: proportion\n  - name: priority\n"
        "  - name: reflectjoborder\n"
    )
    port = free_port()
    proc = scheduler_process(tmp_path, read_only_cluster.url, port, str(conf))
    proc.start()
    try:
        answers: list[tuple[int, bytes, dict[str, str]]] = []
        assert eventually(lambda: answers.append(fetch(port, "/get-job-order")) or answers[-1][0] == 200), answers[-1]
        assert fetch(port)[0] == 404  # the snapshot plugin is not configured
    finally:
        proc.shutdown()
        proc.store.close()
    _, body, headers = answers[-1]
    assert headers["Content-Type"] == "application/json"
    order = json.loads(body)
    # the example's pending jobs; the running train-big and infer are not listed
    assert {e["id"] for e in order["global_order"]} == {"pretrain", "eval", "notebook"}
    assert order["queue_order"].keys() == {"team-a", "team-b"}
    assert sorted(order["global_order"], key=str) == sorted(
        (e for jobs in order["queue_order"].values() for e in jobs), key=str
    )


def test_without_the_reflectjoborder_plugin_the_job_order_is_404(
    read_only_cluster: MockApiServer, tmp_path: Path
) -> None:
    port = free_port()
    proc = scheduler_process(tmp_path, read_only_cluster.url, port)  # KAI's fallback plugins: not among them
    proc.start()
    try:
        answers: list[tuple[int, bytes, dict[str, str]]] = []
        assert eventually(lambda: answers.append(fetch(port, "/get-job-order")) or answers[-1][0] == 404), answers[-1]
        assert b"the reflectjoborder plugin is not in the scheduler configuration" in answers[-1][1]
    finally:
        proc.shutdown()
        proc.store.close()


def test_before_its_first_cycle_the_job_order_is_not_ready(read_only_cluster: MockApiServer, tmp_path: Path) -> None:
    conf = tmp_path / "config.yaml"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: reflectjoborder\n")
    proc = scheduler_process(tmp_path, read_only_cluster.url, free_port(), str(conf))  # not started: no cycle
    try:
        reply = proc.plugin_servers[0].endpoints["/get-job-order"]()
        assert (reply.code, reply.body) == (503, b"Job order data not ready\n")
    finally:
        proc.store.close()
