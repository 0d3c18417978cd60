"""Scenario files as tests: every `tests/scenarios/**/*.yaml` is one item running `kai schedule FILE --check`.

The idea of SimPy's `docs/conftest.py` (an example with its expected output is a test): a scenario's `expect:`
block is its golden output. The item calls the `kai` entry point in-process, exactly as the command line does,
and fails with the mismatch lines as a diff (`-` expected, `+` got). A file without `expect:` is an error, not
a pass: a scenario that checks nothing tests nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kai_scheduler import cli

HERE = Path(__file__).parent
MISMATCH = re.compile(r"^(?P<what>.*?): expected (?P<want>.*), got (?P<got>.*)$")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    return ScenarioFile.from_parent(parent, path=file_path) if file_path.suffix == ".yaml" else None


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield ScenarioItem.from_parent(self, name=self.path.relative_to(HERE).as_posix())


class ScenarioItem(pytest.Item):
    def setup(self) -> None:
        data = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not data.get("expect"):
            pytest.fail(f"{self.name}: no `expect:` block; a scenario test must say what comes out", pytrace=False)

    def runtest(self) -> None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["schedule", str(self.path), "--check", "--output", "json"])
        if code == 0:
            return
        prefix = f"{self.path}: "
        lines = [line.removeprefix(prefix) for line in err.getvalue().splitlines()]
        if code != 1:  # bad input: the one-line error of `kai`
            pytest.fail(f"kai exited {code}:\n" + "\n".join(lines), pytrace=False)
        pytest.fail("\n".join([*map(_diff, lines), *_decisions(out.getvalue())]), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"scenario {self.name}"


def _diff(line: str) -> str:
    """`task a: expected status Binding, got Pending` → `-task a: status Binding` / `+task a: Pending`."""
    m = MISMATCH.match(line)
    return f"-{m['what']}: {m['want']}\n+{m['what']}: {m['got']}" if m else f"!{line}"


def _decisions(output: str) -> list[str]:
    """What the cycle did, for context: each task's status before → after and node, unplaced jobs' reasons."""
    try:
        result = json.loads(output)
    except ValueError:
        return []
    rows = [f"  {name}: {t['before']} -> {t['status']} {t['node'] or '-'}" for name, t in result["tasks"].items()]
    rows += [f"  {job}: {'; '.join(reasons)}" for job, reasons in result["unplaced"].items()]
    return ["decisions:", *rows]
