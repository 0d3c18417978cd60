"""tests/e2e/run_real.py, the runner of `make test`'s e2e step, with its clusters and pytest runs played by stand-ins:
the modes run at once, each run's output is printed whole (never interleaved), each cluster stops when its run
ends, a run past its time is stopped, the exit code is the first failing mode's, and the mock run joins with
KAI_E2E_WITH_MOCK=1 (alone without cluster.sh)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import realkube
from tests.e2e import run_real

# Each stand-in run prints three lines with pauses between them, so two runs at once would interleave if their
# output went straight to the terminal; then it exits with the code its mode is given. argv: the pause and the
# code of the bare run (and the mock's), then those of the run with controllers. SIGINT (the runner's first
# stop) interrupts it, as it does pytest, even where the test process was started ignoring it (an xdist worker).
SCRIPT = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as pytest's: a pytest-xdist worker ignores SIGINT
name = os.environ.get("KAI_E2E_CONTROLLERS", "mock")
pause, code = (sys.argv[2], sys.argv[4]) if name == "1" else (sys.argv[1], sys.argv[3])
for i in range(3):
    print(f"{name} line {i}", flush=True)
    time.sleep(float(pause))
sys.exit(int(code))
"""


@pytest.fixture
def clusters(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, float, float]]:
    """Stand-in clusters: (controllers?, started, stopped) of each, in the order they stop."""
    stopped: list[tuple[str, float, float]] = []

    @contextlib.contextmanager
    def cluster(*, controllers: bool = False) -> Iterator[realkube.Cluster]:
        started = time.monotonic()
        try:
            yield realkube.Cluster(str(tmp_path / f"kubeconfig-{controllers}"), tmp_path, controllers)
        finally:
            stopped.append(("controllers" if controllers else "bare", started, time.monotonic()))

    monkeypatch.setattr(realkube, "cluster", cluster)
    monkeypatch.setattr(realkube, "unavailable", lambda: None)
    monkeypatch.delenv("KAI_E2E_SERIAL", raising=False)
    monkeypatch.delenv("KAI_E2E_WITH_MOCK", raising=False)
    return stopped


def _runs(
    monkeypatch: pytest.MonkeyPatch, pause: float, bare: int, controllers: int, controllers_pause: float = -1
) -> None:
    """The stand-in runs: `pause` between their lines (`controllers_pause` for that mode, when given); exit `bare`
    (and the mock) or `controllers`."""
    slow = pause if controllers_pause < 0 else controllers_pause
    monkeypatch.setattr(
        run_real,
        "command",
        lambda args: [sys.executable, "-c", SCRIPT, str(pause), str(slow), str(bare), str(controllers)],
    )


def test_the_modes_run_at_once_each_output_whole_and_each_cluster_stopped_when_its_run_ends(
    clusters: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _runs(monkeypatch, 0.1, 0, 0, controllers_pause=0.8)
    started = time.monotonic()
    assert run_real.main([]) == 0
    took = time.monotonic() - started
    assert took < 2.4 + 0.3 + 1.0, f"runs of 0.3 s and 2.4 s took {took:.1f} s together: not at once"
    out = capfd.readouterr().out.splitlines()
    for name in ("0", "1"):
        mine = [i for i, line in enumerate(out) if line.startswith(f"{name} line")]
        assert len(mine) == 3 and mine == list(range(mine[0], mine[0] + 3)), f"run {name} interleaved:\n{out}"
    assert sum("exit 0 after" in line for line in out) == 2
    # the bare cluster stopped when its short run ended, not with the other
    assert [name for name, _, _ in clusters] == ["bare", "controllers"]
    (_, _, bare_down), (_, _, controllers_down) = clusters
    assert bare_down + 1.0 < controllers_down, "the bare cluster was kept until the other run ended"


def test_the_exit_code_is_the_first_failing_modes_in_order(
    clusters: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(monkeypatch, 0.0, 0, 3)
    assert run_real.main([]) == 3
    _runs(monkeypatch, 0.0, 2, 3)
    assert run_real.main([]) == 2
    _runs(monkeypatch, 0.0, 5, 5)  # pytest's "nothing collected" (a filter matched no test) is no failure
    assert run_real.main([]) == 0


def test_a_run_past_its_time_is_stopped_and_fails(
    clusters: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _runs(monkeypatch, 30.0, 0, 0)
    monkeypatch.setattr(run_real, "RUN_TIMEOUT", 1.0)
    started = time.monotonic()
    assert run_real.main([]) == 124
    assert time.monotonic() - started < 20
    assert "no result after 1 s; stopping the run" in capfd.readouterr().out


def test_with_the_mock_three_runs_and_without_cluster_sh_the_mock_alone(
    clusters: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _runs(monkeypatch, 0.0, 0, 0)
    monkeypatch.setenv("KAI_E2E_WITH_MOCK", "1")
    assert run_real.main([]) == 0
    out = capfd.readouterr().out
    assert "e2e on the mock API server: exit 0" in out and "mock line 2" in out
    assert len(clusters) == 2
    monkeypatch.setattr(realkube, "unavailable", lambda: "no cluster.sh here")
    assert run_real.main([]) == 0
    out = capfd.readouterr().out
    assert "skipped: no cluster.sh here" in out and "e2e on the mock API server: exit 0" in out
    assert len(clusters) == 2, "a cluster started without cluster.sh"
    monkeypatch.delenv("KAI_E2E_WITH_MOCK")
    assert run_real.main([]) == 0
    assert "mock line" not in capfd.readouterr().out


def test_serial_runs_one_mode_after_the_other(
    clusters: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(monkeypatch, 0.2, 0, 4)
    monkeypatch.setenv("KAI_E2E_SERIAL", "1")
    assert run_real.main([]) == 4
    (first, _, first_down), (second, second_up, _) = clusters
    assert (first, second) == ("bare", "controllers") and second_up >= first_down


@pytest.mark.parametrize("serial", ["0", "1"])
def test_split_each_run_is_told_its_share_and_without_cluster_sh_the_mock_takes_every_test(
    clusters: list[tuple[str, float, float]],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    serial: str,
) -> None:
    shown = "import os; print('share', os.environ.get('KAI_E2E_CONTROLLERS', 'mock'), os.environ.get('KAI_E2E_RUN'))"
    monkeypatch.setattr(run_real, "command", lambda args: [sys.executable, "-c", shown])
    monkeypatch.setenv("KAI_E2E_SERIAL", serial)
    monkeypatch.setenv("KAI_E2E_WITH_MOCK", "1")
    monkeypatch.setenv("KAI_E2E_SPLIT", "1")
    monkeypatch.setenv("KAI_E2E_RUN", "bare")  # the caller's own is never passed on
    assert run_real.main([]) == 0
    shares = sorted(line for line in capfd.readouterr().out.splitlines() if line.startswith("share "))
    assert shares == ["share 0 bare", "share 1 controllers", "share mock mock"]
    monkeypatch.setattr(realkube, "unavailable", lambda: "no cluster.sh here")
    assert run_real.main([]) == 0
    assert [line for line in capfd.readouterr().out.splitlines() if line.startswith("share ")] == ["share mock None"]
    monkeypatch.delenv("KAI_E2E_SPLIT")
    monkeypatch.setattr(realkube, "unavailable", lambda: None)
    assert run_real.main([]) == 0
    assert "share 0 None" in capfd.readouterr().out
