"""What `kai schedule` and `kai simulate` print: keys by namespace/name, 80-column tables, located config
errors, the --check line, the simulate summary."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.api.duration import describe_duration
from tests.cli.invoke import run as _run
from tests.cli.invoke import write as _write

TWO_NAMESPACES = """\
name: two workers
nodes:
- {name: n, gpus: 1, cpu: "8", memory: 32Gi}
queues:
- {name: a, resources: {gpu: {quota: 1, overQuotaWeight: 1, limit: -1}}}
jobs:
- {name: w, namespace: team-a, queue: a, tasks: [{name: worker, gpus: 1}]}
- {name: w, namespace: team-b, queue: a, tasks: [{name: worker, gpus: 1}]}
"""


# --- namespace/name ----------------------------------------------------------------------------------------------


def test_json_keeps_two_pods_of_one_name_in_two_namespaces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES), "-o", "json")
    assert code == 0, err
    tasks: dict[str, Any] = json.loads(out)["tasks"]
    assert set(tasks) == {"team-a/worker", "team-b/worker"}
    assert sorted(t["status"] for t in tasks.values()) == ["Binding", "Pending"]
    assert {t["job"] for t in tasks.values()} == {"team-a/w", "team-b/w"}


def test_tables_show_the_namespace_when_there_are_several(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, out, _ = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES))
    assert "team-a/worker" in out and "team-b/worker" in out
    single = TWO_NAMESPACES.replace("team-b", "team-a").replace(
        "{name: w, namespace: team-a, queue: a, tasks: [{name: worker",
        "{name: v, namespace: team-a, queue: a, tasks: [{name: other",
        1,
    )
    _, out, _ = _run(capsys, "schedule", _write(tmp_path, single, "single.yaml"))
    assert "team-a/" not in out.split("Not placed")[0]


def test_expect_takes_namespace_slash_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = (
        TWO_NAMESPACES.replace("gpus: 1, cpu", "gpus: 2, cpu")
        + "expect:\n  tasks:\n    team-a/worker: {status: Binding}\n    team-b/worker: {status: Binding}\n"
        "  jobs:\n    team-a/w: {status: Binding}\n"
    )
    code, _, err = _run(capsys, "schedule", _write(tmp_path, text), "--check", "-o", "json")
    assert code == 0, err


def test_a_bare_name_in_two_namespaces_is_a_located_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_NAMESPACES + "expect:\n  tasks:\n    worker: {status: Binding}\n")
    code, _, err = _run(capsys, "schedule", path, "--check")
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{path}:11:" in err and "team-a/worker" in err and "team-b/worker" in err


def test_a_bare_name_in_one_namespace_still_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = TWO_NAMESPACES.replace("gpus: 1, cpu", "gpus: 2, cpu").replace(
        "tasks: [{name: worker, gpus: 1}]}\n", "tasks: [{name: solo, gpus: 1}]}\n", 1
    )
    path = _write(
        tmp_path, text + "expect:\n  tasks:\n    solo: {status: Binding}\n  jobs:\n    team-b/w: {status: Binding}\n"
    )
    code, out, err = _run(capsys, "schedule", path, "--check")
    assert (code, err) == (0, "")
    assert out == f"{path}: OK, 2 expectation(s) hold\n"


# --- 80 columns --------------------------------------------------------------------------------------------------


def test_tables_fit_80_columns_and_cut_no_name(capsys: pytest.CaptureFixture[str]) -> None:
    quickstart = str(Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml")
    code, out, _ = _run(capsys, "schedule", quickstart, "--cycles", "2")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    assert all(line == line.rstrip() for line in out.splitlines())
    # every column of the queue table is named
    header = next(line for line in out.splitlines() if "queue" in line and "deserved" in line)
    assert [c.strip() for c in header.strip("┃").split("┃")] == [
        "queue",
        "parent",
        "resource",
        "deserved",
        "fair share",
        "allocated",
        "requested",
    ]
    # the reason of an eviction reads as one sentence over at most two lines, under its eviction
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if "reclaim " in line and "train-big" in line)
    reason = " ".join(line.strip() for line in lines[first + 1 : first + 3])
    assert reason.startswith("reclaimed by default/pretrain to restore team-b's deserved share")


# --- configuration errors name file:line -------------------------------------------------------------------------


CONFIG_ERRORS = [
    pytest.param("flags:\n  queue-label-keyz: x\n", 2, "unknown flag", id="an unknown flag"),
    pytest.param(
        "actions: allocate\nflags:\n  max-consolidation-preemptees: many\n", 3, "integer", id="a flag of the wrong type"
    ),
    pytest.param("actions: allocate, fly\n", 1, "unknown action 'fly'", id="an unknown action"),
    pytest.param(
        "tiers:\n- plugins:\n  - name: proportion\n  - name: nodeplacement\n    arguments: {gpu: wide}\n",
        5,
        "nodeplacement",
        id="a bad plugin argument",
    ),
    pytest.param("tiers:\n- plugins:\n  - name: nosuch\n", 3, "unknown plugin", id="an unknown plugin"),
    pytest.param("queueDepthPerAction:\n  allocate: 0\n", 2, "positive", id="a bad queue depth"),
]


@pytest.mark.parametrize(("text", "line", "words"), CONFIG_ERRORS)
def test_a_config_file_error_names_the_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, line: int, words: str
) -> None:
    config = _write(tmp_path, text, "conf.yaml")
    code, _, err = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES), "--config", config)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"kai: {config}:{line}: ") and words in err


def test_a_configmap_error_names_the_line_inside_its_config_yaml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    configmap = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kai-config}\ndata:\n  config.yaml: |\n"
        "    actions: allocate\n    flags:\n      nope: 1\n"
    )
    config = _write(tmp_path, configmap, "cm.yaml")
    code, _, err = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES), "--config", config)
    assert code == 2 and err.startswith(f"kai: {config}:8: ") and "nope" in err


def test_a_scenario_config_error_names_the_scenario_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_NAMESPACES + "config:\n  actions: allocate\n  flags:\n    queue-label-keyz: x\n")
    code, _, err = _run(capsys, "schedule", path)
    assert code == 2 and err.startswith(f"kai: {path}:12: ") and "queue-label-keyz" in err


def test_a_simulate_config_error_names_the_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = _write(tmp_path, "\nflags:\n  bogus: 1\n", "conf.yaml")
    code, _, err = _run(capsys, "simulate", _write(tmp_path, TWO_NAMESPACES), "--config", config, "--no-report")
    assert code == 2 and err.startswith(f"kai: {config}:3: ")


# --- simulate summary ----------------------------------------------------------------------------------------------


def test_simulate_summary_reads_as_a_person_would_write_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = (
        TWO_NAMESPACES.replace("gpus: 1}]}", "gpus: 1}], duration: 3h06m}")
        + "- {name: never, queue: a, tasks: [{name: big, gpus: 4}]}\n"
    )
    code, out, _ = _run(capsys, "simulate", _write(tmp_path, text), "--no-report", "--no-progress")
    assert code == 0
    assert "value" not in out and "e+" not in out
    assert "6h12m" in out  # the makespan: two 3h06m jobs one after the other
    assert "\n1 job(s) never scheduled" in out  # no label in front when there is one run


def test_simulate_queue_table_names_each_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One run: a header per figure (was one unnamed column of `allocated / fair share; p50 / p90`)."""
    code, out, _ = _run(capsys, "simulate", _write(tmp_path, TWO_NAMESPACES), "--no-report", "--no-progress")
    assert code == 0
    lines = out.splitlines()
    header = next(line for line in lines if "queue" in line and "allocated" in line)
    assert re.findall(r"[a-z][a-z0-9 ]*[a-z0-9]", header) == [
        "queue",
        "allocated",
        "fair share",
        "wait p50",
        "wait p90",
    ]
    [row] = [line for line in lines if line.startswith("│ a ")]
    assert len([cell for cell in row.split("│") if cell.strip()]) == 5


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "–"),
        (0.0, "0s"),
        (0.25, "250ms"),
        (4.24, "4.2s"),
        (45.4, "45s"),
        (750, "12m30s"),
        (11210, "3h06m"),
        (2 * 86400 + 4 * 3600 + 59, "2d04h"),
        (-90, "-1m30s"),
    ],
)
def test_durations_read_as_hours_and_minutes(seconds: float | None, text: str) -> None:
    assert describe_duration(seconds) == text


