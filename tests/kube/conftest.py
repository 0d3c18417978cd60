"""Tests against a real kube-apiserver (v1.32 from ../shared/kube/cluster.sh; see tests/realkube.py).

One bare cluster per test process serves every test here (a session fixture: under `pytest -n 2` each worker that
runs one of them starts its own, 3–7 s and about 300 MiB; xdist's grouping cannot be used, its `loadgroup` does
not work with pytest 9). Each is stopped when its process ends. Skipped, with the reason, where there is no
cluster.sh.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import children, realkube
from tests.loopback import free_port


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    why = realkube.unavailable()
    if why is None and shutil.which(realkube.KUBECTL) is None:
        why = "no kubectl on PATH: the install checks apply with it, as the README does"
    for item in items:
        if why and "tests/kube/" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def kube() -> Iterator[realkube.Cluster]:
    with realkube.cluster() as cluster:
        yield cluster


@dataclass
class Components:
    """`kai` processes of a test, each logging to its own file; all stopped at the end of the test."""

    logs: Path
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, kubeconfig: str, *args: str, listen: bool = True) -> None:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        flags = [f"--listen-address=127.0.0.1:{free_port()}"] if listen else []
        command = [sys.executable, "-m", "kai_scheduler.cli", "-v", *args, "--kubeconfig", kubeconfig, *flags]
        self.running[name] = children.spawn(command, stdout=log, stderr=subprocess.STDOUT)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def alive(self, name: str) -> bool:
        return self.running[name].poll() is None

    def stop(self) -> None:
        for proc in self.running.values():
            proc.terminate()
        for proc in self.running.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            dead = [n for n, p in self.running.items() if p.poll() is not None]
            if dead:
                raise AssertionError(f"{dead} exited while waiting for {what}\n{self.tails()}")
            time.sleep(0.3)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{self.tails()}")

    def tails(self, lines: int = 15) -> str:
        return "\n".join(f"--- {n}\n" + "\n".join(self.log(n).splitlines()[-lines:]) for n in self.running)


@pytest.fixture
def components(tmp_path: Path) -> Iterator[Components]:
    procs = Components(tmp_path)
    try:
        yield procs
    finally:
        procs.stop()
