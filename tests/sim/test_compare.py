"""`kai simulate --compare`: every replay starts from the scenario as loaded, so a configuration gives the same
figures alone, first or second in a comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "simulate-quickstart.yaml"
WITH_RECLAIM = "actions: allocate, consolidation, reclaim, preempt\n"
ALLOCATE_ONLY = "actions: allocate\n"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(["simulate", str(QUICKSTART), *args, "-o", "json", "--no-progress", "--no-report"]) == 0
    return json.loads(capsys.readouterr().out)


def _configs(tmp_path: Path) -> tuple[str, str]:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(WITH_RECLAIM)
    b.write_text(ALLOCATE_ONLY)
    return str(a), str(b)


def test_a_configuration_compared_with_itself_gives_identical_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = _configs(tmp_path)
    out = _json(capsys, "--compare", a, a)
    assert list(out) == ["a (A)", "a (B)"]  # one key per replay: neither hides the other
    first, second = out.values()
    assert first == second
    assert first["jobs"]["completed"] == first["jobs"]["submitted"] == 27


def test_the_second_configuration_of_a_comparison_replays_as_it_does_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _configs(tmp_path)
    alone = {name: _json(capsys, "--config", path) for name, path in (("a", a), ("b", b))}
    compared = _json(capsys, "--compare", a, b)
    assert compared == alone
    assert alone["a"] != alone["b"]  # the two configurations do differ on this scenario


def test_clashing_file_names_are_told_apart_by_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for sub in ("x", "y"):
        (tmp_path / sub / "cfg.yaml").write_text(ALLOCATE_ONLY)
    paths = [str(tmp_path / "x" / "cfg.yaml"), str(tmp_path / "y" / "cfg.yaml")]
    assert list(_json(capsys, "--compare", *paths)) == paths
