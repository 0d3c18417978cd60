"""reclaim end to end over the embedded cluster: decisions, what is written to the store, and stability.

The rule-by-rule cases are scenario files (tests/scenarios/reclaim); these tests check what a scenario file
cannot: cycle-by-cycle counts, store writes (evictions, events, annotations, conditions) and search budgets.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from kai_scheduler.actions import reclaim
from kai_scheduler.actions.common import solver
from kai_scheduler.api import constants
from kai_scheduler.api.fields import format_time
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.statement import Op
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]


def two_teams(*, pending_pods: int = 4) -> list[JSON]:
    """team-a deserves 4 of 8 GPUs and runs nothing; team-b runs 8 single-GPU jobs (the newest 4 on top)."""
    objects = [b.node("n1", gpus=8), v.queue("team-a", gpu_quota=4), v.queue("team-b", gpu_quota=4)]
    for i in range(8):
        objects += v.job(f"b{i}", queue="team-b", node="n1", created=b.NOW - 3600 + i)
    objects += v.job("train", queue="team-a", pods=pending_pods)
    return objects


def test_reclaim_evicts_the_newest_victims_and_pipelines_the_gang() -> None:
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim"})
    result = cluster.cycle()
    evicted = sorted(op.task.name for op in result.operations if op.op is Op.EVICT)
    assert evicted == ["b4-0", "b5-0", "b6-0", "b7-0"]
    assert sorted(op.task.name for op in result.operations if op.op is Op.PIPELINE) == [f"train-{i}" for i in range(4)]
    assert result.binds == 0


def test_after_reclaim_later_cycles_change_nothing() -> None:
    """Cycle 1 evicts, cycle 2 binds the gang; cycles 3-6 neither evict nor bind nor pipeline (no ping-pong)."""
    cluster = v.cluster(two_teams())
    results = cluster.run(6)
    assert [r.evictions for r in results] == [4, 0, 0, 0, 0, 0]
    assert [r.binds for r in results][2:] == [0, 0, 0, 0]
    assert all(r.pipelines == 0 for r in results[2:])
    view = cluster.view()
    running = sorted(t.name for t in view.tasks.values() if t.status.label == "Running")
    assert running == ["b0-0", "b1-0", "b2-0", "b3-0", *(f"train-{i}" for i in range(4))]


def _gang_below_deserved() -> list[JSON]:
    """team-b (deserved 4, fair share 6) holds two 1-GPU jobs and a 6-GPU gang (its newest job); team-a
    (deserved 2) runs 2 and needs 2 more."""
    objects = [
        b.node("n1", gpus=4),
        b.node("n2", gpus=6),
        v.queue("team-a", gpu_quota=2),
        v.queue("team-b", gpu_quota=4),
    ]
    objects += v.job("a-run", queue="team-a", pods=2, node="n1", created=b.NOW - 3600)
    objects += v.job("b-one", queue="team-b", node="n1", created=b.NOW - 3500)
    objects += v.job("b-two", queue="team-b", node="n1", created=b.NOW - 3400)
    objects += v.job("b-gang", queue="team-b", pods=6, node="n2", created=b.NOW - 3000)
    objects += v.job("a-small", queue="team-a", pods=2, created=b.NOW - 1000)
    return objects


def test_kai_rule_takes_a_gang_below_deserved_once_and_nothing_moves_after() -> None:
    """KAI's rule (the default): the strategies hold before the gang is taken (team-b 8 > 6), so the gang goes
    whole; the freed GPUs stay claimed by team-a's pipelined job, and the recreated gang does not fit what is
    left: one cycle of evictions, none after (no ping-pong)."""
    cluster = v.cluster(_gang_below_deserved())
    results = cluster.run(6)
    assert [r.evictions for r in results] == [6, 0, 0, 0, 0, 0]
    assert sorted(op.task.name for op in results[0].operations if op.op is Op.EVICT) == [
        f"b-gang-{i}" for i in range(6)
    ]
    assert [r.binds for r in results] == [0, 2, 0, 0, 0, 0]
    shares = results[-1].queue_shares
    assert (shares["team-a"].allocated[2], shares["team-b"].allocated[2]) == (4, 2)


def test_with_reclaim_protects_deserved_the_gang_is_passed_over_and_nothing_moves_after() -> None:
    """The protective rule (flag): taking the gang would leave team-b at 2, below its deserved 4: the singles
    go instead, once, and then nothing is evicted."""
    cluster = v.cluster(_gang_below_deserved(), config={"flags": {"reclaim-protects-deserved": True}})
    results = cluster.run(6)
    assert [r.evictions for r in results] == [2, 0, 0, 0, 0, 0]
    assert sorted(op.task.name for op in results[0].operations if op.op is Op.EVICT) == ["b-one-0", "b-two-0"]
    shares = results[-1].queue_shares
    assert (shares["team-a"].allocated[2], shares["team-b"].allocated[2]) == (4, 6)


def test_an_eviction_writes_the_pod_deletion_an_event_and_the_eviction_timestamp() -> None:
    cluster = v.cluster(two_teams(pending_pods=1), config={"actions": "allocate, reclaim"})
    cluster.cycle()
    victim = cluster.store.get("pods", "b7-0", b.NAMESPACE)
    assert victim["metadata"].get("deletionTimestamp")
    [event] = [e for e in v.events(cluster, "Evict") if e["involvedObject"]["name"] == "b7-0"]
    assert event["message"] == ("reclaimed by ns/train to restore team-a's deserved share (from queue team-b)")
    assert v.annotations(cluster, "b7")[constants.ANNOTATION_LAST_EVICTION_TIMESTAMP] == format_time(b.NOW)
    assert constants.ANNOTATION_LAST_EVICTION_TIMESTAMP not in v.annotations(cluster, "b6")


@pytest.mark.parametrize(
    "flag, want",
    [
        pytest.param(
            True,
            [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
            id="the flag adds the DisruptionTarget condition",
        ),
        pytest.param(False, [], id="no condition without the flag"),
    ],
)
def test_the_disruption_condition_follows_the_flag(flag: bool, want: list[JSON]) -> None:
    config = {"actions": "allocate, reclaim", "flags": {"update-pod-eviction-condition": flag}}
    cluster = v.cluster(two_teams(pending_pods=1), config=config)
    cluster.cycle()
    conditions = cluster.store.get("pods", "b7-0", b.NAMESPACE).get("status", {}).get("conditions", [])
    assert [{k: c[k] for k in ("type", "status", "reason")} for c in conditions] == want


def test_the_reclaimer_keeps_what_allocate_said_and_victims_get_no_fit_errors() -> None:
    """The simulations record fit errors; the solver drops them. On success the reclaimer's are cleared."""
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim"})
    result = cluster.cycle()
    assert result.fit_errors == {}


