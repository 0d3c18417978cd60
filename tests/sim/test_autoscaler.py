"""The simulator's autoscaler model: pending fractional pods get scaling pods, the model adds nodes of the given
shape after the delay, the pods run there, and idle added nodes go after the scale-down delay."""

from __future__ import annotations

import pytest

from kai_scheduler.api.errors import UserError
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, report, sources

BASE = """
name: fractions
nodes:
  - {name: base, gpus: 1, gpuMemory: 81920}
queues:
  - {name: team, resources: {gpu: {quota: -1, limit: -1, overQuotaWeight: 1}}}
jobs:
  - {name: fill, queue: team, template: {gpus: 1}, duration: 2h}
  - {name: frac, queue: team, count: 4, template: {gpus: 0.5%s}, duration: 20m, submitAt: 1m}
"""
AUTOSCALER = """
autoscaler:
  node: {name: scaled, gpus: 2, gpuMemory: 81920, labels: {pool: scaled}}
  scaleUpDelay: 2m
  scaleDownDelay: 10m
  maxNodes: %d
"""


def run(autoscaler: str = "", selector: str = "", max_nodes: int = 3) -> replay.Run:
    text = BASE % selector + (AUTOSCALER % max_nodes if autoscaler else "")
    loaded = sources.loads(text, "autoscaled.yaml")
    return replay.Replay(loaded, load_config(None)).run()


def test_without_the_model_the_fractional_pods_wait_for_the_whole_gpu_job_to_end() -> None:
    result = run()
    assert sorted(result.summary.wait)[1] == pytest.approx(2 * 3600 - 60, abs=3.0)  # [0]: the whole-GPU job
    assert result.autoscaled == []
    assert set(result.series.cluster["total_gpus"]) == {1}


def test_the_model_adds_a_node_after_the_delay_and_the_pending_fractional_pods_run_on_it() -> None:
    result = run(autoscaler="yes")
    assert result.summary.completed == 5 and not result.summary.never_scheduled
    added = [c for c in result.autoscaled if c.what == "added"]
    # four halves are two whole GPUs: one node of two GPUs, 2 minutes after the pods became unschedulable
    assert [c.node for c in added] == ["scaled-0"]
    assert added[0].time == pytest.approx(180.0, abs=2.0)
    assert max(result.summary.wait) == pytest.approx(120.0, abs=3.0)
    totals = result.series.cluster["total_gpus"]
    assert totals[0] == 1 and max(totals) == 3 and totals[-1] == 1
    # the whole-GPU job and four halves; the reservation pods of the shared GPUs are not counted again
    assert max(result.series.cluster["allocated_gpus"]) == 3
    assert max(result.series.cluster["allocation_ratio"]) <= 1
    removed = [c for c in result.autoscaled if c.what == "removed"]
    assert [c.node for c in removed] == ["scaled-0"]
    assert removed[0].time == pytest.approx(added[0].time + 20 * 60 + 600, abs=3.0)
    rows = dict(report.summary_rows(result))
    assert rows["nodes added / removed (autoscaler model)"] == "1 / 1"


def test_pods_whose_constraints_the_shape_does_not_meet_get_no_node() -> None:
    result = run(autoscaler="yes", selector=", nodeSelector: {pool: other}")
    assert result.autoscaled == []
    assert len(result.summary.never_scheduled) == 4


def test_the_model_adds_no_more_than_max_nodes() -> None:
    text = (BASE % "").replace("count: 4, template: {gpus: 0.5", "count: 12, template: {gpus: 0.5") + AUTOSCALER % 2
    result = replay.Replay(sources.loads(text, "many.yaml"), load_config(None)).run()
    alive = 0
    peak = 0
    for change in result.autoscaled:
        alive += 1 if change.what == "added" else -1
        peak = max(peak, alive)
    assert peak == 2
    assert result.summary.completed == 13  # the rest ran once the first ones finished


def test_a_bad_autoscaler_field_is_one_line_naming_it() -> None:
    text = BASE % "" + "autoscaler:\n  node: {name: scaled, gpus: 0}\n"
    with pytest.raises(UserError, match=r"autoscaler\.node\.gpus: an added node needs at least one GPU"):
        sources.loads(text, "bad.yaml")
    with pytest.raises(UserError, match="scaleUpDelay"):
        sources.loads(BASE % "" + "autoscaler:\n  node: {name: s, gpus: 1}\n  scaleUpDelay: soon\n", "bad.yaml")


def test_the_model_watches_the_pods_of_the_configured_scheduler_name() -> None:
    text = BASE % "" + AUTOSCALER % 3
    loaded = sources.loads(text, "named.yaml")
    for obj in loaded.objects:
        if obj.get("kind") == "Pod":
            obj["spec"]["schedulerName"] = "other"
    result = replay.Replay(loaded, load_config({"flags": {"scheduler-name": "other"}})).run()
    assert [c.node for c in result.autoscaled if c.what == "added"] == ["scaled-0"]
