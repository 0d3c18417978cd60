"""Action allocate (§3.5-§3.6) with KAI's default plugins: gangs all-or-nothing, elastic extras one per pop,
pipelining onto releasing resources (never a partial gang), and fit errors in plain words.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kai_scheduler.actions.allocate import Allocate, candidates
from kai_scheduler.api import constants
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Op, Operation
from kai_scheduler.scheduler.scheduler import load_config
from tests import builders as b
from tests.plugins.topology import builders as t

JSON = dict[str, Any]
S = PodStatus
FOUND_2_OF_3 = "Resources were found for 2 pods while 3 are required for gang scheduling"
NO_QUOTA_LIMITS = {"quota": -1, "overQuotaWeight": 1, "limit": -1}


def _run(objects: list[JSON], config: SchedulerConfig | None = None) -> tuple[Session, list[list[str]]]:
    """Run allocate; return the session and the committed statements as lists of task names."""
    ssn = b.session(b.snapshot(objects), config=config)
    batches: list[list[str]] = []
    record = ssn.record_commit

    def recording(operations: Iterable[Operation]) -> None:
        ops = list(operations)
        batches.append([op.task.name for op in ops])
        record(ops)

    ssn.record_commit = recording  # type: ignore[method-assign]
    Allocate().execute(ssn)
    return ssn, batches


def _gang(
    name: str, size: int, *, gpus: int, min_member: int | None = None, queue: str = "q", **podgroup: Any
) -> list[JSON]:
    return [
        b.podgroup(name, queue=queue, min_member=size if min_member is None else min_member, **podgroup),
        *(b.pod(f"{name}-{i}", group=name, gpus=gpus) for i in range(size)),
    ]


def _placed(ssn: Session) -> list[tuple[str, str, str]]:
    return [(op.task.name, op.after.node, op.after.status.label) for op in ssn.committed]


def _errors(ssn: Session, job: str) -> list[tuple[str, str]]:
    return [(r.reason, r.message) for r in ssn.job_fit_errors.get(f"pg-{job}", [])]


# --- gangs ---------------------------------------------------------------------------------------------------


def test_a_gang_that_fits_is_placed_in_one_statement() -> None:
    ssn, batches = _run([b.queue("q"), b.node("n1", gpus=4), b.node("n2", gpus=4), *_gang("g", 2, gpus=4)])
    assert batches == [["g-0", "g-1"]]
    assert sorted(_placed(ssn)) == [("g-0", "n1", "Allocated"), ("g-1", "n2", "Allocated")]
    assert ssn.started_jobs == {"pg-g"}


def test_a_gang_that_does_not_fit_leaves_every_ledger_untouched() -> None:
    """Two of three 4-GPU tasks would fit; the gang is all-or-nothing, so nothing is placed."""
    snap = b.snapshot([b.queue("q"), b.node("n1", gpus=4), b.node("n2", gpus=4), *_gang("g", 3, gpus=4)])
    before = b.ledgers(snap)
    ssn = b.session(snap)
    share = ssn.queue_share("q")
    assert share is not None
    allocated = share.allocated.copy()
    Allocate().execute(ssn)
    assert b.same_ledgers(before, b.ledgers(snap))
    assert all(t.status == S.PENDING for t in snap.tasks.values())
    assert all(not n.tasks for n in snap.nodes)
    assert (share.allocated == allocated).all()
    assert ssn.committed == [] and ssn.started_jobs == set()


def test_a_gang_waits_whole_while_a_smaller_job_fits() -> None:
    ssn, _ = _run(
        [
            b.queue("q"),
            b.node("n1", gpus=4),
            b.node("n2", gpus=4),
            *_gang("big", 3, gpus=4, created=0),
            *_gang("small", 1, gpus=4, created=9),
        ]
    )
    assert [name for name, _, _ in _placed(ssn)] == ["small-0"]
    assert _errors(ssn, "big")[0] == ("Unschedulable", f"{FOUND_2_OF_3}: each pod needs 4 GPUs, 12 GPUs in all")


# --- elastic ---------------------------------------------------------------------------------------------------


def test_elastic_extras_come_one_per_statement_after_the_gang_minimum() -> None:
    _, batches = _run([b.queue("q"), b.node("n1", gpus=8), *_gang("e", 4, gpus=1, min_member=2)])
    assert batches == [["e-0", "e-1"], ["e-2"], ["e-3"]]


def test_elastic_extras_interleave_across_queues() -> None:
    """Each pop re-sorts the queues: the queue that just got a pod has the larger share, the other goes next."""
    _, batches = _run(
        [
            b.queue("qa"),
            b.queue("qb"),
            b.node("n1", gpus=8),
            *_gang("a", 4, gpus=1, min_member=1, queue="qa"),
            *_gang("c", 4, gpus=1, min_member=1, queue="qb"),
        ]
    )
    assert batches == [["a-0"], ["c-0"], ["a-1"], ["c-1"], ["a-2"], ["c-2"], ["a-3"], ["c-3"]]


def test_elastic_extras_stop_when_the_cluster_is_full() -> None:
    ssn, _ = _run([b.queue("q"), b.node("n1", gpus=3), *_gang("e", 5, gpus=1, min_member=1)])
    assert [name for name, _, _ in _placed(ssn)] == ["e-0", "e-1", "e-2"]
    assert ssn.started_jobs == {"pg-e"}


# --- pipelining ---------------------------------------------------------------------------------------------------


def _releasing(node: str, gpus: int) -> list[JSON]:
    return [
        b.podgroup(f"old-{node}"),
        b.pod(f"old-{node}-0", group=f"old-{node}", gpus=gpus, node=node, deleted_at=b.NOW),
    ]


def test_a_task_that_fits_only_on_releasing_resources_is_pipelined() -> None:
    ssn, _ = _run([b.queue("q"), b.node("n1", gpus=4), *_releasing("n1", 4), *_gang("g", 1, gpus=2)])
    assert _placed(ssn) == [("g-0", "n1", "Pipelined")]
    assert [op.op for op in ssn.committed] == [Op.PIPELINE]
    assert ssn.started_jobs == set(), "a pipelined job has not started"


def test_idle_resources_are_preferred_over_releasing_ones() -> None:
    ssn, _ = _run(
        [b.queue("q"), b.node("n1", gpus=4), *_releasing("n1", 4), b.node("n2", gpus=2), *_gang("g", 1, gpus=2)]
    )
    assert _placed(ssn) == [("g-0", "n2", "Allocated")]


def test_a_gang_that_needs_any_pipelining_is_pipelined_whole() -> None:
    """One task fits on idle n1, the other only on n2's releasing GPUs: never start a partial gang."""
    ssn, _ = _run(
        [b.queue("q"), b.node("n1", gpus=2), b.node("n2", gpus=2), *_releasing("n2", 2), *_gang("g", 2, gpus=2)]
    )
    assert sorted(_placed(ssn)) == [("g-0", "n1", "Pipelined"), ("g-1", "n2", "Pipelined")]
    assert {op.op for op in ssn.committed} == {Op.PIPELINE}
    assert b.task(ssn, "g-0").placement.holds_idle, "the converted task keeps its idle charge on n1"