def test_a_spent_action_budget_stops_reclaim() -> None:
    """Budgets read an injected timer, never the session's clock: a timer past the deadline stops the action."""
    ticks = itertools.count(step=400.0)  # every reading is 400 s after the last; the action has 300 s
    action = reclaim.Reclaim(timer=lambda: float(next(ticks)))
    cluster = v.cluster(two_teams(), config={"actions": "allocate"})
    cluster.scheduler.actions.append(action)
    result = cluster.cycle()
    assert result.evictions == 0


def _attempted(objects: list[JSON], config: JSON) -> list[str]:
    """Names of the jobs reclaim searched victims for, in order."""
    searched: list[str] = []
    original = reclaim.search

    def spy(ssn: Any, job: Any, pool: Any) -> solver.VictimSearch | None:
        searched.append(job.name)
        return original(ssn, job, pool)

    reclaim.search = spy  # type: ignore[assignment]
    try:
        v.cluster(objects, config=config).cycle()
    finally:
        reclaim.search = original  # type: ignore[assignment]
    return searched


def _failing_queue(*jobs: tuple[str, int]) -> list[JSON]:
    """team-a may reclaim (within deserved 4) but team-b's pods are non-preemptible: every search fails."""
    objects = [b.node("n1", gpus=4), v.queue("team-a", gpu_quota=4), v.queue("team-b", gpu_quota=0)]
    objects += v.job("pinned", queue="team-b", pods=4, node="n1", priority_class="build")
    for name, pods in jobs:
        objects += v.job(name, queue="team-a", pods=pods, created=b.NOW - 60 * pods)
    return objects


