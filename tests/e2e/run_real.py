"""The end-to-end suite against a real kube-apiserver, in both modes: `python -m tests.e2e.run_real [PYTEST ARGS]`.

`make test` runs this after the mock run. For each mode it starts a fresh cluster with `../shared/kube/cluster.sh`
(see tests/realkube.py: its own KAI_KUBE_RUN from mktemp, stopped in a `finally` whatever happens), runs
`pytest tests/e2e` in it with

    KAI_E2E_KUBECONFIG=<the cluster's kubeconfig>
    KAI_E2E_CONTROLLERS=0   bare control plane: etcd + kube-apiserver only
    KAI_E2E_CONTROLLERS=1   the same + kube-controller-manager (Job controller, garbage collector, …)

and stops the cluster. Every wait is bounded: the cluster's start (tests/realkube.py) and each pytest run
(`KAI_E2E_RUN_TIMEOUT`, default 600 s; then the run's whole process group, components included, is killed).
Without cluster.sh it prints why and exits 0, so a machine without it still runs the mock suite. The exit code
is the first failing run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from types import FrameType

from tests import realkube

MODES = (("bare", False), ("controllers", True))
RUN_TIMEOUT = float(os.environ.get("KAI_E2E_RUN_TIMEOUT", "600"))


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Interrupt the run's process group (pytest and the components it started), then kill what is left."""
    for sig, wait in ((signal.SIGINT, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGINT:  # pytest is gone; take the components it may have left behind too
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_mode(name: str, controllers: bool, pytest_args: list[str]) -> int:
    started = time.monotonic()
    with realkube.cluster(controllers=controllers) as cluster:
        print(f"e2e on a real API server ({name}): kubeconfig {cluster.kubeconfig}", flush=True)
        env = {
            **os.environ,
            "KAI_E2E_KUBECONFIG": cluster.kubeconfig,
            "KAI_E2E_CONTROLLERS": "1" if controllers else "0",
        }
        env.pop("KAI_E2E_MOCK", None)
        command = [sys.executable, "-m", "pytest", "tests/e2e", *pytest_args]
        proc = subprocess.Popen(command, env=env, cwd=realkube.ROOT, start_new_session=True)
        try:
            code = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"e2e ({name}): no result after {RUN_TIMEOUT:.0f} s; stopping the run", flush=True)
            code = 124
        finally:
            if proc.poll() is None:
                _stop_group(proc)
            else:
                _kill_leftovers(proc)
        if code not in (0, 5):
            print(f"--- kube-apiserver log (last lines) ---\n{cluster.log('apiserver')}", flush=True)
    print(f"e2e on a real API server ({name}): exit {code} after {time.monotonic() - started:.0f} s", flush=True)
    return 0 if code == 5 else code  # 5: nothing collected (a filter matched no test)


def _kill_leftovers(proc: subprocess.Popen[bytes]) -> None:
    """Component processes that outlived their pytest (a fixture that did not finish) go with the cluster."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _terminate(signum: int, frame: FrameType | None) -> None:
    del frame
    raise SystemExit(128 + signum)  # unwinds through the `finally`s: the run is stopped, then the cluster


def main(argv: list[str]) -> int:
    why = realkube.unavailable()
    if why:
        print(f"e2e on a real API server skipped: {why}", flush=True)
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    failed = 0
    for name, controllers in MODES:
        code = run_mode(name, controllers, argv)
        failed = failed or code
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
