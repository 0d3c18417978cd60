"""consolidation end to end: a move is one eviction whose record names the new node, shown by `kai schedule`.

Rule-by-rule cases are scenario files (tests/scenarios/consolidation).
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from kai_scheduler.actions import consolidation
from kai_scheduler.actions.common import gpu_sharing
from kai_scheduler.cli import render
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.framework.statement import Eviction, Op
from kai_scheduler.sim import outcome
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]


def fragmented(*, free_on_n2: int = 4) -> list[JSON]:
    """n1 runs a 4-GPU pod (the mover), n2 runs 8 - free_on_n2 GPUs; an 8-GPU job waits."""
    return [
        b.node("n1"),
        b.node("n2"),
        v.queue("team-a", gpu_quota=-1),
        v.queue("team-b", gpu_quota=-1),
        *v.job("mover", queue="team-b", gpus=4, node="n1", created=b.NOW - 60),
        *v.job(
            "stays", queue="team-b", gpus=8 - free_on_n2, node="n2", created=b.NOW - 3600, priority_class="inference"
        ),
        *v.job("big", queue="team-a", gpus=8),
    ]


def test_a_move_is_committed_as_one_eviction_naming_the_new_node() -> None:
    cluster = v.cluster(fragmented(), config={"actions": "allocate, consolidation"})
    result = cluster.cycle()
    [move] = [op for op in result.operations if op.op is Op.EVICT]
    assert (move.task.name, move.before.node, move.after.node, move.after.status) == (
        "mover-0",
        "n1",
        "n2",
        PodStatus.PIPELINED,
    )
    assert move.eviction == Eviction("consolidation", "ns/big", "moved by consolidation to make room for ns/big")
    assert result.evictions == 1 and result.pipelines == 2  # the job and the moved pod, as KAI counts
    assert cluster.store.get("pods", "mover-0", b.NAMESPACE)["metadata"].get("deletionTimestamp")


def test_kai_schedule_shows_the_move_from_one_node_to_the_other() -> None:
    cluster = v.cluster(fragmented(), config={"actions": "allocate, consolidation"})
    before = cluster.scheduler.snapshot()
    results = cluster.run(1)
    report = outcome.build("move", before, cluster.view(), results)
    [move] = report.moves
    assert (move.task, move.node, move.to_node, move.action, move.preemptor) == (
        "ns/mover-0",
        "n1",
        "n2",
        "consolidation",
        "ns/big",
    )
    assert report.to_json()["evictions"][0]["toNode"] == "n2"
    text = io.StringIO()
    render.as_tables(report, Console(file=text, width=200))
    assert "consolidation  mover-0  n1 → n2  for big" in text.getvalue()
    [mover] = [t for key, t in report.to_json()["tasks"].items() if key.endswith("mover-0")]
    assert (mover["status"], mover["node"], mover["moved"]) == ("Pipelined", "n2", "moved n1 → n2")
    assert "moved n1 → n2" in text.getvalue()


def test_an_evicted_victim_shows_no_destination() -> None:
    objects = [
        b.node("n1", gpus=1),
        v.queue("team", gpu_quota=-1),
        *v.job("low", queue="team", node="n1"),
        *v.job("high", queue="team", priority_class="build-preemptible"),
    ]
    cluster = v.cluster(objects, config={"actions": "allocate, preempt"})
    before = cluster.scheduler.snapshot()
    report = outcome.build("evict", before, cluster.view(), cluster.run(1))
    [move] = report.moves
    assert (move.node, move.to_node) == ("n1", "")
    text = io.StringIO()
    render.as_tables(report, Console(file=text, width=200))
    assert "(evicted)" in text.getvalue()


def test_no_move_when_the_victim_has_nowhere_to_go() -> None:
    cluster = v.cluster(fragmented(free_on_n2=3), config={"actions": "allocate, consolidation"})
    assert cluster.cycle().operations == []


def test_spread_placement_detected_from_the_nodeplacement_arguments() -> None:
    tiers = [{"plugins": [{"name": "proportion"}, {"name": "nodeplacement", "arguments": {"gpu": "spread"}}]}]
    ssn = b.session(b.snapshot([b.node("n1")]), config=v.load_config_for({"tiers": tiers}))
    assert consolidation.uses_spread(ssn)
    assert not consolidation.uses_spread(b.session(b.snapshot([b.node("n1")])))


def test_the_free_capacity_is_summed_once_for_many_jobs_that_cannot_fit(monkeypatch: Any) -> None:
    """may_consolidate checks every pending job against the cluster's free GPUs; on a full cluster nothing
    moves between the checks, so the per-node sums are made once, not once per job (they were the largest
    part of a cycle over 100,000 pending jobs)."""
    objects = [b.node("n1"), v.queue("team-a", gpu_quota=-1), *v.job("full", queue="team-a", gpus=8, node="n1")]
    for i in range(50):
        objects += v.job(f"wait-{i}", queue="team-a", gpus=1)
    ssn = b.session(b.snapshot(objects))
    sums = [0]
    shared_room = gpu_sharing.shared_room

    def counted(ssn: Any) -> dict[int, float]:
        sums[0] += 1
        return shared_room(ssn)

    monkeypatch.setattr(gpu_sharing, "shared_room", counted)
    waiting = [j for j in ssn.snapshot.jobs.values() if j.name.startswith("wait-")]
    assert not any(consolidation.may_consolidate(ssn, job) for job in waiting)
    assert sums[0] == 1
