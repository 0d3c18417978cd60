"""`kai simulate`'s `generators:` with one field wrong: the mutation walk (`mutations.py`) over a scenario's
first generator, run by `kai simulate`: it runs, or is one line naming the file (and line) and the field, exit 2;
never a traceback, never a run that does not return. The table keeps each case the fuzzing found.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler import cli
from tests.badobj import mutations as m

JSON = dict[str, Any]
BOUND = 60.0  # seconds: a run here takes well under one


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = cli.main(["simulate", *args, "--no-report", "--no-progress", "--until", "10m"])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


GENERATED: JSON = {
    "name": "g",
    "nodes": [{"name": "n", "count": 2, "gpus": 8, "cpu": "64", "memory": "512Gi"}],
    "queues": [{"name": "a"}],
    "generators": [
        {
            "name": "x",
            "queue": "a",
            "start": "1m",
            "until": "20m",
            "count": 5,
            "arrival": {"process": "poisson", "interval": "2m"},
            "replicas": {"distribution": "choice", "values": [1, 2], "weights": [2, 1]},
            "gpus": {"distribution": "lognormal", "median": 1, "sigma": 0.5, "max": 4},
            "duration": {"distribution": "normal", "mean": "5m", "stddev": "1m", "min": "1m"},
            "cpu": "4",
            "memory": "8Gi",
        },
        {
            "name": "y",
            "queue": "a",
            "count": 3,
            "arrival": {"process": "uniform", "min": "1m", "max": "3m"},
            "replicas": 1,
            "gpus": {"distribution": "exponential", "mean": 0.5},
            "duration": "3m",
        },
    ],
}
GENERATOR_CHANGES = [
    mu for mu in m.mutations(GENERATED, m.BAD_VALUES + m.YAML_ONLY) if mu.path[:2] == ("generators", 0)
]


def _run_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: JSON) -> tuple[int, list[str]]:
    """`kai simulate` on `doc`, failing (not hanging) if it does not return within BOUND seconds: a generator that
    never stops making jobs is one of the cases. The run is left on a daemon thread then."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    done: list[tuple[int, list[str]] | BaseException] = []

    def run() -> None:
        try:
            done.append(_simulate(capsys, str(path)))
        except BaseException as err:  # handed to the test's thread
            done.append(err)

    thread = threading.Thread(target=run, name="kai simulate", daemon=True)
    thread.start()
    thread.join(BOUND)
    assert done, f"kai simulate did not return within {BOUND}s"
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=st.sampled_from(GENERATOR_CHANGES))
def test_one_bad_generator_field_runs_or_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutation: m.Mutation
) -> None:
    code, lines = _run_scenario(tmp_path, capsys, m.apply(GENERATED, mutation))
    assert code in (0, cli.EXIT_USER_ERROR), (mutation, lines)
    if code:
        assert len(lines) == 1 and lines[0].startswith(f"kai: {tmp_path}/scenario.yaml"), (mutation, lines)


def _changed(*changes: tuple[tuple[str | int, ...], Any]) -> JSON:
    doc = GENERATED
    for path, value in changes:
        doc = m.apply(doc, m.Mutation(path, value))
    return doc


@pytest.mark.parametrize(
    "doc, words",
    [
        pytest.param(
            _changed((("generators", 0, "start"), math.nan)),
            "generator x start: expected a finite duration, got nan",
            id="a start of .nan (was exit 70: an arrival at nan s)",
        ),
        pytest.param(
            _changed((("generators", 0, "replicas", "values", 0), math.inf)),
            "generator x replicas.values[0]: expected a non-negative number, got inf",
            id="a choice of .inf (was exit 70: OverflowError)",
        ),
        pytest.param(
            _changed((("generators", 0, "replicas", "weights", 0), math.inf)),
            "generator x replicas.weights[0]: expected a non-negative number, got inf",
            id="a weight of .inf (was exit 70: probabilities contain NaN)",
        ),
        pytest.param(
            _changed((("generators", 1, "arrival", "max"), math.inf)),
            "generator y arrival.max: expected a finite duration, got inf",
            id="a uniform arrival up to .inf (was exit 70: OverflowError)",
        ),
        pytest.param(
            _changed((("generators", 0, "count"), m.REMOVE), (("generators", 0, "arrival", "interval"), 0)),
            "generator x until: makes more than 100000 jobs",
            id="until with arrivals 0s apart and no count (never returned)",
        ),
        pytest.param(
            _changed((("generators", 0, "duration"), {"distribution": "exponential", "mean": 1e308})),
            "generator x duration: drew inf: the distribution's parameters are too large",
            id="a draw past what a float holds (was exit 70: OverflowError)",
        ),
    ],
)
def test_a_bad_generator_found_by_fuzzing_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: JSON, words: str
) -> None:
    code, lines = _run_scenario(tmp_path, capsys, doc)
    assert code == cli.EXIT_USER_ERROR and len(lines) == 1, lines
    assert lines[0].startswith(f"kai: {tmp_path}/scenario.yaml:") and words in lines[0], lines
