"""The end-to-end suite against a real kube-apiserver, in both modes: `python -m tests.e2e.run_real [PYTEST ARGS]`.

`make test` runs this (with the mock run beside it, below). For each mode it starts a fresh cluster with
`../shared/kube/cluster.sh` (see tests/realkube.py: its own KAI_KUBE_RUN from mktemp, stopped in a `finally`
whatever happens), runs `pytest tests/e2e` in it with

    KAI_E2E_KUBECONFIG=<the cluster's kubeconfig>
    KAI_E2E_CONTROLLERS=0   bare control plane: etcd + kube-apiserver only
    KAI_E2E_CONTROLLERS=1   the same + kube-controller-manager (Job controller, garbage collector, …)

and stops the cluster as soon as that run ends. With `KAI_E2E_WITH_MOCK=1` the suite also runs over the mock API
server (`KAI_E2E_MOCK=1`, in the run's own process; alone where there is no cluster.sh). With `KAI_E2E_SPLIT=1`
(`make test`) each test runs once, in the run it belongs to (`KAI_E2E_RUN`, tests/e2e/split.py): the mock run
keeps only the tests marked for it, and the rest is shared between the bare and controllers runs; without a real
server the mock run takes every test.

The runs go at once: they share nothing (their own API server, ports, components, pytest temporary directories)
and each waits mostly on its servers, so together they take little more than the longest (tests/README.md has
the figures). Each run's output is kept and printed whole when it ends, so they never interleave;
`KAI_E2E_SERIAL=1` runs them one after the other instead, with the output live. Every wait is bounded: the
cluster's start (tests/realkube.py) and each pytest run (`KAI_E2E_RUN_TIMEOUT`, default 600 s from the run's
start; then the run's whole process group, components included, is killed). Without cluster.sh it prints why
and exits 0 (after the mock run, when asked for), so a machine without it still runs the mock suite. The exit
code is the first failing run's, in the order mock, bare, controllers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from types import FrameType
from typing import IO

from tests import realkube

MODES = (("bare", False), ("controllers", True))
MOCK = "mock"  # KAI_E2E_WITH_MOCK=1: the suite over the mock API server too, beside the real runs
RUN_TIMEOUT = float(os.environ.get("KAI_E2E_RUN_TIMEOUT", "600"))
POLL = 0.2  # how often the runs at once are looked at (seconds)


def serial() -> bool:
    return os.environ.get("KAI_E2E_SERIAL") == "1"


def with_mock() -> bool:
    return os.environ.get("KAI_E2E_WITH_MOCK") == "1"


def split() -> bool:
    """KAI_E2E_SPLIT=1: each test runs once, in the run it belongs to (tests/e2e/split.py), not in every run."""
    return os.environ.get("KAI_E2E_SPLIT") == "1"


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


def _kill_leftovers(proc: subprocess.Popen[bytes]) -> None:
    """Component processes that outlived their pytest (a fixture that did not finish) go with the cluster."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        _stop_group(proc)
    else:
        _kill_leftovers(proc)


