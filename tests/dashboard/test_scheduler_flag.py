"""`kai scheduler --dashboard-address`: the scheduler process serves the dashboard over its own store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.cli import main
from kai_scheduler.store.memory import MemoryStore
from tests import children
from tests.builders import node, queue
from tests.runtime.test_process import closed_port, eventually, get, kubeconfig
from tests.store.mock_apiserver import MockApiServer


def _queues(port: int) -> list[str]:
    try:
        status, body = get(port, "/api/state")
    except OSError:
        return []
    return [q["name"] for q in orjson.loads(body)["queues"]] if status == 200 else []


def test_the_scheduler_serves_the_dashboard_behind_its_flag(tmp_path: Path) -> None:
    memory = MemoryStore(SystemClock())
    memory.add_many([node("n1", gpus=8), queue("q")])
    port = closed_port()
    with MockApiServer(memory) as server:
        proc = children.spawn_kai(
            [
                "scheduler",
                "--kubeconfig",
                kubeconfig(tmp_path, server.url),
                "--listen-address",
                f"127.0.0.1:{closed_port()}",
                "--plugin-server-port=0",
                "--dashboard-address",
                f"127.0.0.1:{port}",
                "--schedule-period",
                "100ms",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert eventually(lambda: proc.poll() is not None or _queues(port) == ["q"]), "no dashboard"
            memory.add_many([queue("later")])
            assert eventually(lambda: proc.poll() is not None or _queues(port) == ["later", "q"]), "no live change"
            assert proc.poll() is None, "the process ended early"
        finally:
            err = children.stop(proc)
        assert proc.returncode == 0, err


def test_the_flag_is_in_the_schedulers_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["scheduler", "--help"])
    assert "--dashboard-address ADDR" in capsys.readouterr().out
