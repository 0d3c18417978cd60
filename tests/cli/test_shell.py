"""`kai` as a shell runs it: a separate process, a real pipe, a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TINY = """\
name: tiny
nodes:
- {name: n, gpus: 2, cpu: "8", memory: 32Gi}
queues:
- {name: q, resources: {gpu: {quota: 2, overQuotaWeight: 1, limit: -1}}}
jobs:
- {name: j, queue: q, count: 40, replicas: 1, template: {gpus: 1}, duration: 1m}
"""


def _kai(*argv: str) -> list[str]:
    return [sys.executable, "-m", "kai_scheduler.cli", *argv]


def _closed_reader(argv: list[str]) -> tuple[int, str]:
    """Run with standard output a pipe whose reader has gone (as `| head` once it has its lines)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(
            ["schedule", str(EXAMPLES / "quickstart.yaml"), "-o", "json", "--no-progress"], id="schedule -o json"
        ),
        pytest.param(["schedule", str(EXAMPLES / "quickstart.yaml"), "--no-progress"], id="schedule tables"),
        pytest.param(["simulate", "TINY", "-o", "json", "--no-report", "--no-progress"], id="simulate -o json"),
    ],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, argv: list[str]) -> None:
    """Nothing on standard error but what the command says anyway: no progress (a step over a second, as on a
    loaded machine, says so), so nothing of the broken pipe."""
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(TINY, encoding="utf-8")
    code, err = _closed_reader(_kai(*(str(tiny) if a == "TINY" else a for a in argv)))
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err == ""
    assert code == 141  # 128 + SIGPIPE, what a shell shows for a Unix tool cut off by `head`


def test_head_takes_the_first_line() -> None:
    """The whole pipeline as the shell runs it: `kai … -o json | head -1`."""
    command = " ".join(_kai("schedule", str(EXAMPLES / "quickstart.yaml"), "-o", "json")) + " | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.stdout == "{\n"
    assert "Traceback" not in done.stderr


def test_the_command_line_imports_no_heavy_library_before_a_command_runs() -> None:
    """`kai --help` must start quickly: plotting, certificates, numpy and the Kubernetes client load only when
    the command that needs them runs."""
    heavy = ("matplotlib", "cryptography", "numpy", "kubernetes", "prometheus_client", "rich")
    code = f"import sys, kai_scheduler.cli as c; c.parser(); print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == []


def test_version() -> None:
    done = subprocess.run(_kai("--version"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    name, _, number = done.stdout.strip().partition(" ")
    assert name == "kai" and number and number[0].isdigit()
