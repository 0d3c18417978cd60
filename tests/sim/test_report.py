"""The HTML report holds each plot; the series files are there; `kai simulate` on the command line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kai_scheduler.cli import main
from kai_scheduler.sim import report
from tests.sim.helpers import scenario, simulate

SMALL = scenario("""
- {name: one, queue: a, duration: 60s, replicas: 2, template: {gpus: 1}}
- {name: two, queue: b, submitAt: 30s, duration: 60s, replicas: 1, template: {gpus: 0.5}}
""")
JSON_KEYS = {"makespan_seconds", "gpu_allocation_ratio", "jobs", "wait_seconds", "evictions", "queues"}


def test_the_report_has_every_plot_and_the_series(tmp_path: Path) -> None:
    path = report.write([simulate(SMALL)], tmp_path)
    text = path.read_text()
    for anchor in report.PLOTS:
        assert f"id={anchor}>" in text
    assert text.count("data:image/png;base64,") >= len(report.PLOTS)
    assert "<script" not in text and "http" not in text.replace("http-equiv", "")  # self-contained
    with open(tmp_path / "series.csv", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0][:3] == ["time", "allocated_gpus", "allocation_ratio"] and len(rows) > 3
    series = json.loads((tmp_path / "series.json").read_text())
    assert set(series) == {"time", "cluster", "queues"} and set(series["queues"]) == {"a", "b"}
    assert "test" in json.loads((tmp_path / "summary.json").read_text())


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_cli_json_output_has_the_issue_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario_file = _write(tmp_path, "small.yaml", SMALL)
    assert main(["simulate", str(scenario_file), "-o", "json", "--no-progress", "--out", str(tmp_path / "r")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == JSON_KEYS
    assert set(out["jobs"]) == {"submitted", "completed", "unfinished", "never_scheduled"}
    assert set(out["wait_seconds"]) == {"p50", "p90", "p99"}
    assert set(out["queues"]["a"]) == {"wait_seconds", "allocated_gpus", "fair_share_gpus"}
    assert (tmp_path / "r" / "report.html").is_file()


def test_cli_compare_puts_two_configurations_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario_file = _write(tmp_path, "small.yaml", SMALL)
    spread = _write(
        tmp_path,
        "spread.yaml",
        "tiers:\n- plugins:\n  - name: proportion\n  - name: nodeplacement\n    arguments: {gpu: spread}\n",
    )
    binpack = _write(
        tmp_path,
        "binpack.yaml",
        "tiers:\n- plugins:\n  - name: proportion\n  - name: nodeplacement\n    arguments: {gpu: binpack}\n",
    )
    code = main(
        [
            "simulate",
            str(scenario_file),
            "--compare",
            str(spread),
            str(binpack),
            "-o",
            "json",
            "--no-progress",
            "--out",
            str(tmp_path / "cmp"),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"spread", "binpack"} and all(set(v) == JSON_KEYS for v in out.values())
    text = (tmp_path / "cmp" / "report.html").read_text()
    assert "Per-queue share vs fair share: spread" in text and "Per-queue share vs fair share: binpack" in text
    assert (tmp_path / "cmp" / "series-spread.csv").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["simulate"], "kai: simulate: give a scenario FILE", id="nothing to replay"),
        pytest.param(["simulate", "--trace", "x.csv"], "kai: --trace needs --nodes", id="trace without nodes"),
        pytest.param(["simulate", "missing.yaml"], "kai: missing.yaml: no such file", id="missing file"),
    ],
)
def test_cli_user_errors_are_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err


def test_the_queue_table_of_one_run_names_its_columns_plainly_with_gpus_to_two_decimals(tmp_path: Path) -> None:
    run = simulate(SMALL)
    text = report.write([run], tmp_path).read_text()
    queues = text[text.index("<h2>Queues</h2>") : text.index("GPUs, time-weighted means")]
    assert "<th>allocated</th>" in queues and f"{run.name}: allocated" not in queues
    assert f"<th>{run.name}</th>" not in text  # the summary's column is not headed by the title again
    assert "<tr><th></th><th></th></tr>" not in text  # nor by a blank row
    allocated = run.summary.queues["a"]["allocated_gpus"]
    assert f"<td>{allocated:.2f}</td>" in queues
    assert report.gpus(10.1) == "10.10" and report.gpus(2.5) == "2.50" and report.gpus(1234.5) == "1,234.50"
    assert report.gpus(None) == "–"


def test_a_replay_stopped_at_until_says_when_as_a_duration() -> None:
    run = simulate(SMALL.replace("duration: 60s, replicas: 2", "duration: 2h, replicas: 2"), until=4500.0)
    line = report.unfinished_line(run)
    assert "stopped at 1h15m" in line and "4,500 s" not in line, line


def test_percentiles_of_nothing_say_so_in_words() -> None:
    """A replay without gangs has no gang wait: the summary says so rather than '– / – / –'."""
    run = simulate(scenario("- {name: one, queue: a, duration: 60s, replicas: 1, template: {gpus: 1}}\n"))
    rows = dict(report.summary_rows(run))
    assert run.summary.details()["gang_wait_seconds"]["p50"] is None  # SMALL's jobs: no gang
    assert rows["gang wait p50 / p90 / p99"] == "no gang job started"
    assert rows["wait p50 / p90 / p99"].count(" / ") == 2
