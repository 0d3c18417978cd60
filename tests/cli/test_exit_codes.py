"""A user's mistake is one line and exit 2; a bug is a traceback and exit 70, never dressed as the user's mistake."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kai_scheduler import cli
from kai_scheduler.api.errors import UserError


def test_a_bad_flag_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("nodes: []\n")
    assert cli.main(["schedule", str(scenario), "--cycles", "0"]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err == "kai: --cycles: must be at least 1, got 0\n"


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["simulate", "s.yaml", "--until", "2hours"],
            "kai: --until: expected a duration such as 90s or 2h, got '2hours' (see kai simulate --help)",
        ),
        (
            ["schedule", "s.yaml", "--cycles", "abc"],
            "kai: --cycles: invalid value 'abc': want an integer (see kai schedule --help)",
        ),
        (["schedule"], "kai: the following arguments are required: file (see kai schedule --help)"),
        (["schedul"], "kai: COMMAND: invalid choice: 'schedul' (choose from 'schedule', "),
        (["schedule", "s.yaml", "-o", "xml"], "kai: --output/-o: invalid choice: 'xml' (choose from "),
        # A flag only by its whole name (no argparse abbreviation of --cycles, --kubeconfig).
        (["schedule", "s.yaml", "--cycle", "3"], "kai: unrecognized arguments: --cycle 3 (see kai --help)"),
        (["scheduler", "--kubeconf", "k"], "kai: unrecognized arguments: --kubeconf k (see kai --help)"),
        (["--verb", "schedule", "s.yaml"], "kai: unrecognized arguments: --verb (see kai --help)"),
    ],
)
def test_a_flag_argparse_rejects_is_one_line_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No usage block before the reason: the one line says what is wrong and where the flags are listed."""
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line), err


def test_a_missing_file_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["schedule", str(tmp_path / "absent.yaml")]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("kai: ") and err.count("\n") == 1 and "Traceback" not in err


def _run_raising(monkeypatch: pytest.MonkeyPatch, error: Exception) -> int:
    def run(args: argparse.Namespace) -> int:
        raise error

    monkeypatch.setattr(cli.schedule, "run", run)  # what `kai schedule` calls, read when the parser is built
    return cli.main(["schedule", "x.yaml"])


def test_a_user_error_raised_anywhere_is_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run_raising(monkeypatch, UserError("queue q: quota: want a number")) == 2
    assert capsys.readouterr().err == "kai: queue q: quota: want a number\n"


@pytest.mark.parametrize(
    "bug",
    [ValueError("task t is not evictable in status Pending"), IndexError("index 3 is out of bounds"), KeyError("gpu")],
)
def test_a_bug_is_a_traceback_and_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bug: Exception
) -> None:
    assert _run_raising(monkeypatch, bug) == cli.EXIT_BUG == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert (
        err.rstrip("\n")
        .splitlines()[-1]
        .startswith(f"kai: internal error (a bug in kai, not in your input): {type(bug).__name__}: ")
    )
