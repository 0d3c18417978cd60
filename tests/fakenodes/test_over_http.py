"""The fake kubelet and the `kai fake-nodes` command against a mock kube-apiserver over loopback HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.cli import main
from kai_scheduler.fakenodes import fleet
from kai_scheduler.fakenodes.heartbeat import Heartbeat
from kai_scheduler.fakenodes.kubelet import FakeKubelet
from kai_scheduler.fakenodes.lifecycle import ANNOTATION_FAKE_DURATION
from kai_scheduler.fakenodes.nodes import LABEL_FAKE_NODE, FleetSpec, build_nodes
from kai_scheduler.store.interface import JSON
from kai_scheduler.store.kube import KubeOptions, KubeStore
from kai_scheduler.store.memory import MemoryStore
from tests.loopback import write_kubeconfig
from tests.store.mock_apiserver import MockApiServer

NOW = parse_time("2026-01-01T00:00:00Z")
MAX_STEPS = 100  # each waits at most 0.1 s for events: a bound, not a timing assertion


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def server(clock: ManualClock) -> Iterator[MockApiServer]:
    with MockApiServer(MemoryStore(clock)) as mock:
        yield mock


@pytest.fixture
def store(server: MockApiServer) -> Iterator[KubeStore]:
    options = KubeOptions(watch_backoff_initial=0.01, watch_backoff_max=0.1)
    with KubeStore(ApiClient(Configuration(host=server.url)), options) as kube:
        yield kube


def step_until(kubelet: FakeKubelet, done: Callable[[], bool]) -> None:
    for _ in range(MAX_STEPS):
        kubelet.step(0.1)
        if done():
            return
    pytest.fail("the fake kubelet did not get there")


def phase(memory: MemoryStore, name: str) -> str | None:
    pods = {p["metadata"]["name"]: p for p in memory.list("pods")[0]}
    return pods[name]["status"].get("phase") if name in pods else None


def test_a_pod_bound_to_a_fake_node_runs_then_succeeds(
    server: MockApiServer, store: KubeStore, clock: ManualClock
) -> None:
    played = fleet.ensure(store, build_nodes(FleetSpec(count=2), clock.now())).played
    memory = server.memory
    assert [n["metadata"]["name"] for n in memory.list("nodes")[0]] == played
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team", "annotations": {ANNOTATION_FAKE_DURATION: "30s"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    memory.create(pod)
    kubelet = FakeKubelet(store, clock, played, Heartbeat(store, clock, played))
    memory.bind("team", "p", played[1])
    step_until(kubelet, lambda: phase(memory, "p") == "Running")
    assert memory.get("leases", played[0], "kube-node-lease")["spec"]["holderIdentity"] == played[0]
    clock.advance(30)
    step_until(kubelet, lambda: phase(memory, "p") == "Succeeded")
    assert kubelet.stats.writes == 2


def test_a_deleted_pod_goes_over_http(server: MockApiServer, store: KubeStore, clock: ManualClock) -> None:
    played = fleet.ensure(store, build_nodes(FleetSpec(count=1), clock.now())).played
    memory = server.memory
    memory.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "team"},
            "spec": {"nodeName": played[0], "containers": [{"name": "main"}]},
        }
    )
    kubelet = FakeKubelet(store, clock, played)
    step_until(kubelet, lambda: phase(memory, "p") == "Running")
    memory.delete("pods", "p", "team", grace_period_seconds=5)
    clock.advance(5)
    step_until(kubelet, lambda: phase(memory, "p") is None)


def test_the_command_creates_plays_and_deletes_the_nodes(
    server: MockApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    code = main(
        [
            "fake-nodes",
            "--kubeconfig",
            str(config),
            "--count",
            "3",
            "--rack-size",
            "2",
            "--label",
            "team=a",
            "--exit-after",
            "0.3s",
            "--delete-on-exit",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "fake-nodes: 3 nodes ready (3 created, 0 adopted)" in out
    assert "fake-nodes: 3 nodes deleted" in out
    assert server.memory.list("nodes")[0] == []
    assert any(r.method == "POST" and "/leases" in r.path for r in server.requests)


def test_the_command_keeps_the_nodes_without_delete_on_exit(
    server: MockApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    assert main(["fake-nodes", "--kubeconfig", str(config), "--count", "1", "--exit-after", "0s"]) == 0
    assert main(["fake-nodes", "--kubeconfig", str(config), "--count", "1", "--exit-after", "0s"]) == 0
    assert "(0 created, 1 adopted)" in capsys.readouterr().out
    node = server.memory.get("nodes", "kai-fake-node-0")
    assert node["metadata"]["labels"][LABEL_FAKE_NODE] == "true"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--memory", "1Tx", "kai: --memory: invalid quantity '1Tx'"),
        ("--label", "a b=c", "kai: --label: invalid label key 'a b'"),
        ("--heartbeat-period", "10", "kai: --heartbeat-period: invalid duration '10'"),
        ("--heartbeat-period", "0s", "kai: --heartbeat-period: must be positive"),
        ("--taint", "k=v:Never", "kai: --taint: want key=value:Effect"),
        ("--zone-size", "3", "kai: --zone-size: must be a multiple of --rack-size (2)"),
        ("--exit-after", "soon", "kai: --exit-after: invalid duration 'soon'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fake-nodes", "--rack-size", "2", flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_missing_kubeconfig_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fake-nodes", "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kai: --kubeconfig:") and err.count("\n") == 1
