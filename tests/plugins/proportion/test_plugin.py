"""The proportion plugin in a session: queue accounting, capacity checks, queue order, arguments.

One small cluster: node n1 with 8 GPUs; queues org → team-a (quota 2 GPUs, limit 4), team-b (quota 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot
from kai_scheduler.framework.config import ConfigError, SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction
from kai_scheduler.plugins.proportion.plugin import Proportion

GPU = 2


def queue(name: str, *, parent: str = "", gpu_quota: float = 0, gpu_limit: float = -1) -> Queue:
    open_block = {"quota": 0, "overQuotaWeight": 1, "limit": -1}
    gpu = {"quota": gpu_quota, "overQuotaWeight": 1, "limit": gpu_limit}
    spec: dict[str, Any] = {"resources": {"cpu": open_block, "memory": open_block, "gpu": gpu}}
    if parent:
        spec["parentQueue"] = parent
    return Queue.from_dict({"metadata": {"name": name, "uid": name}, "spec": spec})


def podgroup(name: str, queue_name: str, *, min_member: int = 1, non_preemptible: bool = False) -> PodGroup:
    spec: dict[str, Any] = {"queue": queue_name, "minMember": min_member}
    if non_preemptible:
        spec["preemptibility"] = "non-preemptible"
    return PodGroup.from_dict({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec})


def pod(name: str, group: str, *, gpus: int = 1, node: str = "") -> Pod:
    """A pod asking 1 CPU, 1Gi and `gpus` GPUs; Running on `node` if given, else Pending."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus}
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": {"pod-group-name": group}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "nodeName": node,
                "containers": [{"name": "main", "resources": {"requests": requests}}],
            },
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def build(proportion: Proportion) -> Session:
    objects = snapshot.ClusterObjects(
        nodes=[
            Node.from_dict(
                {
                    "metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8, "pods": 110}},
                }
            )
        ],
        queues=[
            queue("org", gpu_quota=6),
            queue("team-a", parent="org", gpu_quota=2, gpu_limit=4),
            queue("team-b", parent="org", gpu_quota=4),
        ],
        podgroups=[
            podgroup("run", "team-a"),
            podgroup("wait", "team-a", min_member=2),
            podgroup("over", "team-a"),
            podgroup("np", "team-b", non_preemptible=True),
            podgroup("np2", "team-b", non_preemptible=True),
            podgroup("big", "team-b"),
            podgroup("ghost", "no-such-queue"),
        ],
        pods=[
            pod("run-0", "run", node="n1"),
            pod("wait-0", "wait"),
            pod("wait-1", "wait"),
            pod("over-0", "over", gpus=4),
            pod("np-0", "np", gpus=2, node="n1"),
            pod("np2-0", "np2", gpus=3),
            pod("big-0", "big", gpus=5),
            pod("ghost-0", "ghost", node="n1"),
        ],
    )
    built = snapshot.build(objects, snapshot.SnapshotParams(now=1000.0))
    session = Session(built, SchedulerConfig(), [proportion])
    session.open()
    return session


@pytest.fixture
def ssn() -> Session:
    return build(Proportion.from_args({}))


def plugin(ssn: Session) -> Proportion:
    found = ssn.plugins[0]
    assert isinstance(found, Proportion)
    return found


def gpus(ssn: Session, field: str) -> dict[str, float]:
    return {q: float(getattr(plugin(ssn).queue_chain(q)[0], field)[GPU]) for q in ("org", "team-a", "team-b")}


def ledger(ssn: Session) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Every queue's allocated, non-preemptible allocated, and the queue-order mirror of allocated."""
    p = plugin(ssn)
    shares = {q: p.queue_chain(q)[0] for q in ("org", "team-a", "team-b")}
    return {
        q: (s.allocated.tolist(), s.allocated_non_preemptible.tolist(), list(p.order_state(q).allocated))
        for q, s in shares.items()
    }


