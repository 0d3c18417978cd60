"""The event heap and virtual clock: ordering at one instant, the cycle grid."""

from __future__ import annotations

import pytest

from kai_scheduler.sim.engine import Engine, Kind, next_tick


def test_events_pop_by_time_then_kind_then_order_scheduled() -> None:
    engine = Engine(start=1000.0)
    engine.at(5, Kind.CYCLE, "c")
    engine.at(5, Kind.ARRIVAL, "a1")
    engine.at(2, Kind.CYCLE, "early")
    engine.at(5, Kind.FINISH, "f")
    engine.at(5, Kind.ARRIVAL, "a2")
    log = []
    while engine:
        event = engine.pop()
        log.append((engine.now, event.kind.name, event.key, engine.clock.now()))
    assert log == [
        (2, "CYCLE", "early", 1002.0),
        (5, "FINISH", "f", 1005.0),  # the cluster acts before the scheduler looks
        (5, "ARRIVAL", "a1", 1005.0),  # equal kind: in the order scheduled
        (5, "ARRIVAL", "a2", 1005.0),
        (5, "CYCLE", "c", 1005.0),
    ]


def test_scheduling_in_the_past_raises() -> None:
    engine = Engine(start=0.0)
    engine.at(10, Kind.WAKE)
    engine.pop()
    with pytest.raises(ValueError, match="before now"):
        engine.at(9, Kind.WAKE)
    assert engine.after(1, Kind.WAKE).time == 11


@pytest.mark.parametrize(
    "now, period, last, want",
    [
        pytest.param(0.0, 1.0, None, 0.0, id="first cycle at the start"),
        pytest.param(2.5, 1.0, 1.0, 3.0, id="the next grid point"),
        pytest.param(3.0, 1.0, 3.0, 4.0, id="not twice at one instant"),
        pytest.param(30.0, 10.0, 20.0, 30.0, id="on the grid"),
        pytest.param(0.1 + 0.2, 0.1, 0.2, 0.30000000000000004, id="float noise stays on the grid"),
    ],
)
def test_next_tick(now: float, period: float, last: float | None, want: float) -> None:
    assert next_tick(now, period, last) == pytest.approx(want)