def test_simulate_without_matplotlib_says_which_extra_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, _, err = _run(capsys, "simulate", _write(tmp_path, TWO_NAMESPACES), "--no-progress")
    assert code == 2 and "kai-scheduler[sim]" in err and "--no-report" in err


# --- progress ----------------------------------------------------------------------------------------------------


def test_a_step_over_the_mark_says_what_it_does_and_how_long_it_took() -> None:
    import io
    import time

    from kai_scheduler.cli import phases

    out = io.StringIO()
    with phases.step("loading big.yaml", after=0.05, out=out):
        time.sleep(0.3)
    first, second = out.getvalue().splitlines()
    assert first == "kai: loading big.yaml …"
    assert second.startswith("kai: loading big.yaml: ") and second.endswith(" s")
    quiet = io.StringIO()
    with phases.step("quick", after=5.0, out=quiet):
        pass
    assert quiet.getvalue() == ""


def test_kai_schedule_reports_its_slow_steps_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kai_scheduler.cli import phases

    monkeypatch.setattr(phases, "NOTICE_AFTER", 0.0)  # every step counts as slow
    code, out, err = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES), "-o", "json")
    assert code == 0 and json.loads(out)["tasks"]
    lines = err.splitlines()
    for what in ("loading", "building the cluster", "cycle 1 of 1"):
        assert any(line.startswith(f"kai: {what}") and line.endswith(" s") for line in lines), (what, lines)
    code, _, err = _run(capsys, "schedule", _write(tmp_path, TWO_NAMESPACES), "-o", "json", "--no-progress")
    assert err == ""


