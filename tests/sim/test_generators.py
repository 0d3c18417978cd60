"""Generator blocks: distributions, seeds, and one-line errors naming the file line and field."""

from __future__ import annotations

import itertools

import orjson
import pytest

from kai_scheduler.api.errors import ObjectError
from kai_scheduler.sim import sources
from tests.sim.helpers import scenario, simulate

GENERATED = scenario(
    "[]\n",
    nodes=2,
    gpus=8,
    quota_a=8,
    quota_b=8,
    extra="""
generators:
- name: a-train
  queue: a
  count: 12
  arrival: {process: poisson, interval: 2m}
  replicas: {distribution: choice, values: [1, 2, 4], weights: [3, 2, 1]}
  gpus: 1
  duration: {distribution: lognormal, median: 5m, sigma: 0.5, max: 30m}
  owner: {kind: PyTorchJob}
- name: b-infer
  queue: b
  until: 30m
  start: 1m
  arrival: {process: fixed, interval: 10m}
  gpus: {distribution: choice, values: [0.25, 0.5]}
  duration: {distribution: uniform, min: 1m, max: 5m}
""",
)


def test_generated_jobs_follow_their_block() -> None:
    loaded = sources.loads(GENERATED, "gen.yaml", seed=3)
    a = [j for j in loaded.jobs if j.queue == "a"]
    b = [j for j in loaded.jobs if j.queue == "b"]
    assert [j.name for j in a] == [f"a-train-{i}" for i in range(12)]
    assert a[0].submit_at == 0 and all(x.submit_at <= y.submit_at for x, y in itertools.pairwise(a))
    assert all(len(j.task_names) in (1, 2, 4) and 0 <= (j.duration or 0) <= 1800 for j in a)
    assert all(j.owner_kind == "PyTorchJob" for j in a)
    assert [j.submit_at for j in b] == [60, 660, 1260]  # fixed every 10m from 1m, until 30m
    assert all(60 <= (j.duration or 0) <= 300 for j in b)
    fractions = {
        p["metadata"]["annotations"].get("gpu-fraction")
        for p in loaded.objects
        if p["kind"] == "Pod" and p["metadata"]["name"].startswith("b-")
    }
    assert fractions <= {"0.25", "0.5"}


def test_same_seed_same_jobs_and_identical_series() -> None:
    first, second = simulate(GENERATED, seed=5), simulate(GENERATED, seed=5)
    assert orjson.dumps(first.series.to_json()) == orjson.dumps(second.series.to_json())  # NaN-safe
    assert [j.meta for j in first.jobs] == [j.meta for j in second.jobs]
    other = sources.loads(GENERATED, "gen.yaml", seed=6)
    assert [j.submit_at for j in other.jobs] != [j.meta.submit_at for j in first.jobs]


@pytest.mark.parametrize(
    "block, message",
    [
        pytest.param(
            "{name: g, queue: a, count: 1, arrival: {process: fixed, interval: 1m}, "
            "duration: {distribution: gauss, mean: 1m}}",
            "gen.yaml:11: generator g duration.distribution: unknown distribution 'gauss'",
            id="distribution",
        ),
        pytest.param(
            "{name: g, queue: a, count: 1, arrival: {process: burst, interval: 1m}}",
            "gen.yaml:11: generator g arrival.process: unknown arrival process 'burst'",
            id="process",
        ),
        pytest.param(
            "{name: g, queue: a, arrival: {process: fixed, interval: 1m}}",
            "gen.yaml:11: generator g count: give count, until, or both",
            id="endless",
        ),
        pytest.param(
            "{name: g, queue: a, count: 1, arrival: {process: fixed, interval: 1m}, "
            "replicas: {distribution: choice, values: [1, x]}}",
            "generator g replicas.values[1]: expected a non-negative number, got 'x'",
            id="choice value",
        ),
        pytest.param(
            "{name: g, queue: a, count: 1, colour: red, arrival: {process: fixed, interval: 1m}}",
            "generator g colour: unknown field",
            id="unknown field",
        ),
    ],
)
def test_bad_generators_are_one_line_errors(block: str, message: str) -> None:
    text = scenario("[]\n", extra=f"generators:\n- {block}\n")
    with pytest.raises(ObjectError) as err:
        sources.loads(text, "gen.yaml")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
