"""Properties of the victim actions over random clusters (hypothesis), one cycle on the embedded cluster.

Clusters: 1-3 nodes of 4 or 8 GPUs, mostly full; 2-4 top-level queues with random GPU quotas and weights (CPU
and memory never constrain); running jobs of 1-GPU pods on one node (single pods, elastic jobs with minMember
1, or gangs taken whole), some non-preemptible; 1-3 pending gangs of 1-GPU pods. The reclaim rules guarantee:

- a reclaim never leaves the reclaiming queue above its fair share (it was within it, CanReclaim);
- a queue gives to reclaim only from above its deserved quota (KAI's strategies, checked before each victim
  vector: the queue held more than it deserves before its last victim was taken, though a whole gang may then
  take it below);
- with `reclaim-protects-deserved`, a reclaim never takes a queue below its deserved quota (taking a vector
  must also leave the queue at or above it);
- no action ever evicts a pod of a non-preemptible job;
- shuffling the input objects changes no decision.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
GPU = 2
EPS = 1e-9
VICTIM_ACTIONS = "allocate, consolidation, reclaim, preempt"
SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> list[JSON]:
    nodes = [(f"n{i}", draw(st.sampled_from([4, 8]))) for i in range(draw(st.integers(1, 3)))]
    queues = [f"q{i}" for i in range(draw(st.integers(2, 4)))]
    objects: list[JSON] = [b.node(name, gpus=gpus) for name, gpus in nodes]
    for q in queues:
        objects.append(v.queue(q, gpu_quota=draw(st.integers(0, 6)), gpu_weight=draw(st.integers(0, 2))))
    serial = 0
    for name, gpus in nodes:
        free = gpus - draw(st.sampled_from([0, 0, 0, 1, 2]))  # mostly full: victims are needed
        while free > 0:
            size = draw(st.integers(1, min(3, free)))
            serial += 1
            objects += v.job(
                f"r{serial}",
                queue=draw(st.sampled_from(queues)),
                pods=size,
                node=name,
                min_member=draw(st.sampled_from([1, 1, size])),
                priority_class=draw(st.sampled_from(["train", "train", "build"])),
                created=b.NOW - 60 * draw(st.integers(1, 100)),
            )
            free -= size
    for i in range(draw(st.integers(1, 3))):
        objects += v.job(
            f"p{i}",
            queue=draw(st.sampled_from(queues)),
            pods=draw(st.integers(1, 3)),
            priority_class=draw(st.sampled_from(["train", "build-preemptible", "inference"])),
            created=b.NOW - draw(st.integers(0, 50)),
        )
    return objects


def _run(objects: list[JSON], actions: str) -> CycleResult:
    return v.cluster(objects, config={"actions": actions}).cycle()


def _reclaims(result: CycleResult) -> tuple[set[str], set[str]]:
    """(queues that reclaimed, queues that lost pods to reclaim) in this cycle."""
    jobs = result.snapshot.jobs
    by_key = {job.key: job for job in jobs.values()}
    takers, givers = set(), set()
    for op in result.operations:
        if op.op is Op.EVICT and op.eviction is not None and op.eviction.action == "reclaim":
            takers.add(by_key[op.eviction.preemptor].queue)
            if op.after.node == op.before.node or not op.after.node:  # moved pods are not taken
                givers.add(jobs[op.task.job_uid].queue)
    return takers, givers


@SETTINGS
@given(clusters())
def test_a_reclaim_keeps_the_reclaimer_within_its_fair_share(objects: list[JSON]) -> None:
    result = _run(objects, "allocate, reclaim")
    takers, _ = _reclaims(result)
    for name in takers:
        share = result.queue_shares[name]
        assert share.allocated[GPU] <= share.fair_share[GPU] + EPS, name


@SETTINGS
@given(clusters())
def test_a_queue_gives_to_reclaim_only_from_above_its_deserved_quota(objects: list[JSON]) -> None:
    result = _run(objects, "allocate, reclaim")
    _, givers = _reclaims(result)
    jobs = result.snapshot.jobs
    taken = dict.fromkeys(givers, 0.0)
    for op in result.operations:
        if op.op is Op.EVICT and op.eviction is not None and op.eviction.action == "reclaim" and not op.moved:
            taken[jobs[op.task.job_uid].queue] += float(op.task.queue_request()[GPU])
    for name in givers:
        share = result.queue_shares[name]
        assert share.allocated[GPU] + taken[name] > share.deserved[GPU] + EPS, name


@SETTINGS
@given(clusters())
def test_with_the_flag_a_reclaim_never_takes_a_queue_below_its_deserved_quota(objects: list[JSON]) -> None:
    result = v.cluster(
        objects, config={"actions": "allocate, reclaim", "flags": {"reclaim-protects-deserved": True}}
    ).cycle()
    _, givers = _reclaims(result)
    for name in givers:
        share = result.queue_shares[name]
        assert share.allocated[GPU] >= share.deserved[GPU] - EPS, name


@SETTINGS
@given(clusters())
def test_no_non_preemptible_pod_is_ever_evicted(objects: list[JSON]) -> None:
    result = _run(objects, VICTIM_ACTIONS)
    jobs = result.snapshot.jobs
    assert all(jobs[op.task.job_uid].preemptible for op in result.operations if op.op is Op.EVICT)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.randoms(use_true_random=False))
def test_shuffled_input_changes_no_decision(objects: list[JSON], rng: random.Random) -> None:
    def decisions(result: CycleResult) -> list[tuple[str, str, str, str]]:
        return sorted((op.op.value, op.task.name, op.before.node, op.after.node) for op in result.operations)

    shuffled = list(objects)
    rng.shuffle(shuffled)
    assert decisions(_run(objects, VICTIM_ACTIONS)) == decisions(_run(shuffled, VICTIM_ACTIONS))
