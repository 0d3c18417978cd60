"""The snapshot plugin on the real control plane: curl the running scheduler's /get-snapshot, replay the zip
with `kai schedule`, and see the cluster as the scheduler saw it and decided."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import NAMESPACE, NODE_PREFIX, Cluster, pod

pytestmark = pytest.mark.run_in("controllers")  # evens the runs' times (tests/e2e/split.py)


def test_curl_the_schedulers_snapshot_and_replay_it(clean: Cluster, tmp_path: Path) -> None:
    port = clean.processes.plugin_ports["scheduler"]
    clean.create(pod("snap-fits", gpus=2, labels={"app": "snap"}))
    clean.create(pod("snap-huge", gpus=16, labels={"app": "snap"}))
    placed: list[dict[str, Any]] = []

    def fits_bound() -> bool:
        placed[:] = [p for p in clean.bound("app=snap") if p["metadata"]["name"] == "snap-fits"]
        return bool(placed)

    clean.wait("snap-fits bound", fits_bound)
    zipped = tmp_path / "snapshot.zip"
    curl = ["curl", "-sS", "--fail", "-o", str(zipped), f"http://127.0.0.1:{port}/get-snapshot"]
    done = subprocess.run(curl, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(io.BytesIO(zipped.read_bytes())) as archive:
        assert archive.namelist() == ["snapshot.json"]
        doc = json.loads(archive.read("snapshot.json"))
    raw = doc["rawObjects"]
    assert {n["metadata"]["name"] for n in raw["nodes"] if n["metadata"]["name"].startswith(NODE_PREFIX)} == {
        f"{NODE_PREFIX}-{i}" for i in range(4)
    }
    assert doc["schedulerParams"]["queueAccessControl"] is True  # the suite's scheduler flag, captured
    assert "namespaces" in raw  # read with queue access control on, so captured

    replay = [sys.executable, "-m", "kai_scheduler.cli", "schedule", str(zipped), "-o", "json", "--no-progress"]
    done = subprocess.run(replay, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    fits = result["tasks"][f"{NAMESPACE}/snap-fits"]
    assert fits["node"] == placed[0]["spec"]["nodeName"] and fits["status"] in ("Running", "Bound", "Binding")
    huge = [reasons for job, reasons in result["unplaced"].items() if "snap-huge" in job]
    assert huge and any("GPU" in reason for reason in huge[0]), result["unplaced"]
