"""`kai schedule` shows which devices each DRA claim got (tables and JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kai_scheduler import cli

SCENARIO = """
name: dra devices
nodes:
- {name: n, draGpus: 2}
queues:
- {name: team}
jobs:
- name: held
  queue: team
  tasks:
  - {name: held-0, status: Running, node: n, draGpus: 1}
- name: train
  queue: team
  tasks:
  - {name: train-0, draGpus: 1}
"""


def test_the_devices_of_each_claim_are_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dra.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    assert cli.main(["schedule", str(path), "-o", "json"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert tasks["default/held-0"]["claims"] == {"gpu": "n/gpu-0"}
    assert tasks["default/train-0"]["claims"] == {"gpu": "n/gpu-1"}
    assert cli.main(["schedule", str(path)]) == 0
    out = capsys.readouterr().out
    assert "DRA claims" in out and "n/gpu-1" in out


def test_a_placed_task_cannot_claim_more_devices_than_its_node_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "dra.yaml"
    path.write_text(SCENARIO.replace("status: Running, node: n, draGpus: 1", "status: Running, node: n, draGpus: 3"))
    assert cli.main(["schedule", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert "node n has 2 DRA device(s) left, claim gpu needs 3" in err and "\n" not in err