def test_a_pipelined_elastic_job_is_put_back_for_its_next_pod_as_in_kai() -> None:
    """KAI pushes a job back while it has pending tasks, pipelined or not (`HasTasksToAllocate`): each elastic pod
    is pipelined in its own statement onto the GPUs being released."""
    ssn, batches = _run(
        [b.queue("q"), b.node("n1", gpus=4), *_releasing("n1", 4), *_gang("e", 3, gpus=1, min_member=1)]
    )
    assert batches == [["e-0"], ["e-1"], ["e-2"]]
    assert _placed(ssn) == [(f"e-{i}", "n1", "Pipelined") for i in range(3)]


# --- which jobs are considered ---------------------------------------------------------------------------------


def test_candidates_are_pending_ready_jobs_with_a_usable_queue() -> None:
    snap = b.snapshot(
        [
            b.queue("q"),
            b.node("n1"),
            *_gang("ok", 1, gpus=1),
            b.podgroup("gated", min_member=2),
            b.pod("gated-0", group="gated"),
            b.pod("gated-1", group="gated", gated=True),
            b.podgroup("running"),
            b.pod("running-0", group="running", node="n1"),
            *_gang("lost", 1, gpus=1, queue="nowhere"),
        ]
    )
    ssn = b.session(snap)
    assert [j.name for j in candidates(ssn)] == ["ok"]