def test_open_charges_running_tasks_to_the_leaf_and_every_ancestor(ssn: Session) -> None:
    assert gpus(ssn, "allocated") == {"org": 3, "team-a": 1, "team-b": 2}  # ghost-0's queue is missing
    assert gpus(ssn, "allocated_non_preemptible") == {"org": 2, "team-a": 0, "team-b": 2}
    assert gpus(ssn, "request") == {"org": 17, "team-a": 7, "team-b": 10}  # allocated + pending


def test_open_divides_the_cluster_then_each_parents_share(ssn: Session) -> None:
    # org: 6 deserved + the 2 spare GPUs; its 8 among children: 2 + 4 deserved, 1 + 1 surplus.
    assert gpus(ssn, "fair_share") == {"org": 8, "team-a": 3, "team-b": 5}


def test_allocate_then_rollback_restores_every_queue_exactly(ssn: Session) -> None:
    before = ledger(ssn)
    stmt = ssn.statement()
    cp = stmt.checkpoint()
    stmt.allocate(ssn.snapshot.tasks["wait-0"], "n1")
    stmt.allocate(ssn.snapshot.tasks["wait-1"], "n1")
    assert gpus(ssn, "allocated") == {"org": 5, "team-a": 3, "team-b": 2}
    assert all(a == mirror for a, _, mirror in ledger(ssn).values())
    stmt.rollback(cp)
    assert ledger(ssn) == before


def test_evicting_a_non_preemptible_task_refunds_both_ledgers_until_discarded(ssn: Session) -> None:
    before = ledger(ssn)
    stmt = ssn.statement()
    stmt.evict(ssn.snapshot.tasks["np-0"], Eviction("reclaim", "ns/x", "test"))
    assert gpus(ssn, "allocated_non_preemptible") == {"org": 0, "team-a": 0, "team-b": 0}
    assert gpus(ssn, "allocated") == {"org": 1, "team-a": 1, "team-b": 0}
    stmt.discard()
    assert ledger(ssn) == before


def test_tasks_of_a_job_without_a_queue_are_ignored(ssn: Session) -> None:
    before = ledger(ssn)
    stmt = ssn.statement()
    stmt.evict(ssn.snapshot.tasks["ghost-0"], Eviction("preempt", "ns/x", "test"))
    assert ledger(ssn) == before
    stmt.discard()


@pytest.mark.parametrize(
    "job, reason",
    [
        pytest.param("wait", None, id="within the limit"),
        pytest.param("over", "OverLimit", id="1 + 4 GPUs passes team-a's limit of 4"),
        pytest.param("big", None, id="preemptible job beyond the quota is allowed (no fair-share cap)"),
        pytest.param("np2", "NonPreemptibleOverQuota", id="non-preemptible 2 + 3 GPUs pass team-b's quota of 4"),
    ],
)
def test_job_over_capacity(ssn: Session, job: str, reason: str | None) -> None:
    info = ssn.job(job)
    reject = ssn.job_over_capacity(info, info.pending_tasks())
    assert (reject and reject.reason) == reason


def test_over_limit_message_names_the_queue_and_the_numbers(ssn: Session) -> None:
    info = ssn.job("over")
    reject = ssn.job_over_capacity(info, info.pending_tasks())
    assert reject is not None
    assert reject.message == ("queue team-a would exceed its limit of 4 GPUs (1 GPU allocated, job needs 4 GPUs)")


def test_queue_share_point_answers_by_queue_name(ssn: Session) -> None:
    assert ssn.queue_share("team-a") is plugin(ssn).queue_chain("team-a")[0]
    assert ssn.queue_share("nope") is None
    assert [s.name for s in plugin(ssn).queue_chain("team-b")] == ["team-b", "org"]


