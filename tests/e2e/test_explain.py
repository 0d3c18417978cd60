"""`kai explain` against the cluster the components run on (read only): a pending job's explanation names what
it lacks, and a job that fits is explained as placeable, while nothing of it is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup

OTHER_SCHEDULER = "kai-explain-e2e"  # pods of this name are left alone by the running scheduler and podgrouper


def _explain(clean: Cluster, job: str, *extra: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "kai_scheduler.cli", "explain", job, "-n", NAMESPACE]
    command += ["--kubeconfig", clean.processes.kubeconfig, "-o", "json", *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_pending_job_is_told_what_it_lacks(clean: Cluster) -> None:
    """A 16-GPU pod on 8-GPU nodes: the largest node is too small, and each node lacks 8 GPUs."""
    clean.create(pod("explain-huge", gpus=16, labels={"app": "explain-huge"}))
    groups: list[str] = []

    def grouped() -> bool:
        items, _ = clean.store.list("podgroups", NAMESPACE)
        groups[:] = [g["metadata"]["name"] for g in items]
        return bool(groups)

    clean.wait("the pod's PodGroup", grouped)
    data = _explain(clean, "explain-huge")
    assert data["job"] == f"{NAMESPACE}/{groups[0]}" and data["state"] == "pending"
    [pool] = data["nodePools"]
    assert not pool["placeable"] and any("the largest node has 8 GPUs" in r["message"] for r in pool["reasons"])
    node = pool["tasks"][0]["closest"][0]
    gpu = next(lack for lack in node["lacks"] if lack["kind"] == "gpu")
    assert (gpu["requested"], gpu["free"], gpu["plugin"]) == (16, 8, "predicates")
    assert "cannot" not in data["summary"] and data["summary"].startswith("stays pending")


def test_a_job_that_fits_is_explained_as_placeable_and_nothing_is_written(clean: Cluster, tmp_path: Path) -> None:
    """A job of another scheduler name, explained with that name: it fits, the next cycle would place it, and it
    stays unbound (explain writes no BindRequest)."""
    clean.create(podgroup("explain-fits", min_member=2, queue="default-queue"))
    for i in range(2):
        obj = pod(f"explain-fits-{i}", gpus=4, group="explain-fits", labels={"app": "explain-fits"})
        obj["spec"]["schedulerName"] = OTHER_SCHEDULER
        clean.create(obj)
    config = tmp_path / "config.yaml"
    config.write_text(f"flags: {{scheduler-name: {OTHER_SCHEDULER}}}\n", encoding="utf-8")
    data = _explain(clean, "explain-fits", "--config", str(config))
    assert data["state"] == "pending"
    [pool] = data["nodePools"]
    assert pool["placeable"] and len(pool["placements"]) == 2
    assert len(data["nextCycle"]["placements"]) == 2 and data["summary"].startswith("the next cycle places it")
    requests, _ = clean.store.list("bindrequests", NAMESPACE)
    assert not [r for r in requests if r["spec"]["podName"].startswith("explain-fits")]
    assert all(not p.get("spec", {}).get("nodeName") for p in clean.pods("app=explain-fits"))
