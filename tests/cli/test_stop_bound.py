"""Every long-running command stops within the bound after SIGTERM while the API server does not answer
(docs/components.md, "Stopping"): exit code 0, one line saying what was abandoned; a second signal stops at once.

The API server is the mock with its `stall` fault: it accepts connections and answers nothing, as a server
starved of CPU or stopped with SIGSTOP does. The commands run as processes, all at once (each waits about
STEP_GRACE seconds when it stops), and are killed in a `finally` whatever happens.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.api.clock import SystemClock
from kai_scheduler.runtime import process as runtime
from kai_scheduler.store.memory import MemoryStore
from tests import children
from tests.builders import node, queue
from tests.runtime.test_process import closed_port, eventually, get, kubeconfig, pending_pod
from tests.store.mock_apiserver import MockApiServer

BOUND = runtime.SHUTDOWN_BOUND
GAVE_UP = "shutdown: gave up waiting for the API server"
FAST = ["--leader-elect-retry-period", "100ms"]
NO_PLUGIN_SERVER = "--plugin-server-port=0"  # KAI's 8081 is not ours to take in a test


@dataclass
class Command:
    name: str
    argv: list[str]
    port: int | None  # its /readyz, or None (fake-nodes: ready once its nodes exist)


def commands(config: str) -> list[Command]:
    """Each command with its own Lease namespace (none waits for another's Lease) and its loops at their default
    periods; the electors renew every 100 ms, so that each has a request in flight when the server stalls."""

    def component(name: str, *extra: str) -> Command:
        port = closed_port()
        argv = [name, "--kubeconfig", config, "--listen-address", f"127.0.0.1:{port}", "--leader-elect"]
        return Command(name, [*argv, "--leader-elect-namespace", f"lease-{name}", *FAST, *extra], port)

    return [
        component("run", NO_PLUGIN_SERVER),
        component("scheduler", NO_PLUGIN_SERVER),
        component("binder"),
        component("podgrouper"),
        component("controllers"),
        component("node-scale-adjuster"),
        component("operator", "--namespace", "kai-scheduler"),
        Command(
            "fake-nodes",
            ["fake-nodes", "--kubeconfig", config, "--count", "2", "--prefix", "stall", "--heartbeat-period", "100ms"],
            None,
        ),
    ]


def spawn(argv: list[str]) -> subprocess.Popen[str]:
    return children.spawn_kai(["-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def ready(command: Command, memory: MemoryStore) -> bool:
    if command.port is None:
        return sum(n["metadata"]["name"].startswith("stall-") for n in memory.list("nodes")[0]) == 2
    try:
        return get(command.port, "/readyz")[0] == 200
    except OSError:
        return False


def stop_and_time(proc: subprocess.Popen[str], limit: float) -> tuple[float, str]:
    """SIGTERM; the seconds until it exited and its stderr. Killed (and failing) past `limit`."""
    started = time.monotonic()
    err = children.stop(proc, limit)
    return time.monotonic() - started, err


def cluster() -> MemoryStore:
    memory = MemoryStore(SystemClock())
    memory.add_many([node("n1", gpus=0), queue("q"), pending_pod("p")])
    return memory


def test_every_long_running_command_exits_0_within_the_bound_while_the_api_server_does_not_answer(
    tmp_path: Path,
) -> None:
    memory = cluster()
    with MockApiServer(memory) as server:
        config = kubeconfig(tmp_path, server.url)
        running: dict[str, tuple[Command, subprocess.Popen[str]]] = {}
        try:
            for command in commands(config):
                running[command.name] = (command, spawn(command.argv))
            for name, (command, proc) in running.items():
                if not eventually(lambda c=command, p=proc: p.poll() is not None or ready(c, memory), timeout=60):
                    proc.kill()
                    raise AssertionError(f"{name} did not become ready: {proc.communicate()[1][-3000:]}")
                assert proc.poll() is None, f"{name} ended early: {proc.communicate()[1][-3000:]}"
            server.stall()
            assert eventually(lambda: server.held >= len(running), timeout=10), "the commands sent no request"
            time.sleep(0.5)  # every loop is now waiting on an answer
            started = time.monotonic()
            for _, proc in running.values():
                proc.send_signal(signal.SIGTERM)
            failures = []
            for name, (_, proc) in running.items():
                try:
                    _, err = proc.communicate(timeout=max(0.1, started + BOUND + 5 - time.monotonic()))
                except subprocess.TimeoutExpired:
                    failures.append(f"{name}: still running {BOUND + 5:g}s after SIGTERM")
                    continue
                seconds = time.monotonic() - started  # an upper bound: it may have ended while another was read
                if proc.returncode != 0 or seconds > BOUND:
                    failures.append(f"{name}: exit {proc.returncode} after {seconds:.1f}s: {err[-2000:]}")
                elif GAVE_UP not in err:
                    failures.append(f"{name}: no line saying what was abandoned: {err[-2000:]}")
            assert not failures, "\n".join(failures)
        finally:
            server.resume()
            for _, proc in running.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()


def test_a_second_sigterm_stops_at_once(tmp_path: Path) -> None:
    memory = cluster()
    with MockApiServer(memory) as server:
        command = commands(kubeconfig(tmp_path, server.url))[0]
        proc = spawn(command.argv)
        try:
            assert eventually(lambda: proc.poll() is not None or ready(command, memory), timeout=60)
            server.stall()
            assert eventually(lambda: server.held > 0, timeout=10)
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)  # the first one is handled: the process is stopping, waiting on the server
            assert proc.poll() is None
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=runtime.STEP_GRACE)
            assert time.monotonic() - started < runtime.STEP_GRACE - 1  # not the graceful path's wait
            assert proc.returncode == runtime.EXIT_FORCED
            assert "shutdown: second SIGTERM: exiting at once" in err
        finally:
            server.resume()
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_the_watchdog_ends_a_process_whose_shutdown_does_not_end(tmp_path: Path) -> None:
    """Whatever blocks the shutdown (here a stop that never returns), the process ends at the bound."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import threading, time\n"
        "from kai_scheduler.cli import logs\n"
        "from kai_scheduler.runtime.process import stop_on_signals\n"
        "logs.configure(20, 'text')\n"
        "stop = threading.Event()\n"
        "with stop_on_signals(stop, bound=1.0):\n"
        "    print('ready', flush=True)\n"
        "    stop.wait()\n"
        "    time.sleep(60)  # a shutdown that hangs\n"
    )
    proc: subprocess.Popen[Any] = children.spawn(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        seconds, err = stop_and_time(proc, 10)
        assert 1.0 <= seconds < 5, seconds
        assert proc.returncode == runtime.EXIT_FORCED
        assert "shutdown: not done 1s after SIGTERM: exiting" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_clean_stop_abandons_nothing_and_releases_the_leases_when_the_server_answers(
    signame: str, tmp_path: Path
) -> None:
    memory = cluster()
    with MockApiServer(memory) as server:
        command = commands(kubeconfig(tmp_path, server.url))[0]
        proc = spawn(command.argv)
        try:
            assert eventually(lambda: proc.poll() is not None or ready(command, memory), timeout=60)
            proc.send_signal(getattr(signal, signame))
            _, err = proc.communicate(timeout=BOUND)
            assert proc.returncode == 0, err[-2000:]
            assert GAVE_UP not in err, err[-2000:]  # nothing waited out, nothing cut
            assert {lease["spec"]["holderIdentity"] for lease in memory.list("leases")[0]} == {""}
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_a_signal_that_interrupts_code_holding_a_lock_the_handling_needs_still_stops(tmp_path: Path) -> None:
    """The signal lands while the main thread holds a lock that logging the signal needs (here a log handler's
    own lock; in a process, an Event's condition lock or the like): the stop is set once the lock is free, and the
    process does not wait for itself forever."""
    script = tmp_path / "held.py"
    script.write_text(
        "import logging, os, signal, threading\n"
        "from kai_scheduler.runtime.process import stop_on_signals\n"
        "held = threading.Lock()\n"
        "class Guarded(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        with held:\n"
        "            pass\n"
        "logger = logging.getLogger('kai_scheduler')\n"
        "logger.addHandler(Guarded())\n"
        "logger.setLevel(logging.INFO)\n"
        "stop = threading.Event()\n"
        "with stop_on_signals(stop, bound=30.0):\n"
        "    with held:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        sum(range(100000))  # bytecodes: a handler in the main thread runs here\n"
        "    print('stopped' if stop.wait(10) else 'not stopped', flush=True)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert done.stdout == "stopped\n", (done.stdout, done.stderr)