# --- --explain ---------------------------------------------------------------------------------------------------

OVER_LIMIT = """\
name: over the limit
nodes:
- {name: n, gpus: 1, cpu: "8", memory: 32Gi}
queues:
- {name: a, resources: {gpu: {quota: 1, overQuotaWeight: 1, limit: 1}}}
jobs:
- {name: w, namespace: team-a, queue: a, tasks: [{name: worker, gpus: 1}]}
- {name: w, namespace: team-b, queue: a, tasks: [{name: worker, gpus: 1}]}
"""


def test_explain_names_the_plugin_behind_each_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, OVER_LIMIT)
    _, out, _ = _run(capsys, "schedule", path, "-o", "json", "--explain")
    [reasons] = json.loads(out)["unplaced"].values()
    assert [r.rsplit(" [", 1)[1] for r in reasons] == ["rejected by allocate]", "rejected by proportion]"]
    assert reasons[1].startswith("queue a would exceed its limit of 1 GPU")
    _, out, _ = _run(capsys, "schedule", path, "-o", "json")
    [plain] = json.loads(out)["unplaced"].values()
    assert [r.rsplit(" [", 1)[0] for r in reasons] == plain and not any("rejected by" in r for r in plain)


NO_GPU_NODE = """\
name: no GPU node
nodes:
- {name: n1, gpus: 0, cpu: "8", memory: 32Gi}
- {name: n2, gpus: 0, cpu: "8", memory: 32Gi}
- {name: n3, gpus: 0, cpu: "8", memory: 32Gi}
queues:
- {name: a, resources: {gpu: {quota: 1, overQuotaWeight: 1, limit: -1}}}
jobs:
- {name: notebook, queue: a, tasks: [{name: main, gpus: 1}]}
"""


def test_explain_keeps_the_plugin_tag_whole_and_with_its_reason_at_80_columns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, out, _ = _run(capsys, "schedule", _write(tmp_path, NO_GPU_NODE), "--explain")
    lines = out.split("Not placed", 1)[1].split("cycle 1:")[0].splitlines()
    tagged = [line for line in lines if "[" in line or "]" in line]
    assert len(tagged) == 2 and len(lines) > 4, lines  # two reasons, one of them wrapped
    assert all(re.fullmatch(r" {6}\S.* \[rejected by [a-z]+\]", line) and len(line) <= 80 for line in tagged), lines