def test_queue_order_follows_allocations_made_in_the_session(ssn: Session) -> None:
    team_a, team_b = ssn.snapshot.queues["team-a"], ssn.snapshot.queues["team-b"]
    assert ssn.compare_queues(team_a, team_b, None, None) == -1  # dominant share 1/3 against 2/5
    stmt = ssn.statement()
    stmt.allocate(ssn.snapshot.tasks["wait-0"], "n1")
    stmt.allocate(ssn.snapshot.tasks["wait-1"], "n1")
    assert ssn.compare_queues(team_a, team_b, None, None) == 1  # now 3/3 against 2/5
    stmt.discard()
    assert ssn.compare_queues(team_a, team_b, None, None) == -1


def test_job_request_is_the_tasks_to_allocate_and_follows_allocations(ssn: Session) -> None:
    wait = ssn.job("wait")
    assert plugin(ssn).job_request(wait) == (2000.0, 2 * 2.0**30, 2.0)
    stmt = ssn.statement()
    stmt.allocate(ssn.snapshot.tasks["wait-0"], "n1")
    stmt.allocate(ssn.snapshot.tasks["wait-1"], "n1")
    assert plugin(ssn).job_request(wait) == (0.0, 0.0, 0.0)
    stmt.discard()


@pytest.mark.parametrize(
    "arguments, k_value, multiplier",
    [
        pytest.param({}, 1.0, 1.0, id="defaults"),
        pytest.param({"kValue": "2.5", "relcaimerSaturationMultiplier": "1.5"}, 2.5, 1.5, id="both set"),
        pytest.param({"kValue": "-2"}, 0.0, 1.0, id="kValue <= 0 becomes 0"),
        pytest.param({"relcaimerSaturationMultiplier": "0.5"}, 1.0, 1.0, id="multiplier < 1 becomes 1"),
        pytest.param({"reclaimerSaturationMultiplier": "3"}, 1.0, 1.0, id="only KAI's misspelled key is read"),
    ],
)
def test_from_args(arguments: dict[str, str], k_value: float, multiplier: float) -> None:
    built = Proportion.from_args(arguments)
    assert (built.k_value, built.saturation_multiplier) == (k_value, multiplier)


def test_from_args_rejects_a_bad_number() -> None:
    with pytest.raises(ConfigError, match=r"^plugin proportion argument kValue: expected a number, got 'x'$"):
        Proportion.from_args({"kValue": "x"})


def test_usage_hook_shifts_the_surplus_away_from_the_queue_that_used_more() -> None:
    session = build(Proportion(usage_by_queue={"team-a": np.array([0.0, 0.0, 0.9])}))
    assert gpus(session, "fair_share") == {"org": 8, "team-a": 2, "team-b": 6}  # 3 and 5 without usage


def test_capacity_converts_gpu_memory_with_the_largest_gpu() -> None:
    """A 20000 MiB request is half of the smallest GPU (queue accounting) but a quarter of the largest one,
    which is what the limit check uses (the most lenient reading)."""
    nodes = [
        Node.from_dict(
            {
                "metadata": {"name": f"n{mib}", "labels": {"nvidia.com/gpu.memory": str(mib)}},
                "status": {"allocatable": {"nvidia.com/gpu": 1}},
            }
        )
        for mib in (40000, 80000)
    ]
    objects = snapshot.ClusterObjects(
        nodes=nodes,
        queues=[queue("team", gpu_limit=0.3)],
        podgroups=[podgroup("shared", "team")],
        pods=[
            Pod.from_dict(
                {
                    "metadata": {
                        "name": "shared-0",
                        "namespace": "ns",
                        "uid": "shared-0",
                        "annotations": {"pod-group-name": "shared", "gpu-memory": "20000"},
                    },
                    "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main"}]},
                }
            )
        ],
    )
    session = Session(
        snapshot.build(objects, snapshot.SnapshotParams(now=0.0)), SchedulerConfig(), [Proportion.from_args({})]
    )
    session.open()
    job = session.job("shared")
    assert plugin(session).job_request(job) == (0.0, 0.0, 0.5)
    assert session.job_over_capacity(job, job.pending_tasks()) is None  # 0.25 of a GPU fits the 0.3 limit


