"""The quickstart that `make demo` shows keeps doing what its comments and `expect:` block say."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_expectations_hold(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["schedule", str(EXAMPLES / "quickstart.yaml"), "--check", "-o", "json"])
    assert code == 0, capsys.readouterr().err
