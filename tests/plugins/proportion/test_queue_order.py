"""Queue order rules 1-8 (BEHAVIOR.md §3.4): each case is decided by its rule while all earlier rules tie,
and where possible a later rule would have answered the other way."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kai_scheduler.plugins.proportion import queue_order
from kai_scheduler.plugins.proportion.queue_order import QueueState

U = -1.0
V = Sequence[float]


def state(
    name: str = "q",
    *,
    allocated: V = (0, 0, 0),
    fair_share: V = (10, 10, 10),
    deserved: V = (5, 5, 5),
    limit: V = (U, U, U),
    priority: int = 100,
    creation: float = 0,
) -> QueueState:
    return QueueState.of(
        name=name,
        priority=priority,
        creation=creation,
        deserved=deserved,
        fair_share=fair_share,
        limit=limit,
        total=(100, 100, 100),
        allocated=allocated,
    )


RULES = [
    pytest.param(
        state("l", allocated=(1, 1, 1), fair_share=(5, 5, 5)),
        state("r", allocated=(6, 6, 6), fair_share=(5, 5, 5), priority=200),
        None,
        None,
        -1,
        id="1: under fair share beats over fair share, even against higher priority",
    ),
    pytest.param(
        state("l", allocated=(6, 6, 0), fair_share=(5, 5, 5)),
        state("r", allocated=(6, 6, 6), fair_share=(5, 5, 5), priority=200),
        None,
        None,
        -1,
        id="1: over in only some resources is not over",
    ),
    pytest.param(
        state("l", allocated=(1, 1, 1)),
        state("r", allocated=(4, 4, 4), priority=200),
        (1, 1, 1),
        (2, 2, 2),
        -1,
        id="2: starved (allocated + job within deserved) beats not starved, even against priority",
    ),
    pytest.param(
        state("l", allocated=(4, 4, 4), deserved=(U, U, U)),
        state("r", allocated=(4, 4, 4), priority=200),
        (2, 2, 2),
        (2, 2, 2),
        -1,
        id="2: unlimited deserved is always within quota",
    ),
    pytest.param(
        state("l", allocated=(8, 8, 8), priority=200),
        state("r", allocated=(6, 6, 6)),
        None,
        None,
        -1,
        id="3: higher priority first, even with the larger dominant share",
    ),
    pytest.param(
        state("l", deserved=(1, 1, 0), fair_share=(10, 10, 0)),
        state("r", allocated=(20000, 0, 0), deserved=(1, 1, 1)),
        (0, 0, 1),
        None,
        1,
        id="4: a queue that would hold a resource it has no allocatable share of goes last",
    ),
    pytest.param(
        state("l", allocated=(2, 2, 2), deserved=(1, 1, 1)),
        state("r", allocated=(1, 1, 1), deserved=(1, 1, 1)),
        (1, 1, 1),
        (4, 4, 4),
        -1,
        id="5: smaller dominant share with the job first, though larger without it",
    ),
    pytest.param(
        state("l", allocated=(1, 1, 1), deserved=(1, 1, 1)),
        state("r", allocated=(2, 2, 2), deserved=(1, 1, 1)),
        (2, 2, 2),
        (1, 1, 1),
        -1,
        id="6: equal share with the job: smaller share without it first",
    ),
    pytest.param(
        state("l", fair_share=(5, 5, 5), deserved=(1, 1, 1), creation=9),
        state("r", fair_share=(10, 10, 10), deserved=(1, 1, 1)),
        None,
        None,
        -1,
        id="7: Pareto-smaller allocatable share first, even when younger",
    ),
    pytest.param(
        state("l", fair_share=(5, 20, 5), creation=9),
        state("r", fair_share=(10, 10, 10)),
        None,
        None,
        1,
        id="7: allocatable shares that are not Pareto-ordered tie; the older queue wins",
    ),
    pytest.param(state("l", creation=1), state("r", creation=2), None, None, -1, id="8: older queue first"),
    pytest.param(state("b"), state("a"), None, None, 1, id="8: same age: the smaller name first"),
]


@pytest.mark.parametrize("left, right, left_request, right_request, want", RULES)
def test_rules(left: QueueState, right: QueueState, left_request: V | None, right_request: V | None, want: int) -> None:
    assert queue_order.compare(left, right, left_request, right_request) == want
    assert queue_order.compare(right, left, right_request, left_request) == -want


def test_victim_mode_reverses_every_rule() -> None:
    left = state("l", allocated=(1, 1, 1), fair_share=(5, 5, 5))
    right = state("r", allocated=(6, 6, 6), fair_share=(5, 5, 5))
    assert queue_order.compare(left, right, None, None, victim=True) == 1  # the over-served gives first


@pytest.mark.parametrize(
    "left_victims, right_victims, want",
    [
        pytest.param(None, None, 1, id="both over fair share: tie up to the name, reversed"),
        pytest.param(None, (2, 2, 2), -1, id="victims taken bring b under its fair share: a gives next"),
        pytest.param((2, 2, 2), (2, 2, 2), 1, id="both back under fair share: tie again"),
    ],
)
def test_victim_mode_judges_a_queue_without_the_victims_already_taken(
    left_victims: V | None, right_victims: V | None, want: int
) -> None:
    left = state("a", allocated=(6, 6, 6), fair_share=(5, 5, 5))
    right = state("b", allocated=(6, 6, 6), fair_share=(5, 5, 5))
    got = queue_order.compare(
        left, right, None, None, victim=True, left_victims=left_victims, right_victims=right_victims
    )
    assert got == want


@pytest.mark.parametrize(
    "held, allocatable, want",
    [
        pytest.param((5, 1, 0), (10, 10, 10), 0.5, id="largest ratio wins"),
        pytest.param((0, 0, 2), (10, 10, 0), 2000.0, id="no allocatable share: held x 1000"),
        pytest.param((0, 0, 0), (0, 0, 0), 0.0, id="nothing held, nothing owed"),
    ],
)
def test_dominant_share(held: V, allocatable: V, want: float) -> None:
    assert queue_order.dominant_share(held, allocatable) == want


# --- properties ---------------------------------------------------------------------------------------------

_amounts = st.tuples(*[st.sampled_from([0.0, 1.0, 2.0, 5.0, 10.0])] * 3)
_states = st.builds(
    state,
    st.sampled_from(["a", "b", "c"]),
    allocated=_amounts,
    fair_share=_amounts,
    deserved=st.one_of(_amounts, st.just((U, U, U))),
    priority=st.sampled_from([100, 200]),
    creation=st.sampled_from([0.0, 1.0]),
)


@given(_states, _states, st.one_of(st.none(), _amounts), st.one_of(st.none(), _amounts), st.booleans())
def test_order_is_antisymmetric_and_total(
    left: QueueState, right: QueueState, left_request: V | None, right_request: V | None, victim: bool
) -> None:
    forward = queue_order.compare(left, right, left_request, right_request, victim=victim)
    backward = queue_order.compare(right, left, right_request, left_request, victim=victim)
    assert forward == -backward
    assert forward != 0 or left.name == right.name


@given(_states, _states, st.one_of(st.none(), _amounts), st.one_of(st.none(), _amounts))
def test_cached_ranks_decide_as_the_direct_comparison(
    left: QueueState, right: QueueState, left_request: V | None, right_request: V | None
) -> None:
    ranked = queue_order.compare_ranked(
        left, queue_order.rank(left, left_request), right, queue_order.rank(right, right_request)
    )
    assert ranked == queue_order.compare(left, right, left_request, right_request)


_floats = st.floats(min_value=-1.0, max_value=1e6, allow_nan=False) | st.sampled_from([0.0, -0.0, 0.1, 0.3, 1e-9])
_vectors = st.tuples(_floats, _floats, _floats)


@given(
    st.builds(
        state,
        allocated=_vectors,
        fair_share=_vectors,
        deserved=st.one_of(_vectors, st.just((U, U, U))),
        limit=st.one_of(_vectors, st.just((U, U, U))),
        priority=st.integers(0, 300),
    ),
    st.one_of(st.none(), _vectors),
    st.one_of(st.none(), _vectors),
)
def test_rank_is_the_rules_helpers_bit_for_bit(queue: QueueState, request: V | None, victims: V | None) -> None:
    """The one-pass rank answers exactly what the rules' helpers answer, float shares to the bit."""
    held = queue.allocated if victims is None else [h - v for h, v in zip(queue.allocated, victims, strict=True)]
    with_job = held if request is None else [h + r for h, r in zip(held, request, strict=True)]
    want = (
        queue_order.is_over_fair_share(held, queue.fair_share),
        not queue_order.is_starved(with_job, queue.deserved),
        -queue.priority,
        queue_order.holds_unallocatable(with_job, queue.allocatable),
        queue_order.dominant_share(with_job, queue.allocatable),
        queue_order.dominant_share(held, queue.allocatable),
    )
    got = queue_order.rank(queue, request, victims)
    assert got == want
    assert [math.copysign(1.0, x) for x in got[4:]] == [math.copysign(1.0, x) for x in want[4:]]