def test_a_pending_pod_being_deleted_is_never_placed() -> None:
    """A pod with a deletion timestamp (held by a finalizer, say) is on its way out: no BindRequest for it."""
    ssn, _ = _run([b.queue("q"), b.node("n1"), b.podgroup("j"), b.pod("j-0", group="j", gpus=1, deleted_at=b.NOW)])
    assert ssn.committed == []


def test_a_job_without_a_usable_queue_is_never_placed() -> None:
    ssn, _ = _run([b.queue("q"), b.node("n1"), *_gang("lost", 1, gpus=1, queue="nowhere")])
    assert ssn.committed == []


# --- fit errors in plain words ------------------------------------------------------------------------------


def _open_queue(name: str, *, parent: str = "", gpu_quota: float = 0, gpu_limit: float = -1) -> JSON:
    return b.queue(
        name, parent=parent, gpu_quota=gpu_quota, gpu_limit=gpu_limit, cpu=NO_QUOTA_LIMITS, memory=NO_QUOTA_LIMITS
    )


FIT_ERRORS = [
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=4), b.node("n2", gpus=4), *_gang("g", 3, gpus=4)],
        [
            ("Unschedulable", f"{FOUND_2_OF_3}: each pod needs 4 GPUs, 12 GPUs in all"),
            ("Unschedulable", "task g-2: 0/2 nodes are available: 2 insufficient nvidia.com/gpu"),
        ],
        id="a gang larger than the free nodes",
    ),
    pytest.param(
        [b.queue("q", gpu_limit=2), b.node("n1", gpus=4), *_gang("g", 1, gpus=3)],
        [("OverLimit", "queue q would exceed its limit of 2 GPUs (0 GPUs allocated, job needs 3 GPUs)")],
        id="a queue at its GPU limit",
    ),
    pytest.param(
        [b.queue("org", gpu_limit=2), b.queue("q", parent="org"), b.node("n1", gpus=4), *_gang("g", 1, gpus=3)],
        [
            (
                "OverLimit",
                "queue org (parent of q) would exceed its limit of 2 GPUs (0 GPUs allocated, job needs 3 GPUs)",
            )
        ],
        id="a parent queue at its GPU limit",
    ),
    pytest.param(
        [_open_queue("q", gpu_quota=1), b.node("n1", gpus=4), *_gang("g", 1, gpus=2, preemptibility="non-preemptible")],
        [
            (
                "NonPreemptibleOverQuota",
                "queue q: non-preemptible jobs may use only its deserved 1 GPU (0 GPUs in use, job needs 2 GPUs)",
            )
        ],
        id="a non-preemptible job over its queue's quota",
    ),
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=4, ready=False), b.node("n2", gpus=1), *_gang("g", 1, gpus=2)],
        [
            (
                "Unschedulable",
                "no node has room for a pod of 2 GPUs (room for 2 more on nodes not ready or cordoned)",
            ),
            (
                "Unschedulable",
                "task g-0: 0/2 nodes are available: 1 node(s) were not ready, 1 insufficient nvidia.com/gpu",
            ),
        ],
        id="each node counted under the first reason that removed it",
    ),
]


@pytest.mark.parametrize("objects, errors", FIT_ERRORS)
def test_fit_errors(objects: list[JSON], errors: list[tuple[str, str]]) -> None:
    ssn, _ = _run(objects)
    assert ssn.committed == []
    assert _errors(ssn, "g") == errors


# --- the gang summary says what the gang really needs ------------------------------------------------------------


def _alike(size: int, *, gpus: int, **pod: Any) -> list[JSON]:
    return [b.podgroup("g", min_member=size), *(b.pod(f"g-{i}", group="g", gpus=gpus, **pod) for i in range(size))]


def _apart(key: str) -> JSON:
    """Each pod repels the job's other pods within a `key` domain."""
    return b.pod_term(key, app="g")


