"""The scenario's `shards:` field (docs/scenario-reference.md#shards) and `kai schedule` over several shards."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from kai_scheduler import cli
from kai_scheduler import scenario as scenarios
from kai_scheduler.api import ObjectError

HERE = Path(__file__).parent.parent / "scenarios" / "shards"

BASE = """
nodes: [{name: n, gpus: 2}]
queues: [{name: q}]
"""


def test_shards_are_read_with_their_pool_and_own_config() -> None:
    loaded = scenarios.loads(
        BASE + "shards:\n- {name: a, partitionLabelValue: a, config: {flags: {schedule-period: 2s}}}\n- {name: u}\n"
    )
    assert [(s.name, s.partition_label_value, s.config) for s in loaded.shards] == [
        ("a", "a", {"flags": {"schedule-period": "2s"}}),
        ("u", "", None),
    ]


@pytest.mark.parametrize(
    "shards, words",
    [
        ("- {name: a, partitionLabelValue: a}\n- {name: b, partitionLabelValue: a}", "served by shard 'a' already"),
        ("- {name: a}\n- {name: a, partitionLabelValue: b}", "duplicate shard name 'a'"),
        ("- {name: a, pool: a}", "pool"),
    ],
)
def test_bad_shards_are_one_line_errors_naming_the_field(shards: str, words: str) -> None:
    with pytest.raises(ObjectError) as err:
        scenarios.loads(BASE + "shards:\n" + shards + "\n", "s.yaml")
    assert words in str(err.value) and "\n" not in str(err.value)


def _run(*args: str) -> tuple[int, str, str]:
    out, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errors):
        code = cli.main(list(args))
    return code, out.getvalue(), errors.getvalue()


def test_kai_schedule_says_which_shard_placed_each_pod() -> None:
    code, out, _ = _run("schedule", str(HERE / "two-pools.yaml"), "-o", "json", "--no-progress")
    assert code == 0
    tasks = json.loads(out)["tasks"]
    assert {k: (t["node"], t.get("shard")) for k, t in tasks.items()} == {
        "default/big-a-0": ("", None),
        "default/job-u-0": ("u1", "default"),
        "default/job-u-1": ("u1", "default"),
        "default/small-a-0": ("a1", "pool-a"),
        "default/small-a-1": ("a1", "pool-a"),
    }


def test_kai_simulate_runs_the_shards() -> None:
    code, out, errors = _run("simulate", str(HERE / "two-pools.yaml"), "--no-report", "--no-progress", "-o", "json")
    assert code == 0, errors
    summary = json.loads(out)
    assert summary["jobs"]["never_scheduled"] == 1  # big-a: pool a has 4 GPUs, the free node is the other pool's
    assert summary["queues"]["qa"]["allocated_gpus"] == 4.0 and summary["queues"]["qu"]["allocated_gpus"] == 8.0
