"""A real kube-apiserver for tests: `../shared/kube/cluster.sh` (beside the repository) started in a fresh run
directory, and always stopped.

`cluster(controllers=...)` starts etcd and kube-apiserver v1.32 on free loopback ports (and with
`controllers=True` the kube-controller-manager: garbage collector, Job controller, node lifecycle…), yields the
kubeconfig, and kills the processes by their recorded PIDs when the block ends, however it ends. Each call has
its own `KAI_KUBE_RUN` (a mktemp directory), so clusters never share state and several can run at once. The
script is `$KAI_KUBE_CLUSTER_SH`, else `../shared/kube/cluster.sh` next to the repository; `unavailable()` says
why there is none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests import children

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180.0  # first use unpacks the binaries (~10 s); then 3–7 s to ready
STOP_TIMEOUT = 60.0
KUBECTL = "kubectl"


def script() -> Path:
    named = os.environ.get("KAI_KUBE_CLUSTER_SH")
    return Path(named) if named else ROOT.parent / "shared" / "kube" / "cluster.sh"


def unavailable() -> str | None:
    """Why no real API server can be started here, or None when one can."""
    path = script()
    if not path.is_file():
        return f"no real API server: {path} does not exist (set KAI_KUBE_CLUSTER_SH to a cluster.sh)"
    for tool in ("openssl", "curl", "xz"):
        if shutil.which(tool) is None:
            return f"no real API server: {path} needs {tool}, which is not on PATH"
    return None


@dataclass(frozen=True, slots=True)
class Cluster:
    kubeconfig: str
    run: Path
    controllers: bool

    def log(self, name: str, lines: int = 20) -> str:
        """The last lines of a control-plane log (apiserver, etcd, controller-manager)."""
        path = self.run / "logs" / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@contextlib.contextmanager
def cluster(*, controllers: bool = False) -> Iterator[Cluster]:
    """A fresh cluster for the block; RuntimeError (with the script's reason) if it does not start in time."""
    why = unavailable()
    if why:
        raise RuntimeError(why)
    run = Path(tempfile.mkdtemp(prefix="kai-kube-"))
    env = {**os.environ, "KAI_KUBE_RUN": str(run)}
    command = [str(script()), "start", *(["--controllers"] if controllers else [])]
    try:
        try:
            started = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=START_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"cluster.sh start did not finish within {START_TIMEOUT:.0f} s") from None
        lines = started.stdout.strip().splitlines()
        if started.returncode != 0 or not lines:
            raise RuntimeError(f"cluster.sh start failed ({started.returncode}): {started.stderr.strip()[-2000:]}")
        yield Cluster(lines[-1], run, controllers)
    finally:
        kill(run)
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(
                [str(script()), "stop"], env=env, capture_output=True, timeout=STOP_TIMEOUT, stdin=subprocess.DEVNULL
            )
        shutil.rmtree(run, ignore_errors=True)


PROCESSES = ("controller-manager", "apiserver", "etcd")  # cluster.sh's pid files in the run directory


def kill(run: Path) -> None:
    """SIGKILL the cluster's processes by the PIDs recorded in `run`, each only while its command line still names
    `run` (a PID the system gave to another process since is left alone). The cluster and its data are thrown away,
    so nothing is owed a graceful shutdown: the API server's takes seconds, and `cluster.sh stop` waits for it.
    `cluster.sh stop` runs after, for what it does beyond (its pid files)."""
    for name in PROCESSES:
        with contextlib.suppress(OSError, ValueError):
            pid = int((run / f"{name}.pid").read_text().strip())
            if str(run) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                os.kill(pid, signal.SIGKILL)


def restart_apiserver(cluster: Cluster, down: float) -> None:
    """SIGKILL the cluster's API server (what is in flight is lost, as in a crash), leave it down for `down` seconds
    and start it again with the same arguments and etcd (which keeps the data); its new pid goes where cluster.sh
    keeps it, so `kill` and `cluster.sh stop` stop it. Without a pause the new server listened within about a
    second, and a process starved of CPU on a loaded box could miss the outage altogether."""
    pid_file = cluster.run / "apiserver.pid"
    pid = int(pid_file.read_text().strip())
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        time.sleep(0.05)
    time.sleep(down)
    out = open(cluster.run / "logs" / "apiserver.log", "ab")  # noqa: SIM115 - the child owns it
    proc = children.spawn(argv, stdout=out, stderr=out)
    pid_file.write_text(f"{proc.pid}\n")


def _state(pid: int) -> str:
    """The process's state letter (`Z` for a zombie, or when it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except (OSError, IndexError):
        return "Z"


def kubectl(
    kubeconfig: str, *args: str, stdin: str | None = None, timeout: float = 120.0, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run kubectl against the cluster (the machine's kubectl: /usr/bin/kubectl here)."""
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result
