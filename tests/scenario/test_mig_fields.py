"""Scenario MIG fields (SCENARIOS.md): nodes' `migStrategy` and `mig`, tasks' `mig`; bad ones are one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.api import ObjectError
from kai_scheduler.scenario import loads
from tests.cli.invoke import run, write

QUEUE = "queues:\n- {name: q, resources: {gpu: {quota: -1, overQuotaWeight: 1, limit: -1}}}\n"


def _objects(text: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in loads(text, "s.yaml").objects if o["kind"] == kind]


def test_a_mixed_node_exposes_its_instances_and_labels_its_strategy() -> None:
    (node,) = _objects("nodes:\n- {name: a, migStrategy: mixed, mig: {1g.10gb: 3, 3g.40gb: 1}}\n", "Node")
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "3"
    assert node["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "1"
    assert node["metadata"]["labels"]["nvidia.com/mig.strategy"] == "mixed"


def test_a_single_node_exposes_its_instances_as_gpus_with_the_mig_product() -> None:
    (node,) = _objects("nodes:\n- {name: a, migStrategy: single, mig: {1g.10gb: 7}}\n", "Node")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "7"
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "MIG-1g.10gb"
    assert labels["nvidia.com/mig.strategy"] == "single"
    assert labels["nvidia.com/gpu.memory"] == "10240"


def test_a_task_requests_its_instances_as_limits() -> None:
    text = "nodes: []\n" + QUEUE + "jobs:\n- {name: j, queue: q, tasks: [{mig: {1g.10gb: 2}}]}\n"
    (pod,) = _objects(text, "Pod")
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "2"}


def test_a_running_mig_task_is_marked_as_the_binder_marks_it() -> None:
    text = (
        "nodes:\n- {name: a, migStrategy: mixed, mig: {1g.10gb: 1}}\n"
        + QUEUE
        + "jobs:\n- {name: j, queue: q, tasks: [{status: Running, node: a, mig: {1g.10gb: 1}}]}\n"
    )
    (pod,) = _objects(text, "Pod")
    assert pod["metadata"]["annotations"]["received-resource-type"] == "MigInstance"


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param(
            "nodes:\n- {name: a, migStrategy: mixed, mig: {1g.10gib: 3}}\n",
            "s.yaml:2: node a mig.1g.10gib: unknown MIG profile '1g.10gib'; want <g>g.<m>gb, e.g. 1g.10gb or 3g.40gb",
            id="an unknown node profile",
        ),
        pytest.param(
            "nodes:\n- {name: a, mig: {1g.10gb: 3}}\n",
            "s.yaml:2: node a mig: MIG instances need migStrategy: mixed (or single)",
            id="instances without a strategy",
        ),
        pytest.param(
            "nodes:\n- {name: a, migStrategy: mixd}\n",
            "s.yaml:2: node a migStrategy: unknown MIG strategy 'mixd'; want single or mixed",
            id="an unknown strategy",
        ),
        pytest.param(
            "nodes:\n- {name: a, migStrategy: mixed, mig: {1g.10gb: two}}\n",
            "s.yaml:2: node a mig.1g.10gb: expected a whole number of instances, got 'two'",
            id="a count that is not a number",
        ),
        pytest.param(
            "nodes:\n- {name: a, migStrategy: single, mig: {1g.10gb: 3, 2g.20gb: 1}}\n",
            "s.yaml:2: node a mig: the single strategy carves every GPU alike: one profile, got 1g.10gb, 2g.20gb",
            id="two profiles with the single strategy",
        ),
        pytest.param(
            "nodes: []\n" + QUEUE + "jobs:\n- {name: j, queue: q, tasks: [{mig: {big: 1}}]}\n",
            "s.yaml:5: job j tasks[0].mig.big: unknown MIG profile 'big'; want <g>g.<m>gb, e.g. 1g.10gb or 3g.40gb",
            id="an unknown task profile",
        ),
        pytest.param(
            "nodes: []\n" + QUEUE + "jobs:\n- {name: j, queue: q, tasks: [{gpus: 0.5, mig: {1g.10gb: 1}}]}\n",
            "s.yaml:5: job j tasks[0].mig: MIG instances cannot be combined with a fractional GPU (gpus below 1, "
            "gpuMemory)",
            id="instances with a fraction",
        ),
    ],
)
def test_a_bad_mig_field_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(ObjectError) as err:
        loads(text, "s.yaml")
    assert str(err.value) == message


def test_kai_schedule_shows_which_instance_each_pod_got(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "nodes:\n- {name: a100, migStrategy: mixed, mig: {1g.10gb: 2, 3g.40gb: 1}}\n"
        + QUEUE
        + "jobs:\n- {name: s, queue: q, replicas: 2, template: {mig: {1g.10gb: 1}}}\n"
        + "- {name: t, queue: q, replicas: 1, template: {mig: {3g.40gb: 1}}}\n",
    )
    code, out, _ = run(capsys, "schedule", path, "--output", "json")
    assert code == 0
    tasks = json.loads(out)["tasks"]
    assert sorted(tasks["default/s-0"]["mig"] + tasks["default/s-1"]["mig"]) == ["1g.10gb/0", "1g.10gb/1"]
    assert tasks["default/t-0"]["mig"] == ["3g.40gb/0"]
    code, out, _ = run(capsys, "schedule", path)
    assert "MIG instances" in out and "3g.40gb/0" in out
