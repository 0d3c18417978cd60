"""`kai dashboard`'s command line: bad input is one line and exit 2; the parser stays light."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.invoke import run, write
from tests.dashboard.scenarios import CLUSTER

UNREACHABLE_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--port", "70000"], "--port: want 0 to 65535, got 70000", id="port out of range"),
        pytest.param(["--period", "0"], "--period: must be positive, got 0.0", id="no period"),
        pytest.param(["--cycles", "0"], "--cycles: must be at least 1, got 0", id="no cycles"),
    ],
)
def test_bad_flags_are_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, _, err = run(capsys, "dashboard", *args)
    assert (code, err) == (2, f"kai: {message}\n")


def test_a_file_and_a_kubeconfig_are_one_or_the_other(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "dashboard", write(tmp_path, CLUSTER), "--kubeconfig", "k")
    assert (code, err) == (2, "kai: dashboard: give a FILE or --kubeconfig/--context, not both\n")


def test_a_file_that_is_no_recording_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "dashboard", write(tmp_path, "{}", "run.json"))
    assert code == 2
    assert err.count("\n") == 1 and "not a dashboard recording: no `frames`" in err


def test_a_scenario_with_generators_says_how_to_see_it_in_the_dashboard(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """examples/hierarchical-org.yaml draws its jobs: the dashboard cannot run it, and says what will show it."""
    example = Path(__file__).resolve().parents[2] / "examples" / "hierarchical-org.yaml"
    code, _, err = run(capsys, "dashboard", str(example))
    assert code == 2 and err.count("\n") == 1
    assert "run `kai simulate FILE` (with --dashboard it records the views for `kai dashboard`)" in err


def test_a_cluster_that_cannot_be_read_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = write(tmp_path, UNREACHABLE_KUBECONFIG, "kubeconfig")
    code, _, err = run(capsys, "dashboard", "--kubeconfig", kubeconfig, "--port", "0")
    assert code == 2
    assert err.startswith("kai: dashboard: cannot read the cluster: list Node") and err.count("\n") == 1


def test_an_address_in_use_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = run(capsys, "dashboard", write(tmp_path, CLUSTER), "--port", str(port))
    assert code == 2
    assert err.startswith(f"kai: --address/--port: cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1


def test_the_parser_does_not_import_the_web_stack() -> None:
    code = (
        "import sys; from kai_scheduler import cli; cli.parser(); "
        "print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_node_pool_is_chosen_for_a_cluster_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "dashboard", write(tmp_path, CLUSTER), "--partition-label-value", "a100")
    assert (code, err) == (
        2,
        "kai: --partition-label-value: only with a cluster (--kubeconfig); a scenario's shards show every pool\n",
    )
