"""`kai explain JOB FILE` in-process: text at 80 columns in a pipe, the JSON shape, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.invoke import run as _run
from tests.cli.invoke import write as _write
from tests.cli.test_schedule_cli import CLASSED_NODE_AND_QUEUE, CLASSED_POD

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "examples" / "quickstart.yaml")


@pytest.mark.parametrize("job", ["notebook", "pretrain", "train-big", "infer", "default/eval", "eval-1"])
def test_text_fits_80_columns_and_has_no_terminal_codes(capsys: pytest.CaptureFixture[str], job: str) -> None:
    code, out, err = _run(capsys, "explain", job, QUICKSTART)
    assert code == 0 and err == ""
    assert out.startswith("Job default/") and "Verdict: " in out
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    assert "\x1b" not in out


def test_json_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "explain", "pretrain", QUICKSTART, "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["schemaVersion"] == 1 and data["job"] == "default/pretrain"
    assert set(data) >= {
        "queue", "state", "pods", "summary", "problems", "queues", "order", "nodePools", "victimActions",
        "threats", "protection", "nextCycle",
    }  # fmt: skip
    [pool] = data["nodePools"]
    assert pool["jobPool"] and pool["tasks"][0]["closest"][0]["name"] == "gpu-node-2"
    reclaim = next(v for v in data["victimActions"] if v["action"] == "reclaim")
    assert reclaim["possible"] and reclaim["victims"][0]["job"] == "default/train-big"
    assert {v["action"] for v in data["nextCycle"]["madeRoom"]} == {"reclaim"}


ERRORS = [
    pytest.param(["explain", "nope", QUICKSTART], "no PodGroup, pod or workload named 'nope'", id="an unknown job"),
    pytest.param(["explain", "eval", QUICKSTART, "-n", "elsewhere"], "namespace 'elsewhere' has none", id="unknown ns"),
    pytest.param(["explain", "a/b/c", QUICKSTART], "want NAME or NAMESPACE/NAME", id="a malformed name"),
    pytest.param(["explain", "eval", QUICKSTART, "--kubeconfig", "k"], "not both", id="a file and a cluster"),
    pytest.param(["explain", "eval", QUICKSTART, "--nodes", "0"], "--nodes", id="no nodes to show"),
    pytest.param(["explain", "eval", "/nonexistent.yaml"], "nonexistent.yaml", id="a missing file"),
]


@pytest.mark.parametrize("argv, words", ERRORS)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kai: ") and words in err, err


def test_an_unreadable_kubeconfig_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, "not: [a kubeconfig", "kubeconfig")
    code, _, err = _run(capsys, "explain", "eval", "--kubeconfig", path)
    assert code == 2 and err.count("\n") == 1 and "--kubeconfig" in err, err


@pytest.mark.parametrize("job", ["notebook", "train-big"])
def test_the_docs_show_what_the_command_prints(capsys: pytest.CaptureFixture[str], job: str) -> None:
    """docs/explain.md quotes `kai explain JOB examples/quickstart.yaml` whole: it must stay what is printed."""
    _, out, _ = _run(capsys, "explain", job, QUICKSTART)
    doc = (ROOT / "docs" / "explain.md").read_text(encoding="utf-8")
    assert f"$ kai explain {job} examples/quickstart.yaml\n{out}```" in doc


@pytest.mark.parametrize("priority_class, preemptible", [("build", False), ("train", True)])
def test_a_manifest_pod_is_explained_with_the_shipped_class_it_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, priority_class: str, preemptible: bool
) -> None:
    text = CLASSED_NODE_AND_QUEUE % 1 + CLASSED_POD % ("p", priority_class, "", "Pending")
    code, out, err = _run(capsys, "explain", "p", _write(tmp_path, text, "manifest.yaml"), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["preemptible"] is preemptible