@pytest.mark.parametrize(
    "jobs, flags, want",
    [
        pytest.param([("x-1", 2), ("x-2", 2)], {}, ["x-1"], id="the same signature, no easier: skipped"),
        pytest.param(
            [("x-1", 2), ("x-2", 2)],
            {"use-scheduling-signatures": False},
            ["x-1", "x-2"],
            id="the flag off: both searched",
        ),
        pytest.param([("x-2", 2), ("x-1", 1)], {}, ["x-2", "x-1"], id="fewer pods is easier: searched"),
    ],
)
def test_scheduling_signatures(jobs: list[tuple[str, int]], flags: JSON, want: list[str]) -> None:
    assert _attempted(_failing_queue(*jobs), {"actions": "reclaim", "flags": flags}) == want


def test_a_bad_budget_fails_when_the_configuration_loads() -> None:
    with pytest.raises(ConfigError, match=r"scenarioSearchBudgets\.maxJobSearchDuration"):
        v.load_config_for({"scenarioSearchBudgets": {"maxJobSearchDuration": "soon"}})


CLAIMS: JSON = {"pipelined-claims": True}  # the option (not KAI's) the claims tests are about


def test_with_pipelined_claims_the_reclaimer_claims_its_node_until_it_binds_there() -> None:
    """Cycle 1 pipelines the gang and writes n1 as each pod's nominatedNodeName; the next cycle serves the claim
    first and binds the gang there; nothing is written to the pods that were already placed."""
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim", "flags": CLAIMS})
    cluster.cycle()
    nominated = {
        i: cluster.store.get("pods", f"train-{i}", b.NAMESPACE)["status"].get("nominatedNodeName") for i in range(4)
    }
    assert nominated == dict.fromkeys(range(4), "n1")
    cluster.between_cycles()
    result = cluster.cycle()
    assert sorted((op.task.name, op.after.node) for op in result.operations if op.op is Op.ALLOCATE) == [
        (f"train-{i}", "n1") for i in range(4)
    ]
    assert result.evictions == 0


def test_by_default_no_node_is_nominated_and_the_pipelined_event_is_written_as_in_kai() -> None:
    """KAI writes a pipelined pod's node in a `Pipelined` event only, never as its nominatedNodeName."""
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim"})
    result = cluster.cycle()
    assert result.evictions == 4
    assert all(
        cluster.store.get("pods", f"train-{i}", b.NAMESPACE)["status"].get("nominatedNodeName") is None
        for i in range(4)
    )
    pipelined = v.events(cluster, "Pipelined")
    assert sorted(e["involvedObject"]["name"] for e in pipelined) == [f"train-{i}" for i in range(4)]
    assert all("node n1" in e["message"] for e in pipelined), [e["message"] for e in pipelined]


def _lapsed_claims() -> list[JSON]:
    """4 pods that name n1 from an earlier pipeline; n1 has room for none of the 4-pod gang now."""
    objects = [b.node("n1", gpus=2), v.queue("team-a", gpu_quota=4), *v.job("big", queue="team-a", pods=4)]
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["status"] = {"phase": "Pending", "nominatedNodeName": "n1"}
    return objects


@pytest.mark.parametrize(
    "flags, left",
    [
        pytest.param(CLAIMS, None, id="with pipelined claims: cleared"),
        pytest.param({}, "n1", id="by default: left as is (KAI writes no nomination)"),
    ],
)
def test_a_claim_that_lapsed(flags: JSON, left: str | None) -> None:
    """A pod that names a node from an earlier pipeline but fits nowhere now loses the nomination when the
    scheduler writes claims; by default it writes none, so it clears none either."""
    cluster = v.cluster(_lapsed_claims(), config={"actions": "allocate", "flags": flags})
    cluster.cycle()
    assert [
        cluster.store.get("pods", f"big-{i}", b.NAMESPACE)["status"].get("nominatedNodeName") for i in range(4)
    ] == [left] * 4


