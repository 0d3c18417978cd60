"""Run `kai` in-process and write its input files: the two steps of every command-line test."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kai argv…` in this process: exit code, stdout, stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)
