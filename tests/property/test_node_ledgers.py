"""A row's ledgers follow §3.2's rules to the bit (hypothesis): random float ledgers and requests (fractions that
are not dyadic, signed zeros), random moves on one node through `add_task`, `remove_task` and `move_task`, against
the rules applied one ledger at a time as plain numpy additions and subtractions. One addition of a signed request
to the row's three ledgers (`NodeArrays.charges`) must give the very bits of those separate steps: a victim
search's decisions read these sums."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.cluster.node_info import NodeArrays
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from tests import builders as b

S = PodStatus
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)
PLACEMENTS = [
    Placement(S.RUNNING, "n"),
    Placement(S.RELEASING, "n"),
    Placement(S.STUCK_IN_RELEASING, "n"),
    Placement(S.PIPELINED, "n"),
    Placement(S.PIPELINED, "n", holds_idle=True),
    Placement(S.ALLOCATED, "n"),
]
AMOUNTS = st.sampled_from([0.0, -0.0, 0.1, 0.37, 1 / 3, 2.5, 1e-17, 7e15, 123456.789])
ROWS = st.lists(AMOUNTS, min_size=4, max_size=4)


def _reference(ledgers: dict[str, np.ndarray], request: np.ndarray, placement: Placement, *, refund: bool) -> None:
    """The rule, ledger by ledger (Releasing: used, releasing +, idle -; Pipelined: used +, releasing -; else
    used +, idle -), taken back by the inverse operations."""
    add, take = (np.subtract, np.add) if refund else (np.add, np.subtract)
    status = S.ALLOCATED if placement.holds_idle else placement.status
    add(ledgers["used"], request, out=ledgers["used"])
    if status in (S.RELEASING,):
        add(ledgers["releasing"], request, out=ledgers["releasing"])
        take(ledgers["idle"], request, out=ledgers["idle"])
    elif status == S.PIPELINED:
        take(ledgers["releasing"], request, out=ledgers["releasing"])
    else:
        take(ledgers["idle"], request, out=ledgers["idle"])


def _derived(ledgers: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    free = ledgers["idle"] + ledgers["releasing"]
    return free, np.maximum(ledgers["idle"] + np.minimum(ledgers["releasing"], 0.0), 0.0)


@SETTINGS
@given(
    start=st.tuples(ROWS, ROWS, ROWS),
    requests=st.lists(ROWS, min_size=1, max_size=3),
    steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, len(PLACEMENTS) - 1)), min_size=1, max_size=12),
)
def test_a_rows_ledgers_are_the_rules_to_the_bit(
    start: tuple[list[float], list[float], list[float]], requests: list[list[float]], steps: list[tuple[int, int]]
) -> None:
    snap = b.snapshot([b.queue("q"), b.node("n"), b.pod("t", cpu="1")])
    node, a = snap.node_by_name["n"], snap.arrays
    used, idle, releasing = (np.array(r) for r in start)
    a.used[0], a.idle[0], a.releasing[0] = used, idle, releasing
    a.refresh(0)
    expected = {"used": used, "idle": idle, "releasing": releasing}
    template = b.task(snap, "t")
    tasks = [dataclasses.replace(template, uid=f"u{i}", request=np.array(r)) for i, r in enumerate(requests)]  # type: ignore[arg-type]
    where: dict[int, Placement] = {}
    for which, to in steps:
        task: PodInfo = tasks[which % len(tasks)]
        after, before = PLACEMENTS[to], where.get(which % len(tasks))
        if before is None:
            node.add_task(task, after)
        elif to % 2:
            assert node.move_task(task, before, after)
            _reference(expected, task.request, before, refund=True)
        else:
            node.remove_task(task, before)
            _reference(expected, task.request, before, refund=True)
            node.add_task(task, after)
        _reference(expected, task.request, after, refund=False)
        where[which % len(tasks)] = after
        for name in ("used", "idle", "releasing"):
            assert getattr(a, name)[0].tobytes() == expected[name].tobytes(), name
        free, free_now = _derived(expected)
        assert a.free[0].tobytes() == free.tobytes() and a.free_now[0].tobytes() == free_now.tobytes()


def test_a_copy_has_its_own_ledgers_block() -> None:
    """The ledgers are views of one array per `NodeArrays` (a row's three side by side); a copy's views are of
    its own array, so a task moved on a copy leaves the original as it was."""
    a = NodeArrays.empty(3, 4)
    for ledger in (a.used, a.idle, a.releasing, a.free, a.free_now):
        assert ledger.base is a.ledgers and ledger.flags.f_contiguous
    row = a.row_views(1)
    assert [np.shares_memory(v, a.ledgers) for v in row] == [True] * 6
    assert row[5].shape == (12,)
    kept = a.copy()
    np.add(row[5], a.charges(np.array([1.0, 2.0, 3.0, 4.0]))[0], out=row[5])
    assert a.used[1].tolist() == [1.0, 2.0, 3.0, 4.0] and a.releasing[1].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert not kept.used.any() and not kept.releasing.any()
    assert all(not np.shares_memory(v, a.ledgers) for v in kept.row_views(1))


def test_the_derived_row_is_the_rule_to_the_bit_at_every_edge() -> None:
    """`free_now` is taken as max(min(free, idle), 0); every pair of edge values (signed zeros, the smallest
    subnormal, sums that overflow, NaN, fractions) gives the bits of the rule as written,
    max(idle + min(releasing, 0), 0). Ledgers are sums of finite quantities: an infinite idle is left out (-inf
    idle with +inf releasing is the one pair where the two differ)."""
    edges = [-1.7e308, -7e15, -2.5, -1e-300, -5e-324, -0.0, 0.0, 5e-324, 1e-17, 0.1, 1 / 3, 2.5, 7e15, 1.7e308]
    idle, releasing = (np.array(v) for v in zip(*itertools.product([*edges, np.nan], repeat=2), strict=True))
    a = NodeArrays.empty(len(idle), 1)
    a.idle[:, 0], a.releasing[:, 0] = idle, releasing
    with np.errstate(over="ignore", invalid="ignore"):
        a.refresh()
        expected = _derived({"idle": idle, "releasing": releasing})
    assert a.free[:, 0].tobytes() == expected[0].tobytes()
    assert a.free_now[:, 0].tobytes() == expected[1].tobytes()
