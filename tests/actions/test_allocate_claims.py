"""The claims pass of allocate (`pipelined-claims`, off by default, not KAI's; docs/configuration.md): each
claimed pod of a job is tried, whatever fails first, and an unclaimed sibling does not take what a claimed pod
was waiting for."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kai_scheduler.framework.statement import Op
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
CLAIMS: JSON = {"actions": "allocate", "flags": {"pipelined-claims": True}}


def _big(claims: dict[str, str], *, pending: int, running: bool, nodes: int) -> list[JSON]:
    """Nodes n1..n`nodes` of one GPU each; job big (minMember 1) with `pending` one-GPU pods big-0.. (task
    order) claiming as `claims` says, as an earlier cycle that pipelined them left them; with `running`, a pod
    big-r of it already runs on n0 (its minimum met)."""
    objects = [b.node(f"n{i}", gpus=1) for i in range(0 if running else 1, nodes + 1)]
    objects += [v.queue("team-a", gpu_quota=nodes + 1), b.podgroup("big", queue="team-a", priority_class="train")]
    names = [f"big-{i}" for i in range(pending)]
    for i, name in enumerate(names):
        pod = b.pod(name, group="big", gpus=1, cpu="0", memory="0", created=b.NOW - 60 + i)
        if name in claims:
            pod["status"] = {"phase": "Pending", "nominatedNodeName": claims[name]}
        objects.append(pod)
    if running:
        objects.append(b.pod("big-r", group="big", gpus=1, cpu="0", memory="0", node="n0", created=b.NOW - 120))
    return objects


def _allocated(result: Any) -> dict[str, str]:
    return {op.task.name: op.after.node for op in result.operations if op.op is Op.ALLOCATE}


def _nominated(cluster: Any, name: str) -> str | None:
    nominated: str | None = cluster.store.get("pods", name, b.NAMESPACE)["status"].get("nominatedNodeName")
    return nominated


@pytest.mark.parametrize("running", [False, True], ids=["minimum not met", "minimum met"])
def test_a_claim_that_does_not_fit_does_not_stop_the_jobs_other_claims(
    running: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """big claims n1 for big-0 and n2 for big-1; big-0, first in task order, can no longer be placed anywhere
    (its node selector matches no node). The job used to be discarded at big-0, so big-1 was not tried and the
    commit cleared its claim (and reclaim evicted again for it). Now big-1 is placed on n2."""
    objects = _big({"big-0": "n1", "big-1": "n2"}, pending=2, running=running, nodes=2)
    next(o for o in objects if o["metadata"]["name"] == "big-0")["spec"]["nodeSelector"] = {"pool": "gone"}
    cluster = v.cluster(objects, config=CLAIMS)
    with caplog.at_level(logging.INFO, logger="kai_scheduler"):
        result = cluster.cycle()
    assert _allocated(result) == {"big-1": "n2"}
    assert _nominated(cluster, "big-0") is None  # its claim is cleared: it did not fit
    cleared = [vars(r) for r in caplog.records if r.getMessage().startswith("claim cleared")]
    assert [c["pod"] for c in cleared] == [f"{b.NAMESPACE}/big-0"]
    assert "selector" in cleared[0]["reason"], cleared[0]["reason"]  # why it did not fit, kept past big-1's success


@pytest.mark.parametrize("running", [False, True], ids=["minimum not met", "minimum met"])
def test_an_unclaimed_sibling_does_not_take_what_a_claimed_pod_waits_for(running: bool) -> None:
    """big-0 (first in task order) has no claim, big-1 claims n1, the one free GPU. The claims pass placed the
    job's next task, big-0, on n1, and big-1 lost its claim. Now big-1 gets n1; big-0 competes afterwards with
    the other jobs and finds no room."""
    objects = _big({"big-1": "n1"}, pending=2, running=running, nodes=1)
    cluster = v.cluster(objects, config=CLAIMS)
    result = cluster.cycle()
    assert _allocated(result) == {"big-1": "n1"}


def test_unclaimed_pods_of_a_claimed_job_are_still_placed_after_its_claims() -> None:
    """Once its claims are served, a claimed job's unclaimed pods are placed in the pass of the other jobs."""
    objects = _big({"big-2": "n3"}, pending=3, running=False, nodes=3)
    cluster = v.cluster(objects, config=CLAIMS)
    result = cluster.cycle()
    placed = _allocated(result)
    assert placed["big-2"] == "n3"
    assert sorted(placed) == ["big-0", "big-1", "big-2"]


def test_by_default_the_next_task_in_task_order_is_placed_as_in_kai() -> None:
    """KAI's allocate (the default): no claims pass; the job's next task in task order, big-0, takes the GPU."""
    objects = _big({"big-1": "n1"}, pending=2, running=False, nodes=1)
    cluster = v.cluster(objects, config={"actions": "allocate"})
    result = cluster.cycle()
    assert _allocated(result) == {"big-0": "n1"}
