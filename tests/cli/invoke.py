"""Run `kai` in-process and write its input files: the two steps of every command-line test."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler import cli


def exit_code(argv: list[str]) -> int:
    """`kai argv…`'s exit code, whether `main` returned it or the parser exited with it (a bad flag or value)."""
    try:
        return cli.main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kai argv…` in this process: exit code, stdout, stderr."""
    code = exit_code(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)