@dataclass
class Run:
    """One mode's pytest over its own cluster; `output` holds what it printed when it runs beside the other."""

    name: str
    cluster: realkube.Cluster | None  # None: the mock API server, in the run's own process
    proc: subprocess.Popen[bytes]
    output: IO[bytes] | None
    started: float
    resources: contextlib.ExitStack  # the run's processes, output file and cluster: released when it ends
    code: int | None = None

    @property
    def title(self) -> str:
        return "e2e on the mock API server" if self.cluster is None else f"e2e on a real API server ({self.name})"

    def finish(self, code: int) -> int:
        """Record the run's exit code, print its kept output and the API server's log on failure."""
        self.code = code
        if self.output is not None:
            self.output.seek(0)
            print(f"===== {self.title}: output of the run =====", flush=True)
            sys.stdout.flush()
            shutil.copyfileobj(self.output, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        if code not in (0, 5) and self.cluster is not None:
            print(f"--- kube-apiserver log ({self.name}, last lines) ---\n{self.cluster.log('apiserver')}", flush=True)
        said = "no test of its own (exit 5)" if code == 5 else f"exit {code}"
        print(f"{self.title}: {said} after {time.monotonic() - self.started:.0f} s")
        sys.stdout.flush()
        self.resources.close()  # its cluster stops now, not when the other runs end
        return 0 if code == 5 else code  # 5: nothing collected (a filter matched no test)


def command(pytest_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "tests/e2e", *pytest_args]


def start(
    stack: contextlib.ExitStack,
    name: str,
    controllers: bool,
    pytest_args: list[str],
    *,
    keep_output: bool,
    share: str | None = None,
) -> Run:
    """Start the mode's cluster and its pytest; `Run.finish`, else the caller's stack however it ends, stops both
    (the run first)."""
    started = time.monotonic()
    own = stack.enter_context(contextlib.ExitStack())
    env = dict(os.environ)
    for each in ("KAI_E2E_MOCK", "KAI_E2E_KUBECONFIG", "KAI_E2E_CONTROLLERS", "KAI_E2E_RUN"):
        env.pop(each, None)
    if share is not None:
        env["KAI_E2E_RUN"] = share
    cluster = None
    if name == MOCK:
        env["KAI_E2E_MOCK"] = "1"
    else:
        cluster = own.enter_context(realkube.cluster(controllers=controllers))
        print(f"e2e on a real API server ({name}): kubeconfig {cluster.kubeconfig}", flush=True)
        env["KAI_E2E_KUBECONFIG"] = cluster.kubeconfig
        env["KAI_E2E_CONTROLLERS"] = "1" if controllers else "0"
    output = own.enter_context(tempfile.TemporaryFile()) if keep_output else None  # noqa: SIM115 - `own` closes it
    proc = subprocess.Popen(
        command(pytest_args),
        env=env,
        cwd=realkube.ROOT,
        start_new_session=True,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
    )
    own.callback(_end, proc)
    return Run(name, cluster, proc, output, started, own)


def wait(run: Run) -> int:
    """Wait for one run (bounded by RUN_TIMEOUT from its start) and finish it."""
    try:
        code = run.proc.wait(timeout=max(0.0, RUN_TIMEOUT - (time.monotonic() - run.started)))
    except subprocess.TimeoutExpired:
        print(f"{run.title}: no result after {RUN_TIMEOUT:.0f} s; stopping the run", flush=True)
        _stop_group(run.proc)
        code = 124
    return run.finish(code)


def run_mode(name: str, controllers: bool, pytest_args: list[str], *, share: str | None = None) -> int:
    """One mode alone, its output live; with `share`, only the tests of that run (tests/e2e/split.py)."""
    with contextlib.ExitStack() as stack:
        return wait(start(stack, name, controllers, pytest_args, keep_output=False, share=share))


def run_modes_at_once(modes: tuple[tuple[str, bool], ...], pytest_args: list[str], *, shared: bool = False) -> int:
    """The modes at once, each on its own cluster; each run's output printed whole when it ends. `shared`: each
    run keeps only its own tests (tests/e2e/split.py)."""
    codes: dict[str, int] = {}
    with contextlib.ExitStack() as stack:
        runs = [
            start(stack, name, controllers, pytest_args, keep_output=True, share=name if shared else None)
            for name, controllers in modes
        ]
        while len(codes) < len(runs):
            for run in runs:
                if run.name in codes:
                    continue
                code = run.proc.poll()
                if code is not None:
                    codes[run.name] = run.finish(code)
                elif time.monotonic() - run.started > RUN_TIMEOUT:
                    codes[run.name] = wait(run)  # past its time: stopped, told, finished
            time.sleep(POLL)
    return next((codes[name] for name, _ in modes if codes[name]), 0)


def _terminate(signum: int, frame: FrameType | None) -> None:
    del frame
    raise SystemExit(128 + signum)  # unwinds through the `finally`s: the runs are stopped, then the clusters


def main(argv: list[str]) -> int:
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, before)


def _main(argv: list[str]) -> int:
    modes: tuple[tuple[str, bool], ...] = ((MOCK, False),) if with_mock() else ()
    why = realkube.unavailable()
    if why:
        print(f"e2e on a real API server skipped: {why}", flush=True)
    else:
        modes += MODES
    if not modes:
        return 0
    shared = split() and not why  # without a real server the mock run takes every test
    if not serial():
        return run_modes_at_once(modes, argv, shared=shared)
    failed = 0
    for name, controllers in modes:
        code = run_mode(name, controllers, argv, share=name if shared else None)
        failed = failed or code
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