def test_a_share_read_after_moves_holds_what_the_queue_order_saw(ssn: Session) -> None:
    """The moves go to the queue-order mirror; the first read of a share after them, whoever reads it (here the
    reclaim rules), sees the same allocation."""
    wait = ssn.job("wait")
    assert ssn.can_reclaim(wait, wait.pending_tasks()) is None  # team-a: 1 + 2 GPUs within its fair share of 3
    stmt = ssn.statement()
    stmt.allocate(ssn.snapshot.tasks["over-0"], "n1")  # 4 GPUs more for team-a
    reject = ssn.can_reclaim(wait, wait.pending_tasks())
    assert reject is not None and "5 GPUs allocated" in reject.message
    assert ssn.queue_share("org") is not None
    assert all(a == mirror for a, _, mirror in ledger(ssn).values())
    stmt.discard()
    assert ssn.can_reclaim(wait, wait.pending_tasks()) is None


def test_queues_of_equal_rank_compare_by_age_then_name_both_ways() -> None:
    """Rules 7-8 are kept per ordered pair of queues: each direction answers its own way."""
    objects = snapshot.ClusterObjects(
        nodes=[Node.from_dict({"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": 8}}})],
        queues=[queue("b-queue", gpu_quota=2), queue("a-queue", gpu_quota=2)],
        podgroups=[],
        pods=[],
    )
    ssn = Session(snapshot.build(objects, snapshot.SnapshotParams(now=1000.0)), SchedulerConfig(), [Proportion()])
    ssn.open()
    a, b = ssn.snapshot.queues["a-queue"], ssn.snapshot.queues["b-queue"]
    for _ in range(2):
        assert plugin(ssn).queue_order(a, b, None, None) == -1
        assert plugin(ssn).queue_order(b, a, None, None) == 1
        assert plugin(ssn).queue_order(a, a, None, None) == 0


def test_queue_share_brings_the_asked_share_up_to_date_and_the_others_when_read(ssn: Session) -> None:
    """QUEUE_SHARE copies only the asked queue's allocation from the queue-order mirror; every other share is
    brought up to date when it is read in turn (a chain, another QUEUE_SHARE)."""
    stmt = ssn.statement()
    stmt.allocate(ssn.snapshot.tasks["wait-0"], "n1")
    team_a = ssn.queue_share("team-a")
    assert team_a is not None and float(team_a.allocated[GPU]) == 2
    org = plugin(ssn)._shares["org"]
    assert float(org.allocated[GPU]) == 3  # not read yet: still as opened
    assert float(plugin(ssn).queue_chain("team-a")[1].allocated[GPU]) == 4
    assert all(a == mirror for a, _, mirror in ledger(ssn).values())
    stmt.discard()


def test_the_queue_order_is_the_sessions_one_callable_and_breaks_its_own_ties(ssn: Session) -> None:
    compare = ssn.queue_comparator()
    assert getattr(compare, "__func__", None) is Proportion.queue_order
    queues = ssn.snapshot.queues
    pairs = [(queues[x], queues[y]) for x in ("org", "team-a", "team-b") for y in ("org", "team-a", "team-b")]
    for left, right in pairs:
        assert compare(left, right, None, None) == ssn.compare_queues(left, right, None, None)
        assert compare(left, right, None, None) != 0 or left.name == right.name


def test_a_jobs_ranking_request_is_the_sum_of_its_tasks_requests_to_the_bit(ssn: Session) -> None:
    """Summed in floats from 0.0 task by task, as a numpy vector would; a job with nothing to allocate asks 0."""
    jobs = {job.name: job for job in ssn.snapshot.jobs.values()}
    for name in ("wait", "run", "over"):
        want = np.zeros(3)
        for task in ssn.ranking_tasks(jobs[name]):
            want += task.queue_request()
        assert plugin(ssn).job_request(jobs[name]) == tuple(want.tolist())
    assert plugin(ssn).job_request(jobs["run"]) == (0.0, 0.0, 0.0)