SUMMARIES = [
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=2), *_alike(3, gpus=1)],
        f"{FOUND_2_OF_3}: each pod needs 1 GPU, 3 GPUs in all",
        id="pods that can share a node need GPUs, not a node each",
    ),
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=1), b.node("n2", gpus=1), *_alike(3, gpus=1)],
        f"{FOUND_2_OF_3}: each pod needs 1 GPU, 3 GPUs in all",
        id="pods that can share a node, spread over nodes",
    ),
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=4), b.node("n2", gpus=4), *_alike(3, gpus=4)],
        f"{FOUND_2_OF_3}: each pod needs 4 GPUs, 12 GPUs in all",
        id="pods as large as a node",
    ),
    pytest.param(
        [
            b.queue("q"),
            b.node("n1", gpus=4),
            b.node("n2", gpus=4),
            *_alike(3, gpus=1, labels={"app": "g"}, pod_anti_affinity=[_apart(constants.LABEL_HOSTNAME)]),
        ],
        f"{FOUND_2_OF_3}: each pod needs 1 GPU on a node of its own",
        id="pods with anti-affinity need a node each",
    ),
    pytest.param(
        [
            b.queue("q"),
            *(b.node(f"n{i}", gpus=4, labels={"zone": "z1" if i < 3 else "z2"}) for i in range(4)),
            *_alike(3, gpus=1, labels={"app": "g"}, pod_anti_affinity=[_apart("zone")]),
        ],
        f"{FOUND_2_OF_3}: each pod needs 1 GPU in a zone of its own",
        id="pods with anti-affinity per zone need a zone each",
    ),
    pytest.param(
        [
            b.queue("q"),
            b.namespace(b.NAMESPACE, team="g"),
            b.node("n1", gpus=4),
            b.node("n2", gpus=4),
            *_alike(
                3,
                gpus=1,
                labels={"app": "g"},
                pod_anti_affinity=[
                    b.pod_term(
                        constants.LABEL_HOSTNAME,
                        namespaces=["elsewhere"],  # not its own: the selector adds it
                        namespace_selector={"matchLabels": {"team": "g"}},
                        app="g",
                    )
                ],
            ),
        ],
        f"{FOUND_2_OF_3}: each pod needs 1 GPU on a node of its own",
        id="pods whose anti-affinity reaches their namespace by its labels need a node each",
    ),
    pytest.param(
        [b.queue("q"), b.node("n1", gpus=1), b.node("n2", gpus=4, unschedulable=True), *_alike(3, gpus=1)],
        "Resources were found for 1 pod while 3 are required for gang scheduling: each pod needs 1 GPU, 3 GPUs in all "
        "(room for 4 more on nodes not ready or cordoned)",
        id="room on a cordoned node is said apart",
    ),
]


@pytest.mark.parametrize("objects, summary", SUMMARIES)
def test_the_gang_summary_says_what_the_gang_needs(objects: list[JSON], summary: str) -> None:
    ssn, _ = _run(objects)
    assert ssn.committed == []
    assert _errors(ssn, "g")[0] == ("Unschedulable", summary)


def test_pods_that_can_share_a_node_fit_on_one() -> None:
    """The room the summary counts is the room allocate uses: three 1-GPU pods on one node with three free."""
    ssn, _ = _run([b.queue("q"), b.node("n1", gpus=3), *_alike(3, gpus=1)])
    assert [node for _, node, _ in _placed(ssn)] == ["n1", "n1", "n1"]


def test_no_summary_when_the_room_is_there_but_a_required_topology_domain_is_not() -> None:
    """Two racks of room for 2 pods each: the cluster holds a gang of 3, no rack does. The summary would be false
    (the room is there); the topology plugin's reason says what is missing."""
    objects = [
        b.queue("q"),
        t.topology(),
        *t.nodes(),
        b.podgroup("g", min_member=3, topologyConstraint=t.constraint(required="rack")),
        *(b.pod(f"g-{i}", group="g", gpus=4) for i in range(3)),
    ]
    ssn, _ = _run(objects)
    assert ssn.committed == []
    messages = [message for _, message in _errors(ssn, "g")]
    assert not any("Resources were found" in m for m in messages), messages
    assert any("rack" in m for m in messages), messages


