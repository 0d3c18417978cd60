"""Worked examples of the fair-share division (BEHAVIOR.md §5.2), one resource unless stated otherwise."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kai_scheduler.plugins.proportion import division
from kai_scheduler.plugins.proportion.division import ShareInput

U = -1.0


def q(
    name: str,
    *,
    deserved: float = 0,
    weight: float = 1,
    request: float = 0,
    limit: float = U,
    priority: int = 100,
    creation: float = 0,
    uid: str = "",
    parent: str = "",
    usage: float = 0,
) -> ShareInput:
    """A one-resource queue: every vector has a single entry."""
    return ShareInput(
        name=name,
        uid=uid or name,
        parent=parent,
        priority=priority,
        creation=creation,
        deserved=(deserved,),
        limit=(limit,),
        weight=(weight,),
        request=(request,),
        usage=(usage,),
    )


def shares(total: float, queues: list[ShareInput], k_value: float = 1.0) -> dict[str, float]:
    return {name: float(v[0]) for name, v in division.divide((total,), queues, k_value).items()}


CASES = [
    pytest.param(
        9,
        [q("a", weight=1, request=100), q("b", weight=2, request=100)],
        {"a": 3, "b": 6},
        id="surplus splits by weight 1:2",
    ),
    pytest.param(
        10,
        [q("a", deserved=6, weight=0, request=2), q("b", deserved=2, request=10)],
        {"a": 2, "b": 8},
        id="deserved is capped by the request; the rest is surplus",
    ),
    pytest.param(
        10,
        [q("a", deserved=U, weight=0, request=4), q("b", request=10)],
        {"a": 4, "b": 6},
        id="deserved -1 means the whole amount, still capped by the request",
    ),
    pytest.param(
        10,
        [q("a", limit=3, request=10), q("b", request=10)],
        {"a": 3, "b": 7},
        id="limit caps the fair share; the next round gives the rest to the others",
    ),
    pytest.param(
        10,
        [q("hi", priority=200, request=7), q("lo", weight=10, request=10)],
        {"hi": 7, "lo": 3},
        id="higher priority bucket is served first despite a smaller weight",
    ),
    pytest.param(
        10,
        [q("hi", priority=200, request=20), q("lo", weight=10, request=10)],
        {"hi": 10, "lo": 0},
        id="lower priority bucket gets nothing while the higher one has demand",
    ),
    pytest.param(
        10,
        [q("a", deserved=2, weight=0, request=10), q("b", request=5)],
        {"a": 2, "b": 5},
        id="weight 0 gets its deserved quota but no surplus; unwanted surplus stays unassigned",
    ),
    pytest.param(
        10,
        [q("a", creation=3, request=100), q("b", creation=2, request=100), q("c", creation=1, request=100)],
        {"a": 3, "b": 3, "c": 4},
        id="equal remainders: the leftover unit goes to the oldest queue",
    ),
    pytest.param(
        10,
        [q("a", weight=3, request=100), q("b", weight=2, request=100), q("c", weight=2, request=100)],
        {"a": 4, "b": 3, "c": 3},
        id="leftover units go by largest remainder, not by weight",
    ),
    pytest.param(
        1,
        [q("x", uid="2", request=5), q("y", uid="1", request=5)],
        {"x": 0, "y": 1},
        id="equal remainder and age: the smaller UID wins the unit",
    ),
    pytest.param(
        10,
        [q("a", deserved=8, request=8), q("b", deserved=8, request=20)],
        {"a": 8, "b": 8},
        id="over-committed quotas: each gets its deserved, no surplus is divided",
    ),
    pytest.param(
        10,
        [q("a", request=0), q("b", request=0)],
        {"a": 0, "b": 0},
        id="idle quota is not fair share: no request, no share",
    ),
]


@pytest.mark.parametrize("total, queues, want", CASES)
def test_flat_division(total: float, queues: list[ShareInput], want: dict[str, float]) -> None:
    assert shares(total, queues) == want


@pytest.mark.parametrize(
    "k_value, usage_a, want",
    [
        pytest.param(1.0, 0.5, {"a": 3, "b": 7}, id="past usage shifts surplus to the queue that used less"),
        pytest.param(0.0, 0.5, {"a": 5, "b": 5}, id="k 0 ignores usage"),
        pytest.param(-3.0, 0.5, {"a": 5, "b": 5}, id="negative k counts as 0"),
        pytest.param(1.0, 0.0, {"a": 5, "b": 5}, id="no usage: plain weights"),
    ],
)
def test_k_value_and_usage(k_value: float, usage_a: float, want: dict[str, float]) -> None:
    queues = [q("a", request=100, usage=usage_a), q("b", request=100)]
    assert shares(10, queues, k_value) == want


def test_three_level_tree_divides_each_parents_fair_share_among_its_children() -> None:
    queues = [
        q("org-a", deserved=4, request=15),
        q("org-b", deserved=4, request=20),
        q("dept-1", parent="org-a", deserved=2, request=12),
        q("dept-2", parent="org-a", deserved=2, request=3),
        q("team-x", parent="dept-1", weight=1, request=10),
        q("team-y", parent="dept-1", weight=3, request=2),
    ]
    assert shares(12, queues) == {
        "org-a": 6,
        "org-b": 6,  # 4 deserved each + 2 surplus each
        "dept-1": 3,
        "dept-2": 3,  # org-a's 6: 2 + 2 deserved, 1 + 1 surplus
        "team-x": 1,
        "team-y": 2,  # dept-1's 3: team-y needs only 2 of its 2.25; team-x takes the rest
    }


def test_resources_are_divided_independently() -> None:
    a = ShareInput(name="a", deserved=(0, 0, 0), limit=(U, U, U), weight=(1, 1, 0), request=(4000, 8e9, 4))
    b = ShareInput(name="b", deserved=(0, 0, 0), limit=(U, U, U), weight=(1, 1, 1), request=(4000, 8e9, 4))
    got = division.divide((4000, 8e9, 4), [a, b])
    assert got["a"].tolist() == [2000, 4e9, 0]
    assert got["b"].tolist() == [2000, 4e9, 4]


def test_rounding_applies_to_every_unit_not_only_gpus() -> None:
    got = shares(1001, [q("a", request=10_000), q("b", request=10_000)])
    assert got == {"a": 501, "b": 500}  # 500.5 each: floor, then the unit to the older (then smaller UID)


def test_unknown_parent_is_a_broken_invariant() -> None:
    with pytest.raises(ValueError, match="parent queue 'ghost'"):
        division.divide((1,), [q("a", parent="ghost")])


def test_parent_cycle_is_a_broken_invariant() -> None:
    with pytest.raises(ValueError, match="parent cycle: a, b"):
        division.divide((1,), [q("a", parent="b"), q("b", parent="a")])


@pytest.mark.parametrize(
    "deserved, fair_share, limit, want",
    [
        pytest.param(4, 6, U, 6, id="fair share above deserved"),
        pytest.param(4, 2, U, 4, id="deserved above fair share"),
        pytest.param(4, 6, 5, 5, id="capped by the limit"),
        pytest.param(U, 3, 8, 8, id="unlimited deserved means the limit"),
        pytest.param(U, 3, U, 100, id="unlimited both ways means the cluster total"),
        pytest.param(0, 0, U, 0, id="nothing deserved, nothing shared"),
    ],
)
def test_allocatable_share(deserved: float, fair_share: float, limit: float, want: float) -> None:
    assert division.allocatable_share(deserved, fair_share, limit, total=100) == want


# --- properties ---------------------------------------------------------------------------------------------

Spec = tuple[int, int, int, float, int, int]  # deserved, weight, request, limit, priority, creation

_queue_specs = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.integers(0, 3),
        st.integers(0, 40),
        st.sampled_from([U, 5.0, 20.0]),
        st.sampled_from([100, 200]),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=6,
)


def _queues(specs: list[Spec]) -> list[ShareInput]:
    return [
        q(f"q{i}", deserved=d, weight=w, request=r, limit=lim, priority=p, creation=c)
        for i, (d, w, r, lim, p, c) in enumerate(specs)
    ]


@given(_queue_specs, st.integers(0, 60), st.randoms(use_true_random=False))
def test_input_order_never_changes_the_division(specs: list[Spec], total: int, rng: random.Random) -> None:
    queues = _queues(specs)
    shuffled = list(queues)
    rng.shuffle(shuffled)
    assert shares(total, shuffled) == shares(total, queues)


@given(_queue_specs, st.integers(0, 60))
def test_surplus_never_exceeds_the_total_nor_the_need_by_a_unit(specs: list[Spec], total: int) -> None:
    queues = [
        q(f"q{i}", weight=w, request=r, limit=lim, priority=p, creation=c)
        for i, (_, w, r, lim, p, c) in enumerate(specs)
    ]  # nothing deserved: all is surplus
    got = shares(total, queues)
    assert sum(got.values()) <= total + 1e-9
    for queue in queues:
        requestable = queue.request[0] if queue.limit[0] == U else min(queue.limit[0], queue.request[0])
        assert got[queue.name] < requestable + 1


# --- dividing again after some requests moved ------------------------------------------------------------------


def _tree(specs: list[Spec], parents: list[int]) -> list[ShareInput]:
    """Two departments `d0`, `d1` (fixed settings) and the specs' queues under them (`parents`, cycled); each
    department requests what its children do."""
    leaves = [
        q(f"q{i}", deserved=d, weight=w, request=r, limit=lim, priority=p, creation=c, parent=f"d{parents[i % 2]}")
        for i, (d, w, r, lim, p, c) in enumerate(specs)
    ]
    departments = [
        q(f"d{j}", deserved=3 * j + 2, weight=j + 1, request=sum(x.request[0] for x in leaves if x.parent == f"d{j}"))
        for j in (0, 1)
    ]
    return departments + leaves


@given(_queue_specs, st.integers(0, 60), st.lists(st.integers(0, 40), min_size=1, max_size=6), st.booleans())
def test_dividing_again_after_requests_moved_gives_what_a_division_from_nothing_gives(
    specs: list[Spec], total: int, requests: list[int], split: bool
) -> None:
    parents = [0, 1] if split else [0, 0]
    before = _tree(specs, parents)
    last = division.divide((float(total),), before)
    moved_specs = [
        (d, w, requests[i] if i < len(requests) else r, lim, p, c) for i, (d, w, r, lim, p, c) in enumerate(specs)
    ]
    after = _tree(moved_specs, parents)
    changed = {b.name for a, b in zip(before, after, strict=True) if a.request != b.request}
    again = division.redivide((float(total),), after, 1.0, last, changed)
    fresh = division.divide((float(total),), after)
    assert {n: v.tobytes() for n, v in again.items()} == {n: v.tobytes() for n, v in fresh.items()}


def test_dividing_again_keeps_the_sibling_sets_nothing_moved() -> None:
    """A request moved under `d0` moves no department's share (both are satisfied): `d1`'s children keep their
    last vectors, `d0`'s are divided again."""
    before = [
        q("d0", deserved=10, request=4),
        q("d1", deserved=10, request=3),
        q("a", parent="d0", deserved=2, request=4),
        q("b", parent="d1", deserved=2, request=3),
        q("c", parent="d1", deserved=1, request=0),
    ]
    last = division.divide((30.0,), before)
    after = [*before[:2], q("a", parent="d0", deserved=2, request=5), *before[3:]]
    after[0] = q("d0", deserved=10, request=5)
    again = division.redivide((30.0,), after, 1.0, last, {"a", "d0"})
    assert again["b"] is last["b"] and again["c"] is last["c"] and again["d1"] is not last["d1"]
    assert again["a"] is not last["a"] and float(again["a"][0]) == 5 == float(again["d0"][0])
    assert {n: float(v[0]) for n, v in again.items()} == shares(30, after)
