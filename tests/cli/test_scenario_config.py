"""Which configuration a run on a scenario uses, for every command that runs one: `--config`'s file when given,
else the scenario's own `config:` block, with errors located in the file the configuration came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.dashboard import serve
from kai_scheduler.dashboard.sources import EmbeddedSource
from kai_scheduler.framework.config import ConfigError
from tests.cli.invoke import run as _run
from tests.cli.invoke import write as _write

SCENARIO = """\
name: one pod
nodes:
- {name: n, gpus: 1}
queues:
- name: a
  resources:
    gpu: {quota: 1, overQuotaWeight: 1, limit: -1}
jobs:
- name: j
  queue: a
  template: {gpus: 1}
"""
BAD_ACTIONS = "actions: allocate, shuffle\n"
GOOD_ACTIONS = "actions: allocate\n"

# Each command's argv for a scenario file; its configuration comes after.
COMMANDS = {
    "schedule": lambda path: ["schedule", path, "-o", "json"],
    "explain": lambda path: ["explain", "j", path, "-o", "json"],
    "simulate": lambda path: ["simulate", path, "--no-report", "--no-progress"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_scenarios_config_is_used_and_its_errors_name_the_scenarios_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = _write(tmp_path, SCENARIO + "config:\n  " + BAD_ACTIONS)
    code, out, err = _run(capsys, *COMMANDS[command](path))
    assert code == 2 and out == ""
    assert err.splitlines() == [f"kai: {path}:13: config actions: {_unknown_shuffle()}"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_config_replaces_the_scenarios_and_its_errors_name_the_config_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = _write(tmp_path, SCENARIO + "config:\n  " + GOOD_ACTIONS)
    config = _write(tmp_path, BAD_ACTIONS, "config.yaml")
    code, out, err = _run(capsys, *COMMANDS[command](path), "--config", config)
    assert code == 2 and out == ""
    assert err.splitlines() == [f"kai: {config}:1: config actions: {_unknown_shuffle()}"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_good_config_replaces_a_bad_one_in_the_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = _write(tmp_path, SCENARIO + "config:\n  " + BAD_ACTIONS)
    config = _write(tmp_path, GOOD_ACTIONS, "config.yaml")
    code, _, err = _run(capsys, *COMMANDS[command](path), "--config", config)
    assert code == 0, err


def test_the_dashboards_embedded_cluster_reads_the_same_configuration(tmp_path: Path) -> None:
    path = _write(tmp_path, SCENARIO + "config:\n  " + BAD_ACTIONS)
    with pytest.raises(ConfigError, match=rf"^{path}:13: config actions: unknown action 'shuffle'"):
        serve.embedded(path)
    bad = _write(tmp_path, BAD_ACTIONS, "config.yaml")
    with pytest.raises(ConfigError, match=rf"^{bad}:1: config actions: unknown action 'shuffle'"):
        serve.embedded(_write(tmp_path, SCENARIO), config=bad)
    target = serve.embedded(path, config=_write(tmp_path, GOOD_ACTIONS, "good.yaml"), cycles=1)
    assert isinstance(target.source, EmbeddedSource) and target.source.cluster.config.actions == ("allocate",)


def _unknown_shuffle() -> str:
    return "unknown action 'shuffle'; known: allocate, consolidation, preempt, reclaim, stalegangeviction"