def test_an_elastic_job_keeps_only_why_its_last_pod_did_not_fit() -> None:
    """Errors of earlier attempts are cleared by each placement; the last failure is what the job shows."""
    ssn, _ = _run([b.queue("q"), b.node("n1", gpus=4), *_gang("e", 5, gpus=1, min_member=1)])
    assert len(_placed(ssn)) == 4
    assert _errors(ssn, "e") == [
        ("Unschedulable", "no node has room for a pod of 1 GPU"),
        ("Unschedulable", "task e-4: 0/1 nodes are available: 1 insufficient nvidia.com/gpu"),
    ]


def test_allocate_is_deterministic() -> None:
    objects = [
        b.queue("qa"),
        b.queue("qb"),
        b.node("n1", gpus=4),
        b.node("n2", gpus=4),
        b.node("n3", gpus=2),
        *_gang("a", 3, gpus=2, min_member=2, queue="qa"),
        *_gang("c", 2, gpus=3, queue="qb"),
    ]
    first, _ = _run(objects)
    second, _ = _run(list(reversed(objects)))
    assert _placed(first) == _placed(second)


def _claimed(objects: list[JSON], node: str) -> list[JSON]:
    """The same objects with every pod carrying `node` as its nominatedNodeName (an earlier cycle's pipeline)."""
    for obj in objects:
        if obj["kind"] == "Pod":
            obj.setdefault("status", {})["nominatedNodeName"] = node
    return objects


CLAIMS = {"flags": {"pipelined-claims": True}}  # the option (not KAI's) these tests are about


def test_with_pipelined_claims_a_job_pipelined_in_an_earlier_cycle_is_served_before_queue_order() -> None:
    """Queue b outranks queue a (higher priority, both starved), so by queue order b's job takes the 4 free GPUs.
    a's job was pipelined onto n1 last cycle (its pods name n1): with `pipelined-claims` it goes first and keeps
    its claim."""
    objects = [b.node("n1", gpus=4), b.queue("a", priority=100, gpu_quota=4), b.queue("b", priority=200, gpu_quota=4)]
    unclaimed = [*objects, *_gang("claimer", 4, gpus=1, queue="a"), *_gang("other", 4, gpus=1, queue="b")]
    ssn, _ = _run(unclaimed, load_config(CLAIMS))
    assert {name.rsplit("-", 1)[0] for name, _, _ in _placed(ssn)} == {"other"}
    claimed = [*objects, *_claimed(_gang("claimer", 4, gpus=1, queue="a"), "n1"), *_gang("other", 4, gpus=1, queue="b")]
    ssn, _ = _run(claimed, load_config(CLAIMS))
    assert _placed(ssn) == [(f"claimer-{i}", "n1", "Allocated") for i in range(4)]


def test_by_default_queue_order_decides_as_in_kai() -> None:
    """KAI's order (the default): the job whose pods name a node competes with everyone, and queue b's job,
    first by queue order, takes the GPUs."""
    objects = [b.node("n1", gpus=4), b.queue("a", priority=100, gpu_quota=4), b.queue("b", priority=200, gpu_quota=4)]
    claimed = [*objects, *_claimed(_gang("claimer", 4, gpus=1, queue="a"), "n1"), *_gang("other", 4, gpus=1, queue="b")]
    ssn, _ = _run(claimed)
    assert {name.rsplit("-", 1)[0] for name, _, _ in _placed(ssn)} == {"other"}


def test_a_claim_that_no_longer_fits_leaves_the_resources_to_others() -> None:
    objects = [b.node("n1", gpus=4), b.queue("a", priority=100, gpu_quota=4), b.queue("b", priority=200, gpu_quota=4)]
    objects += [*_claimed(_gang("claimer", 8, gpus=1, queue="a"), "n1"), *_gang("other", 4, gpus=1, queue="b")]
    ssn, _ = _run(objects, load_config(CLAIMS))
    assert [name for name, _, _ in _placed(ssn)] == [f"other-{i}" for i in range(4)]