def _borrowed_by_team_a(*, nodes: int = 4, gpus: int = 4, grace: int = 0) -> list[JSON]:
    """team-a (deserved 0) runs a one-GPU job on every GPU of `nodes` nodes; team-b deserves them all. With a
    `grace` an evicted team-a pod stays terminating (Releasing) that many seconds, its grace period, as on a real
    cluster (a Job's pods: 30 s); the embedded kubelet otherwise removes it before the next cycle."""
    objects = [b.node(f"n{i}", gpus=gpus) for i in range(nodes)]
    objects += [v.queue("team-a", gpu_quota=0), v.queue("team-b", gpu_quota=nodes * gpus)]
    for i in range(nodes * gpus):
        objects += v.job(f"a{i}", queue="team-a", node=f"n{i // gpus}", created=b.NOW - 3600 + i)
    for obj in objects:
        if grace and obj["kind"] == "Pod":
            obj["spec"]["terminationGracePeriodSeconds"] = grace
            # gone at its deletionTimestamp (eviction + grace), as a kubelet does
            obj["metadata"].setdefault("annotations", {})[constants.ANNOTATION_FAKE_TERMINATES_AFTER] = "0s"
    return objects


def _nominated(cluster: Any, names: list[str]) -> dict[str, str | None]:
    return {n: cluster.store.get("pods", n, b.NAMESPACE)["status"].get("nominatedNodeName") for n in names}


