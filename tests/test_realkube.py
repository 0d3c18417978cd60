"""tests/realkube.py's stop: the recorded processes of a cluster are killed by PID, and only while their command
line still names the cluster's run directory (played here by sleeping processes, no cluster needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import realkube


def _sleeper(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])


def test_the_recorded_processes_naming_the_run_are_killed_and_a_reused_pid_is_not(tmp_path: Path) -> None:
    run = tmp_path / "kai-kube-run"
    run.mkdir()
    ours = _sleeper(f"--data-dir={run}/etcd-data")
    other = _sleeper()  # a PID the system gave to someone else since
    try:
        (run / "etcd.pid").write_text(f"{ours.pid}\n")
        (run / "apiserver.pid").write_text(f"{other.pid}\n")
        (run / "controller-manager.pid").write_text("not a pid\n")
        realkube.kill(run)
        assert ours.wait(timeout=10) == -9
        assert other.poll() is None, "a process not of this cluster was killed"
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait(timeout=10)
