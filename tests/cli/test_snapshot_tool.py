"""`kai snapshot-tool --filename snapshot.zip` (KAI's tool name and flags): `kai schedule` on the zip, its
`--verbosity` as the log level, and its errors as one line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kai_scheduler.cli import main
from kai_scheduler.scenario import snapshot_zip
from tests.builders import node, pod, podgroup, queue


def write_zip(tmp_path: Path) -> Path:
    raw = {
        "nodes": [node("n1", gpus=2)],
        "queues": [queue("q")],
        "podGroups": [podgroup("j")],
        "pods": [pod("j-0", group="j", gpus=1)],
    }
    path = tmp_path / "snapshot.zip"
    path.write_bytes(snapshot_zip.encode({"actions": "allocate"}, {}, raw))
    return path


@pytest.fixture(autouse=True)
def root_level() -> Iterator[None]:
    root = logging.getLogger()
    kept = root.level
    yield
    root.setLevel(kept)


@pytest.mark.parametrize(("verbosity", "level"), [("5", logging.DEBUG), ("4", logging.INFO), ("2", logging.WARNING)])
def test_it_schedules_the_zip_at_the_verbosity_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verbosity: str, level: int
) -> None:
    path = write_zip(tmp_path)
    argv = ["snapshot-tool", "--filename", str(path), "--verbosity", verbosity, "-o", "json", "--no-progress"]
    assert main(argv) == 0
    assert logging.getLogger().level == level
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert (tasks["ns/j-0"]["status"], tasks["ns/j-0"]["node"]) == ("Binding", "n1")


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot-tool", "--filename", str(tmp_path / "none.zip")]) == 2
    assert capsys.readouterr().err == f"kai: {tmp_path}/none.zip: no such file\n"
