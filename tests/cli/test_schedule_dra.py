"""`kai schedule` shows which devices each DRA claim got (tables and JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kai_scheduler import cli, scenario

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


RUNNING = """
name: a running DRA workload
nodes:
- {name: n, count: 2, draGpus: 2}
queues:
- {name: team}
resourceClaims:
- {name: shared, queue: team}
jobs:
- name: a
  queue: team
  tasks:
  - {name: a-0, status: Running, node: n-0, claims: [{name: gpu, claim: shared}]}
  - {name: a-1, status: Running, node: n-0, claims: [{name: gpu, claim: shared}]}
- name: b
  queue: team
  tasks:
  - {name: b-0, status: Binding, node: n-0, draGpus: 1}
- name: c
  queue: team
  tasks:
  - {name: c-0, status: Running, node: n-1, claims: [{name: all, allocationMode: All}]}
- name: d
  queue: team
  tasks:
  - {name: d-0, draGpus: 1}
"""


def test_placed_and_binding_tasks_hold_their_claims_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shared claim is allocated once for its running users, an All claim takes every device of its node, a
    Binding task's devices travel in its BindRequest: nothing is left for d-0."""
    path = tmp_path / "dra.yaml"
    path.write_text(RUNNING, encoding="utf-8")
    assert cli.main(["schedule", str(path), "-o", "json"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert tasks["default/a-0"]["claims"] == {"gpu": "n-0/gpu-0"}
    assert tasks["default/a-1"]["claims"] == {"gpu": "n-0/gpu-0"}
    assert tasks["default/b-0"]["claims"] == {"gpu": "n-0/gpu-1"}
    assert tasks["default/c-0"]["claims"] == {"all": "n-1/gpu-0, n-1/gpu-1"}
    assert tasks["default/d-0"]["status"] == "Pending"


def test_loaded_claims_read_as_a_cluster_shows_them(tmp_path: Path) -> None:
    path = tmp_path / "dra.yaml"
    path.write_text(RUNNING, encoding="utf-8")
    loaded = scenario.load(path)
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in loaded.objects}
    shared = by_name[("ResourceClaim", "shared")]
    assert [r["name"] for r in shared["status"]["reservedFor"]] == ["a-0", "a-1"]
    assert [r["device"] for r in shared["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    made = by_name[("ResourceClaim", "b-0-gpu")]
    assert "status" not in made  # the binder writes it from the BindRequest
    request = by_name[("BindRequest", "b-0")]
    (allocation,) = request["spec"]["resourceClaimAllocations"]
    assert allocation["name"] == "gpu"
    assert [r["device"] for r in allocation["allocation"]["devices"]["results"]] == ["gpu-1"]
    assert by_name[("Pod", "b-0")]["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "b-0-gpu"}
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        pytest.param(
            ("status: Running, node: n-1, claims: [{name: all", "status: Running, node: n-0, claims: [{name: all"),
            "claim all takes all of node n-0's devices: 0 of 2 free",
            id="All on a node with devices taken",
        ),
        pytest.param(
            ("a-1, status: Running, node: n-0", "a-1, status: Running, node: n-1"),
            "shared claim default/shared is allocated on node n-0, not on n-1",
            id="shared claim users on two nodes",
        ),
    ],
)
def test_placed_claims_that_cannot_be_held_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], message: str
) -> None:
    path = tmp_path / "dra.yaml"
    path.write_text(RUNNING.replace(*change), encoding="utf-8")
    assert cli.main(["schedule", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
