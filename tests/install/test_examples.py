"""The cluster examples of docs/install.md are KAI workloads in the default queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kai_scheduler.api import constants
from kai_scheduler.store.interface import resource_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cluster"


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]
    if "pytorchReplicaSpecs" in spec:
        return [r["template"] for r in spec["pytorchReplicaSpecs"].values()]
    return [spec["template"]]


def test_examples_are_kai_workloads_in_the_default_queue() -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert [f.name for f in files] == ["job.yaml", "pytorchjob.yaml"]
    for path in files:
        obj = yaml.safe_load(path.read_text())
        resource_for(obj["kind"], obj["apiVersion"])  # a kind the podgrouper knows
        assert obj["metadata"]["labels"][constants.LABEL_QUEUE] == constants.DEFAULT_QUEUE_NAME
        for template in _pod_templates(obj):
            assert template["spec"]["schedulerName"] == constants.DEFAULT_SCHEDULER_NAME
    pytorch = yaml.safe_load((EXAMPLES / "pytorchjob.yaml").read_text())
    assert sum(r["replicas"] for r in pytorch["spec"]["pytorchReplicaSpecs"].values()) == 4
