"""Processes a test starts die with the test process, even when it is killed: an interrupted pytest-xdist worker
runs no `finally`, and a component left running would hold ports and CPU after the suite."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

_PR_SET_PDEATHSIG = 1
KAI = "import sys; from kai_scheduler.cli import main; sys.exit(main())"  # `python -c KAI …` runs the CLI


def _die_with(parent: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the request was made: nobody would signal us
        os._exit(1)


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen` whose child gets SIGKILL when the thread that started it ends (Linux)."""
    parent = os.getpid()
    return subprocess.Popen(argv, preexec_fn=lambda: _die_with(parent), **kwargs)


def spawn_kai(argv: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """`kai argv…` as a child (see `spawn`) that is in no pod: KUBERNETES_SERVICE_HOST is empty, so it reads only
    the kubeconfig it is given, never the in-cluster service account (tests may run in a pod)."""
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": ""}
    return spawn([sys.executable, "-c", KAI, *argv], env=env, **kwargs)


def stop(proc: subprocess.Popen[Any], timeout: float = 30.0) -> str:
    """SIGTERM, wait up to `timeout`, then SIGKILL; the child's stderr (when piped)."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"pid {proc.pid} ignored SIGTERM for {timeout:.0f}s and was killed: {err}") from None
    return err or ""