@pytest.mark.parametrize("gpus", [4, 1], ids=["a node each", "both on one node"])
def test_with_pipelined_claims_every_claim_of_an_elastic_job_holds_while_its_victims_terminate(
    gpus: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A 2-pod Job (minMember 1, as the podgrouper groups a Job) reclaims: reclaim pipelines one pod per pass
    and both claim their nodes. While the victims terminate, allocate serves the claims first; a pipelined
    elastic job was not put back (KAI), so only the first pod was placed again and the commit cleared the
    second's claim as lapsed; reclaim then evicted again for it, on another node, every other cycle (16 team-a
    pods evicted for 8 GPUs, found on a real control plane, tests/e2e/repro_nomlost.py). Now both claims hold
    until the pods bind on their nodes, and only what they need is evicted."""
    objects = _borrowed_by_team_a(grace=5)
    objects += v.job("train", queue="team-b", pods=2, gpus=gpus, min_member=1)
    cluster = v.cluster(objects, config={"flags": CLAIMS})
    pods = ["train-0", "train-1"]
    results = [cluster.cycle()]
    claimed: dict[str, str | None] = {}
    caplog.set_level(logging.DEBUG, logger="kai_scheduler.actions.allocate")
    for _ in range(9):
        now = _nominated(cluster, pods)
        if claimed and all(claimed.values()):
            assert now == claimed, "a claim changed or was cleared while its victims were terminating"
        claimed = now
        cluster.between_cycles()
        results.append(cluster.cycle())
    assert all(claimed.values())
    assert sum(r.evictions for r in results) == 2 * gpus
    bound = {t.name: t.node for t in cluster.view().tasks.values() if t.name in pods and t.status.label == "Running"}
    assert bound == claimed
    # served once per claim: not taken up again by the unclaimed jobs' pass once both are placed
    again = [
        r for r in caplog.records if r.getMessage() == "job not placed" and vars(r)["job"] == f"{b.NAMESPACE}/train"
    ]
    assert not again, [vars(r)["reasons"] for r in again]


@pytest.mark.parametrize("gpus", [4, 1], ids=["a node each", "both on one node"])
def test_by_default_an_elastic_reclaimer_evicts_only_what_its_pods_need_while_victims_terminate(gpus: int) -> None:
    """The same 2-pod Job without claims (KAI): no pod names a node, and while the victims terminate each cycle's
    allocate pipelines the first pod onto the GPUs being released and, the job put back as KAI puts back a job
    with pending pods, the second pod too, so reclaim does not evict again for it. It used to stop at the first
    pipelined pod: reclaim then evicted for the second every cycle until the victims were gone (16 team-a pods
    for 8 GPUs, 6 for 2)."""
    objects = _borrowed_by_team_a(grace=5)
    objects += v.job("train", queue="team-b", pods=2, gpus=gpus, min_member=1)
    cluster = v.cluster(objects)
    pods = ["train-0", "train-1"]
    results = [cluster.cycle()]
    for _ in range(9):
        assert _nominated(cluster, pods) == dict.fromkeys(pods)
        cluster.between_cycles()
        results.append(cluster.cycle())
    assert sum(r.evictions for r in results) == 2 * gpus, [r.evictions for r in results]
    running = [t.name for t in cluster.view().tasks.values() if t.name in pods and t.status.label == "Running"]
    assert sorted(running) == pods


def test_claims_an_elastic_job_cannot_use_any_more_are_cleared_and_say_why(caplog: pytest.LogCaptureFixture) -> None:
    """Four pods of an elastic job claim n1, which has room for two: allocate serves the claims in turn, binds
    two, and clears the claims of the two that no longer fit (each tried: one that does not fit does not stop
    the next), with log lines naming the job and pod not placed again and why, and each pod whose claim is
    cleared, its node and why."""
    objects = [
        b.node("n1", gpus=2),
        v.queue("team-a", gpu_quota=4),
        *v.job("big", queue="team-a", pods=4, min_member=1),
    ]
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["status"] = {"phase": "Pending", "nominatedNodeName": "n1"}
    cluster = v.cluster(objects, config={"actions": "allocate", "flags": CLAIMS})
    with caplog.at_level(logging.INFO, logger="kai_scheduler"):
        result = cluster.cycle()
    assert sorted(op.task.name for op in result.operations if op.op is Op.ALLOCATE) == ["big-0", "big-1"]
    assert _nominated(cluster, [f"big-{i}" for i in range(2, 4)]) == {"big-2": None, "big-3": None}
    cleared = [r for r in caplog.records if r.getMessage().startswith("claim cleared")]
    fields = [vars(r) for r in cleared]
    assert sorted(f["pod"] for f in fields) == [f"{b.NAMESPACE}/big-2", f"{b.NAMESPACE}/big-3"]
    assert all(f["node"] == "n1" and "GPU" in f["reason"] for f in fields), [f["reason"] for f in fields]
    tried = [vars(r) for r in caplog.records if r.getMessage() == "claimed job not placed again"]
    # each claim is tried (big-3 too, after big-2 did not fit), and each line names the pod
    assert [(t["job"], t["pod"]) for t in tried] == [(f"{b.NAMESPACE}/big", f"{b.NAMESPACE}/big-{i}") for i in (2, 3)]
    assert all(any("GPU" in reason for reason in t["reasons"]) for t in tried), [t["reasons"] for t in tried]


def _claim_handed_back(*, older_pending: bool) -> list[JSON]:
    """d1 (fair share 5) runs 7 GPUs, d2 (fair share 3) runs 1; d2's p1 (2 x 1 GPU) may reclaim; d1 waits with p2.
    `older_pending`: d2 also waits with p0 (2 x 2 GPUs, older than p1, over d2's fair share)."""
    objects = [
        b.node("n0", gpus=8),
        v.queue("d1", gpu_quota=4, gpu_weight=2),
        v.queue("d1-t0", gpu_quota=4, gpu_weight=2, parent="d1"),
        v.queue("d2", gpu_quota=2, gpu_weight=2),
        v.queue("d2-t0", gpu_quota=2, gpu_weight=2, parent="d2"),
    ]
    for k, gpus in enumerate([2, 2, 2, 1]):
        objects += v.job(f"r{k}", queue="d1-t0", gpus=gpus, node="n0", created=b.NOW - 3600 + k)
    objects += v.job("r4", queue="d2-t0", gpus=1, node="n0", created=b.NOW - 3596)
    if older_pending:
        objects += v.job("p0", queue="d2-t0", pods=2, gpus=2, created=b.NOW - 100)
    objects += v.job("p1", queue="d2-t0", pods=2, gpus=1, created=b.NOW - 99)
    objects += v.job("p2", queue="d1-t0", pods=4, gpus=2, created=b.NOW - 98)
    return objects


@pytest.mark.parametrize(
    "older_pending, flags",
    [
        pytest.param(False, {}, id="KAI's order, no claims (the default): p1 speaks for d2"),
        pytest.param(True, {"preemptor-placed-first": True, **CLAIMS}, id="preemptor placed first, with claims"),
    ],
)
def test_a_pipelined_reclaimer_is_not_handed_back_to_the_victims_queue(older_pending: bool, flags: JSON) -> None:
    """d2's gang p1 reclaims 2 GPUs from d1 (fair share 5, running 7) and is pipelined. Next cycle the victim's
    pod is recreated Pending. KAI's simulation re-places the victim in allocate's queue order and reclaims only
    if p1 still fits then, so the next allocate, in the same order, gives p1 the GPUs; with the preemptor placed
    first the claim keeps them for p1 (without it, the next test). p1 binds in cycle 2 and nothing moves after."""
    results = v.cluster(_claim_handed_back(older_pending=older_pending), config={"flags": flags}).run(6)
    assert [r.evictions for r in results] == [1, 0, 0, 0, 0, 0]
    assert sorted(op.task.name for op in results[1].operations if op.op is Op.ALLOCATE) == ["p1-0", "p1-1"]


def test_with_the_preemptor_placed_first_and_no_claims_the_reclaim_repeats() -> None:
    """Why `pipelined-claims` exists: with the old simulation and no claim, allocate gives the GPUs released for
    p1 back to d1 and the reclaim repeats every cycle, alternating r2 and r1 (found by a random search over small
    two-department trees)."""
    flags = {"preemptor-placed-first": True}
    results = v.cluster(_claim_handed_back(older_pending=True), config={"flags": flags}).run(6)
    assert [r.evictions for r in results] == [1] * 6
    evicted = [sorted(op.task.name for op in r.operations if op.op is Op.EVICT) for r in results]
    assert evicted == [["r2-0"], ["r1-0"]] * 3


def test_a_victim_whose_queue_sorts_first_lands_first_and_nothing_is_reclaimed() -> None:
    """KAI's simulation pops the preemptor and the victims in allocate's queue order, the other pending jobs
    included (KAI `GetJobsToAllocate`): d2's older p0 (4 GPUs) speaks for d2, so d1 (the victim's queue,
    smaller dominant share with the victim's 2 GPUs) pops first, its victim takes its GPUs back and p1 no longer
    fits. Allocate would hand the GPUs straight back: no reclaim. With the old rule (preemptor placed first) the
    same cluster reclaims (the test above)."""
    results = v.cluster(_claim_handed_back(older_pending=True)).run(3)
    assert [r.evictions for r in results] == [0, 0, 0]


@pytest.mark.parametrize(
    "allocated, deserved, within",
    [
        pytest.param([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], True, id="at the quota"),
        pytest.param([1.0, 2.0, 3.5], [1.0, 2.0, 3.0], False, id="over in one resource"),
        pytest.param([9.0, 2.0, 0.1], [-1.0, 2.0, 0.1], True, id="unlimited cpu"),
        pytest.param([0.0, 0.0, 0.1], [0.0, 0.0, 0.0], False, id="a tenth of a GPU without quota"),
    ],
)
def test_an_eviction_record_names_the_deserved_share_only_within_every_quota(
    allocated: list[float], deserved: list[float], within: bool
) -> None:
    assert reclaim._within_deserved(allocated, deserved) is within


def test_a_gpu_reclaimer_takes_a_cpu_only_victim_when_the_cpu_is_short() -> None:
    """A victim holding no GPU can be what a GPU task needs: the node's 8 GPUs are t-gpu's and 13 of its 16 CPUs
    t-cpu's; big (8 GPUs, 4 CPUs) fits once both are gone. A search that left out the victims holding no GPU (it
    would pop half as many on `bench_scale.py`'s cluster) finds no room here."""
    objects = [b.node("n1", gpus=8, cpu="16"), v.queue("team-a", gpu_quota=8), v.queue("team-b")]
    for name, gpus, cpu, created in (("t-gpu", 8, "2", 10.0), ("t-cpu", 0, "13", 20.0)):
        objects += [
            b.podgroup(name, queue="team-b", min_member=1, priority_class="train", created=b.NOW - 3600 + created),
            b.pod(f"{name}-0", group=name, gpus=gpus, cpu=cpu, memory="0", node="n1", created=b.NOW - 3600 + created),
        ]
    objects += [
        b.podgroup("big", queue="team-a", min_member=1, priority_class="train"),
        b.pod("big-0", group="big", gpus=8, cpu="4", memory="0"),
    ]
    result = v.cluster(objects, config={"actions": "allocate, reclaim"}).cycle()
    assert sorted(op.task.name for op in result.operations if op.op is Op.EVICT) == ["t-cpu-0", "t-gpu-0"]
    assert [op.task.name for op in result.operations if op.op is Op.PIPELINE] == ["big-0"]
