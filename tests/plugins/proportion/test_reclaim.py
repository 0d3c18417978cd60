"""The proportion plugin's reclaim rules (§5.3) through the session's dispatchers, on small hand-made clusters.

Queues leave CPU and memory unlimited, so GPUs decide; every pod is one GPU. `fair` shares are computed by the
plugin (§5.2); each test states them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kai_scheduler.cluster.pod_info import PodInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.proportion import reclaim
from kai_scheduler.plugins.proportion.plugin import Proportion
from kai_scheduler.scheduler.scheduler import load_config
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]


@dataclass
class Scenario:
    """What the validator reads (points.VictimScenario)."""

    victims: Sequence[PodInfo] = field(default_factory=list)
    moved: Sequence[PodInfo] = field(default_factory=list)


def _session(objects: list[JSON], *, multiplier: float = 1.0, config: SchedulerConfig | None = None) -> Session:
    ssn = Session(
        b.snapshot([*v.priority_classes(), *objects]),
        config or load_config(None),
        [Proportion(saturation_multiplier=multiplier)],
    )
    ssn.open()
    return ssn


def _rules(ssn: Session) -> reclaim.ReclaimRules:
    [(_, fn)] = ssn.hooks(points.CAN_RECLAIM)
    owner = fn.__self__  # type: ignore[attr-defined]
    assert isinstance(owner, reclaim.ReclaimRules)
    return owner


def _job(ssn: Session, name: str) -> Any:
    return next(j for j in ssn.snapshot.jobs.values() if j.name == name)


def _tasks(ssn: Session, *names: str) -> list[PodInfo]:
    return [b.task(ssn, n) for n in names]


def _running(name: str, queue: str, count: int, **kwargs: Any) -> list[JSON]:
    out: list[JSON] = []
    for i in range(count):
        out += v.job(f"{name}{i}", queue=queue, node="n1", **kwargs)
    return out


def two_queues(
    *,
    a_quota: float,
    b_quota: float,
    b_running: int,
    a_running: int = 0,
    a_pods: int = 2,
    gpus: int = 8,
    a_class: str = "train",
) -> list[JSON]:
    return [
        b.node("n1", gpus=gpus),
        v.queue("a", gpu_quota=a_quota),
        v.queue("b", gpu_quota=b_quota),
        *_running("ra", "a", a_running),
        *_running("rb", "b", b_running),
        *v.job("job", queue="a", pods=a_pods, priority_class=a_class),
    ]


# --- leveled queues --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "left, right, want",
    [
        pytest.param("a1", "a2", ("a1", "a2"), id="sibling teams"),
        pytest.param("a1", "b1", ("dept-a", "dept-b"), id="teams of different departments: the departments"),
        pytest.param("a1", "top", ("org", "top"), id="different top-level trees: the top-level queues"),
    ],
)
def test_leveled_queues(left: str, right: str, want: tuple[str, str]) -> None:
    queues = [
        v.queue("org"),
        v.queue("dept-a", parent="org"),
        v.queue("dept-b", parent="org"),
        v.queue("a1", parent="dept-a"),
        v.queue("a2", parent="dept-a"),
        v.queue("b1", parent="dept-b"),
        v.queue("top"),
    ]
    assert _rules(_session([b.node("n1"), *queues])).leveled(left, right) == want


# --- CAN_RECLAIM -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "objects, rejected",
    [
        pytest.param(two_queues(a_quota=4, b_quota=4, b_running=8), False, id="within fair share (0 + 2 <= 4)"),
        pytest.param(
            two_queues(a_quota=2, b_quota=6, b_running=6, a_running=2, gpus=8), True, id="beyond fair share (2 + 2 > 2)"
        ),
        pytest.param(
            two_queues(a_quota=1, b_quota=1, b_running=8, a_class="inference"),
            True,
            id="non-preemptible beyond deserved (0 + 2 > 1)",
        ),
        pytest.param(
            two_queues(a_quota=4, b_quota=4, b_running=8, a_class="inference"),
            False,
            id="non-preemptible within deserved",
        ),
    ],
)
def test_can_reclaim(objects: list[JSON], rejected: bool) -> None:
    ssn = _session(objects)
    job = _job(ssn, "job")
    assert (ssn.can_reclaim(job, ssn.tasks_to_allocate(job)) is not None) is rejected


def test_can_reclaim_says_why() -> None:
    ssn = _session(two_queues(a_quota=2, b_quota=6, b_running=6, a_running=2))
    job = _job(ssn, "job")
    reject = ssn.can_reclaim(job, ssn.tasks_to_allocate(job))
    assert reject is not None and reject.message == (
        "queue a may not reclaim: 2 GPUs allocated + 2 GPUs requested exceeds its fair share of 2 GPUs"
    )


# --- RECLAIM_VICTIM_FILTER ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "objects, victim_queue_gives",
    [
        pytest.param(
            two_queues(a_quota=4, b_quota=4, b_running=8), True, id="reclaimer within deserved, victim above deserved"
        ),
        pytest.param(
            two_queues(a_quota=4, b_quota=4, b_running=4, gpus=8),
            True,
            id="reclaimer within deserved, victim exactly at deserved: none under, a candidate",
        ),
        pytest.param(
            two_queues(a_quota=4, b_quota=6, b_running=4, gpus=8),
            False,
            id="reclaimer within deserved, victim under deserved",
        ),
        pytest.param(
            two_queues(a_quota=1, b_quota=1, b_running=7, a_running=1, a_pods=1, gpus=8),
            True,
            id="reclaimer over deserved, victim above its allocatable share (7 > 4)",
        ),
        pytest.param(
            [
                b.node("n1", gpus=8),
                v.queue("a", gpu_quota=1),
                v.queue("b", gpu_quota=1, gpu_weight=3),
                *_running("ra", "a", 1),
                *_running("rb", "b", 5),
                *v.job("job", queue="a", pods=1),
            ],
            False,
            id="reclaimer over deserved, victim within its allocatable share",
        ),
    ],
)
def test_victim_filter(objects: list[JSON], victim_queue_gives: bool) -> None:
    ssn = _session(objects)
    assert ssn.is_victim(points.RECLAIM_VICTIM_FILTER, _job(ssn, "job"), _job(ssn, "rb0")) is victim_queue_gives


# --- RECLAIM_VALIDATOR --------------------------------------------------------------------------------------------


def _validate(ssn: Session, victims: Sequence[str], moved: Sequence[str] = ()) -> points.Reject | None:
    job = _job(ssn, "job")
    ssn.job_solution_start(job)
    return ssn.validate(
        points.RECLAIM_VALIDATOR, job, ssn.tasks_to_allocate(job), Scenario(_tasks(ssn, *victims), _tasks(ssn, *moved))
    )


def test_guarantee_deserved_quota_takes_down_to_deserved_but_not_below() -> None:
    """a within deserved (0 + 2 <= 4); b holds 5 on deserved 4, so one vector is taken above deserved (5 > 4),
    a second would start at 4 (not above): refused."""
    objects = [
        b.node("n1", gpus=8),
        v.queue("a", gpu_quota=4),
        v.queue("b", gpu_quota=4),
        v.queue("c", gpu_quota=0),
        *_running("rb", "b", 5),
        *_running("rc", "c", 3),
        *v.job("job", queue="a", pods=2),
    ]
    ssn = _session(objects)
    assert _validate(ssn, ["rb0-0"]) is None
    reject = _validate(ssn, ["rb0-0", "rb1-0"])
    assert reject is not None and reject.message == "queue b is not over its share: it cannot give 1 GPU to a"


def test_moved_pods_count_only_without_consolidating_reclaim() -> None:
    objects = two_queues(a_quota=4, b_quota=4, b_running=4)  # b exactly at deserved: nothing may be taken
    assert _validate(_session(objects), [], moved=["rb0-0", "rb1-0"]) is None
    config = load_config({"flags": {"allow-consolidating-reclaim": False}})
    assert _validate(_session(objects, config=config), [], moved=["rb0-0", "rb1-0"]) is not None


def _saturation_cluster() -> list[JSON]:
    """dept-a (fair 5) holds 4 non-preemptible in a2; dept-b (fair 5) holds 8; dept-c (fair 2) waits; T = 12."""
    return [
        b.node("n1", gpus=12),
        v.queue("dept-a", gpu_quota=4),
        v.queue("dept-b", gpu_quota=4),
        v.queue("dept-c", gpu_quota=2, gpu_weight=0),
        v.queue("a1", parent="dept-a", gpu_quota=2),
        v.queue("a2", parent="dept-a"),
        v.queue("b1", parent="dept-b", gpu_quota=4),
        v.queue("c1", parent="dept-c", gpu_quota=2),
        *_running("ra", "a2", 4, priority_class="build"),
        *_running("rb", "b1", 8),
        *v.job("wait", queue="c1", pods=2, nodeSelector={"pool": "none"}),
        *v.job("job", queue="a1", pods=2),
    ]


@pytest.mark.parametrize(
    "multiplier, victims, rejected",
    [
        pytest.param(1.0, ["rb0-0"], False, id="dept-a ends at its fair share 5/5: fine"),
        pytest.param(1.0, ["rb0-0", "rb1-0"], True, id="6/5 = 1.2 >= b's 6/5 = 1.2: refused"),
    ],
)
def test_saturation_order(multiplier: float, victims: list[str], rejected: bool) -> None:
    ssn = _session(_saturation_cluster(), multiplier=multiplier)
    shares = {q: ssn.queue_share(q) for q in ("dept-a", "dept-b", "dept-c")}
    assert {q: float(s.fair_share[2]) for q, s in shares.items() if s is not None} == {
        "dept-a": 5.0,
        "dept-b": 5.0,
        "dept-c": 2.0,
    }
    job = _job(ssn, "job")
    ssn.job_solution_start(job)
    tasks = ssn.tasks_to_allocate(job)[: len(victims)]
    reject = ssn.validate(points.RECLAIM_VALIDATOR, job, tasks, Scenario(_tasks(ssn, *victims)))
    assert (reject is not None) is rejected


def test_victim_vectors_split_elastic_pods_from_the_core() -> None:
    objects = [b.node("n1", gpus=8), v.queue("q"), *v.job("e", queue="q", pods=4, min_member=2, node="n1")]
    ssn = _session(objects)
    vectors = reclaim.victim_vectors(ssn, _job(ssn, "e"), _tasks(ssn, "e-3", "e-0", "e-2", "e-1"))
    assert [float(x[2]) for x in vectors] == [1.0, 1.0, 2.0]  # e-2, e-3 alone; e-0 and e-1 together
    assert np.array_equal(sum(vectors), np.array([0.0, 0.0, 4.0]))
