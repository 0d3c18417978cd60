"""Statement (§3.3): operations change the model and the plugins' state; rollback restores all of it exactly.

Cluster: n1 and n2 with 8 GPUs each. Job `run` has two 1-GPU pods running on n1; job `pend` has two pending
2-GPU pods; job `old` has one 4-GPU pod releasing on n2; one queue `q`. The session has KAI's default plugins,
so the proportion plugin follows every change in its queue accounting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction, Op, Statement, StatementClosed
from tests import builders as b

S = PodStatus
WHY = Eviction("test", "ns/pend", "make room")


def _session() -> Session:
    return b.session(
        b.snapshot(
            [
                b.queue("q"),
                b.node("n1"),
                b.node("n2"),
                b.podgroup("run", min_member=2),
                b.pod("run-0", group="run", gpus=1, node="n1"),
                b.pod("run-1", group="run", gpus=1, node="n1"),
                b.podgroup("pend", min_member=2),
                b.pod("pend-0", group="pend", gpus=2),
                b.pod("pend-1", group="pend", gpus=2),
                b.podgroup("old"),
                b.pod("old-0", group="old", gpus=4, node="n2", deleted_at=b.NOW),
            ]
        )
    )


def _state(ssn: Session) -> dict[str, Any]:
    """Everything a statement may touch: node ledgers, node membership, placements, queue accounting."""
    snap = ssn.snapshot
    proportion: Any = next(p for p in ssn.plugins if p.name == "proportion")
    shares = {}
    for name in snap.queues:
        share = ssn.queue_share(name)
        assert share is not None
        shares[name] = (
            share.allocated.copy(),
            share.allocated_non_preemptible.copy(),
            list(proportion.order_state(name).allocated),
        )
    return {
        "ledgers": b.ledgers(snap),
        "members": {n.name: sorted(n.tasks) for n in snap.nodes},
        "placements": {uid: t.placement for uid, t in snap.tasks.items()},
        "queues": shares,
    }


def _same(left: dict[str, Any], right: dict[str, Any]) -> bool:
    if not b.same_ledgers(left["ledgers"], right["ledgers"]):
        return False
    if left["members"] != right["members"] or left["placements"] != right["placements"]:
        return False
    return all(
        np.array_equal(a[0], c[0]) and np.array_equal(a[1], c[1]) and a[2] == c[2]
        for a, c in zip(left["queues"].values(), right["queues"].values(), strict=True)
    )


def _gpus_allocated(ssn: Session) -> float:
    share = ssn.queue_share("q")
    assert share is not None
    return float(share.allocated[2])


def test_the_state_capture_sees_a_change() -> None:
    ssn = _session()
    before = _state(ssn)
    ssn.statement().allocate(b.task(ssn, "pend-0"), "n1")
    assert not _same(before, _state(ssn))


ROLLBACKS = [
    pytest.param([("allocate", "pend-0", "n1"), ("allocate", "pend-1", "n1")], id="allocate"),
    pytest.param([("pipeline", "pend-0", "n2")], id="pipeline onto releasing resources"),
    pytest.param([("evict", "run-0", "")], id="evict"),
    pytest.param(
        [("evict", "run-0", ""), ("evict", "run-1", ""), ("allocate", "pend-0", "n1"), ("pipeline", "pend-1", "n2")],
        id="evict, allocate and pipeline mixed",
    ),
    pytest.param(
        [("allocate", "pend-0", "n1"), ("pipeline", "pend-1", "n2"), ("convert", "pend", "")],
        id="allocate then convert to pipelined",
    ),
    pytest.param([("evict", "run-0", ""), ("pipeline", "run-0", "n1")], id="evict then un-evict"),
    pytest.param([("evict", "run-0", ""), ("pipeline", "run-0", "n2")], id="evict then move elsewhere"),
]


def _do(ssn: Session, stmt: Any, op: str, name: str, node: str) -> None:
    if op == "allocate":
        stmt.allocate(b.task(ssn, name), node)
    elif op == "pipeline":
        stmt.pipeline(b.task(ssn, name), node)
    elif op == "evict":
        stmt.evict(b.task(ssn, name), WHY)
    else:
        stmt.convert_allocated_to_pipelined(f"pg-{name}")


@pytest.mark.parametrize("ops", ROLLBACKS)
def test_rollback_restores_everything(ops: list[tuple[str, str, str]]) -> None:
    ssn = _session()
    stmt = ssn.statement()
    before = _state(ssn)
    checkpoint = stmt.checkpoint()
    for op in ops:
        _do(ssn, stmt, *op)
    stmt.rollback(checkpoint)
    assert _same(before, _state(ssn))
    assert stmt.operations == ()


@pytest.mark.parametrize("ops", ROLLBACKS)
def test_discard_restores_everything(ops: list[tuple[str, str, str]]) -> None:
    ssn = _session()
    stmt = ssn.statement()
    before = _state(ssn)
    for op in ops:
        _do(ssn, stmt, *op)
    stmt.discard()
    assert _same(before, _state(ssn))
    assert ssn.committed == []


def test_rollback_to_a_middle_checkpoint_keeps_what_came_before() -> None:
    ssn = _session()
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "pend-0"), "n1")
    middle = _state(ssn)
    checkpoint = stmt.checkpoint()
    stmt.evict(b.task(ssn, "run-0"), WHY)
    stmt.allocate(b.task(ssn, "pend-1"), "n1")
    stmt.rollback(checkpoint)
    assert _same(middle, _state(ssn))
    assert [op.op for op in stmt.operations] == [Op.ALLOCATE]


def test_allocate_charges_the_queue_and_evict_refunds_it() -> None:
    ssn = _session()
    stmt = ssn.statement()
    assert _gpus_allocated(ssn) == 2
    stmt.allocate(b.task(ssn, "pend-0"), "n1")
    assert _gpus_allocated(ssn) == 4
    stmt.evict(b.task(ssn, "run-0"), WHY)
    assert _gpus_allocated(ssn) == 3
    stmt.pipeline(b.task(ssn, "pend-1"), "n2")
    assert _gpus_allocated(ssn) == 5, "a pipelined task counts in its queue during the session"


def test_pipeline_after_evict_on_the_same_node_is_an_unevict() -> None:
    ssn = _session()
    stmt = ssn.statement()
    task = b.task(ssn, "run-0")
    before = _state(ssn)
    stmt.evict(task, WHY)
    assert task.status == S.RELEASING
    stmt.pipeline(task, "n1")
    assert [op.op for op in stmt.operations] == [Op.EVICT, Op.UNEVICT]
    assert task.placement == Placement(S.RUNNING, "n1"), "the task is back as it was, not Pipelined"
    assert _same(before, _state(ssn))


def test_pipeline_after_evict_on_another_node_is_a_pipeline() -> None:
    ssn = _session()
    stmt = ssn.statement()
    task = b.task(ssn, "run-0")
    stmt.evict(task, WHY)
    stmt.pipeline(task, "n2")
    assert [op.op for op in stmt.operations] == [Op.EVICT, Op.PIPELINE]
    assert task.placement == Placement(S.PIPELINED, "n2")


def test_a_rolled_back_operation_is_no_longer_the_tasks_last() -> None:
    ssn = _session()
    stmt = ssn.statement()
    task = b.task(ssn, "run-0")
    stmt.evict(task, WHY)
    checkpoint = stmt.checkpoint()
    stmt.pipeline(task, "n2")
    stmt.rollback(checkpoint)
    stmt.pipeline(task, "n1")  # after the eviction again: back where it was
    assert [op.op for op in stmt.operations] == [Op.EVICT, Op.UNEVICT]
    assert task.placement == Placement(S.RUNNING, "n1")


def test_convert_allocated_to_pipelined_keeps_the_idle_charge() -> None:
    ssn = _session()
    stmt = ssn.statement()
    task = b.task(ssn, "pend-0")
    stmt.allocate(task, "n1")
    allocated = _state(ssn)
    stmt.convert_allocated_to_pipelined("pg-pend")
    assert task.placement == Placement(S.PIPELINED, "n1", holds_idle=True)
    converted = _state(ssn)
    assert b.same_ledgers(allocated["ledgers"], converted["ledgers"]), "idle stays charged, releasing untouched"
    assert _gpus_allocated(ssn) == 4, "the queue charge does not change"
    assert [op.op for op in stmt.operations] == [Op.ALLOCATE, Op.PIPELINE]


def test_convert_leaves_other_jobs_alone() -> None:
    ssn = _session()
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "pend-0"), "n1")
    stmt.evict(b.task(ssn, "run-0"), WHY)
    stmt.convert_allocated_to_pipelined("pg-run")
    assert b.task(ssn, "pend-0").status == S.ALLOCATED


def _committed(ssn: Session) -> list[tuple[Op, str, Placement, Placement]]:
    return [(op.op, op.task.name, op.before, op.after) for op in ssn.committed]


PENDING = Placement(S.PENDING)
RUNNING_N1 = Placement(S.RUNNING, "n1")

MERGES = [
    pytest.param(
        [("allocate", "pend-0", "n1")],
        [(Op.ALLOCATE, "pend-0", PENDING, Placement(S.ALLOCATED, "n1"))],
        id="one operation per task as done",
    ),
    pytest.param(
        [("allocate", "pend-0", "n1"), ("convert", "pend", "")],
        [(Op.PIPELINE, "pend-0", PENDING, Placement(S.PIPELINED, "n1", holds_idle=True))],
        id="allocated then converted is one pipeline from pending",
    ),
    pytest.param([("evict", "run-0", ""), ("pipeline", "run-0", "n1")], [], id="evicted then un-evicted is nothing"),
    pytest.param(
        [("evict", "run-0", ""), ("pipeline", "run-0", "n2")],
        [(Op.EVICT, "run-0", RUNNING_N1, Placement(S.PIPELINED, "n2"))],
        id="evicted then pipelined elsewhere stays an eviction that names both nodes",
    ),
    pytest.param(
        [("allocate", "pend-0", "n1"), ("pipeline", "pend-1", "n2"), ("evict", "run-0", "")],
        [
            (Op.EVICT, "run-0", RUNNING_N1, Placement(S.RELEASING, "n1")),
            (Op.PIPELINE, "pend-1", PENDING, Placement(S.PIPELINED, "n2")),
            (Op.ALLOCATE, "pend-0", PENDING, Placement(S.ALLOCATED, "n1")),
        ],
        id="evictions first, then pipelines, then binds",
    ),
]


@pytest.mark.parametrize("ops, want", MERGES)
def test_commit_merges_per_task(ops: list[tuple[str, str, str]], want: list[Any]) -> None:
    ssn = _session()
    stmt = ssn.statement()
    for op in ops:
        _do(ssn, stmt, *op)
    after = _state(ssn)
    stmt.commit()
    assert _committed(ssn) == want
    assert _same(after, _state(ssn)), "commit keeps the model as the statement left it"


def test_a_merged_move_keeps_its_eviction_reason() -> None:
    ssn = _session()
    stmt = ssn.statement()
    stmt.evict(b.task(ssn, "run-0"), WHY)
    stmt.pipeline(b.task(ssn, "run-0"), "n2")
    stmt.commit()
    assert [op.eviction for op in ssn.committed] == [WHY]


def test_two_statements_commit_in_order() -> None:
    ssn = _session()
    first = ssn.statement()
    first.allocate(b.task(ssn, "pend-0"), "n1")
    first.commit()
    second = ssn.statement()
    second.allocate(b.task(ssn, "pend-1"), "n2")
    second.commit()
    assert [op.task.name for op in ssn.committed] == ["pend-0", "pend-1"]


@pytest.mark.parametrize("close", ["commit", "discard"])
@pytest.mark.parametrize("use", ["allocate", "pipeline", "evict", "rollback", "commit", "discard", "convert"])
def test_using_a_closed_statement_raises(close: str, use: str) -> None:
    ssn = _session()
    stmt = ssn.statement()
    getattr(stmt, close)()
    calls: dict[str, Callable[[], object]] = {
        "allocate": lambda: stmt.allocate(b.task(ssn, "pend-0"), "n1"),
        "pipeline": lambda: stmt.pipeline(b.task(ssn, "pend-0"), "n1"),
        "evict": lambda: stmt.evict(b.task(ssn, "run-0"), WHY),
        "rollback": lambda: stmt.rollback(0),
        "commit": stmt.commit,
        "discard": stmt.discard,
        "convert": lambda: stmt.convert_allocated_to_pipelined("pg-pend"),
    }
    before = _state(ssn)
    with pytest.raises(StatementClosed):
        calls[use]()
    assert _same(before, _state(ssn))


@pytest.mark.parametrize(
    "name", [pytest.param("pend-0", id="a pending task"), pytest.param("old-0", id="a releasing task")]
)
def test_evicting_a_task_that_holds_nothing_live_raises(name: str) -> None:
    ssn = _session()
    with pytest.raises(ValueError, match="not evictable"):
        ssn.statement().evict(b.task(ssn, name), WHY)


def test_an_undo_that_cannot_apply_raises() -> None:
    ssn = _session()
    stmt = ssn.statement()
    task = b.task(ssn, "pend-0")
    stmt.allocate(task, "n1")
    ssn.snapshot.move(task, Placement(S.ALLOCATED, "n2"))  # moved behind the statement's back
    with pytest.raises(RuntimeError, match="moved outside the statement"):
        stmt.rollback(0)


# --- property: any sequence of operations, rolled back to any checkpoint, restores that checkpoint's state ----

OPS = st.lists(
    st.tuples(
        st.sampled_from(["allocate", "pipeline", "evict", "convert", "checkpoint"]),
        st.integers(0, 4),
        st.sampled_from(["n1", "n2"]),
    ),
    max_size=12,
)


def _tasks(ssn: Session) -> list[PodInfo]:
    return sorted(ssn.snapshot.tasks.values(), key=lambda t: t.name)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ops=OPS, target=st.integers(0, 20))
def test_any_operations_roll_back_to_any_checkpoint(ops: list[tuple[str, int, str]], target: int) -> None:
    ssn = _session()
    stmt = ssn.statement()
    saved = [(0, _state(ssn))]
    for kind, index, node in ops:
        task = _tasks(ssn)[index]
        if kind == "checkpoint":
            saved.append((stmt.checkpoint(), _state(ssn)))
        elif kind in ("allocate", "pipeline") and task.is_pending:
            getattr(stmt, kind)(task, node)
        elif kind == "evict" and task.node and task.status & (S.RUNNING | S.ALLOCATED | S.PIPELINED):
            stmt.evict(task, WHY)
        elif kind == "convert" and task.job_uid:
            stmt.convert_allocated_to_pipelined(task.job_uid)
    checkpoint, state = saved[target % len(saved)]
    stmt.rollback(checkpoint)
    assert _same(state, _state(ssn))


def test_a_statement_needs_only_its_host_protocol() -> None:
    """A statement works over anything with a snapshot, the two handlers and a decision log."""
    snap = _session().snapshot
    fired: list[str] = []
    committed: list[Any] = []

    class Host:
        snapshot = snap

        def fire_allocate(self, task: PodInfo) -> None:
            fired.append(f"+{task.name}")

        def fire_deallocate(self, task: PodInfo) -> None:
            fired.append(f"-{task.name}")

        def record_commit(self, operations: Any) -> None:
            committed.extend(operations)

    stmt = Statement(Host())
    task = b.task(snap, "pend-0")
    stmt.allocate(task, "n1")
    assert snap.tasks[task.uid].placement == Placement(S.ALLOCATED, "n1") and fired == ["+pend-0"]
    stmt.commit()
    assert [op.op for op in committed] == [Op.ALLOCATE]
