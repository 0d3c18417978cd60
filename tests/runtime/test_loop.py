"""The component runner: backoff on transient errors, readiness, leadership and stopping."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kai_scheduler.runtime.loop import Backoff, Outcome, Runner
from kai_scheduler.store.activity import Activity
from kai_scheduler.store.interface import Conflict, StoreError
from kai_scheduler.store.kube_http.errors import Throttled, Unavailable


class Script:
    """A step that raises the scripted errors in turn, then succeeds."""

    def __init__(self, *errors: Exception | None) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.errors:
            error = self.errors.pop(0)
            if error is not None:
                raise error


class Waits:
    """Records every wait; asks the loop to stop after `limit` waits (or when a hook says so)."""

    def __init__(self, stop: threading.Event, limit: int, hook: Callable[[int], None] | None = None) -> None:
        self.stop, self.limit, self.hook = stop, limit, hook
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> bool:
        self.delays.append(seconds)
        if self.hook is not None:
            self.hook(len(self.delays))
        if len(self.delays) >= self.limit:
            self.stop.set()
        return self.stop.is_set()


@dataclass
class FakeLeadership:
    is_leader: bool = False
    reachable: bool = True


def runner(step: Callable[[], object], stop: threading.Event, wait: Waits, **kwargs: object) -> Runner:
    return Runner("scheduler", step, 1.0, stop, wait=wait, **kwargs)  # type: ignore[arg-type]


def test_backoff_doubles_up_to_the_maximum_and_resets() -> None:
    backoff = Backoff()
    assert [backoff.next() for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    backoff.reset()
    assert backoff.next() == 1


def test_transient_errors_back_off_then_success_resets_and_marks_ready(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    step = Script(
        Unavailable("connection refused"),
        Throttled("429"),
        StoreError("etcd timeout"),
        None,
        Unavailable("again"),
        None,
    )
    ready: list[bool] = []
    waits = Waits(stop, 6)
    r = runner(step, stop, waits)
    waits.hook = lambda n: ready.append(r.ready)
    with caplog.at_level(logging.WARNING):
        r.run()
    assert waits.delays == [1.0, 2.0, 4.0, 1.0, 1.0, 1.0]  # period 1s after each success
    assert ready == [False, False, False, True, False, True]
    assert step.calls == 6
    assert sum("retrying in" in m for m in caplog.messages) == 4
    assert all("\n" not in m for m in caplog.messages)


def test_a_throttled_step_waits_at_least_the_retry_after_the_store_gave_up_on() -> None:
    """The store retries a 429 as the server asks, a few times; past those the step fails, and its backoff (1 s
    first) is not shorter than the server's Retry-After."""
    stop = threading.Event()
    throttled = Throttled("list Pod: Too many requests (gave up after 5 retries)")
    throttled.retry_after = "3"
    waits = Waits(stop, 3)
    runner(Script(throttled, Throttled("no Retry-After"), None), stop, waits).run()
    assert waits.delays == [3.0, 2.0, 1.0]


def test_not_ready_before_the_first_success() -> None:
    stop = threading.Event()
    assert not Runner("binder", Script(), 1.0, stop).ready


def test_an_unexpected_exception_is_one_error_line_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    step = Script(KeyError("boom"), None)
    waits = Waits(stop, 2)
    r = runner(step, stop, waits)
    with caplog.at_level(logging.DEBUG, logger="kai_scheduler.runtime.loop"):
        r.run()
    assert step.calls == 2 and r.ready
    errors = [rec for rec in caplog.records if rec.levelno == logging.ERROR]
    assert len(errors) == 1 and "KeyError" in errors[0].getMessage() and errors[0].exc_info is None
    assert any(rec.exc_info for rec in caplog.records if rec.levelno == logging.DEBUG)
    assert waits.delays == [1.0, 1.0]


def test_a_per_object_error_is_not_a_backoff(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    waits = Waits(stop, 2)
    r = runner(Script(Conflict("pod p: already bound"), None), stop, waits)
    r.run()
    assert waits.delays == [1.0, 1.0]
    assert r.backoff.failures == 0


def test_a_standby_process_does_not_step_and_is_ready_while_it_reaches_the_server() -> None:
    stop = threading.Event()
    leadership = FakeLeadership()
    step = Script()
    ready: list[bool] = []

    def hook(n: int) -> None:
        ready.append(r.ready)
        if n == 2:
            leadership.reachable = False
        if n == 3:
            leadership.is_leader = True

    waits = Waits(stop, 5, hook)
    r = runner(step, stop, waits, leadership=leadership)
    r.run()
    assert step.calls == 2  # waits 4 and 5 follow steps as leader
    assert ready == [True, True, False, True, True]


def test_setting_the_stop_event_ends_the_loop_from_another_thread() -> None:
    stop = threading.Event()
    started = threading.Event()

    def step() -> None:
        started.set()

    r = Runner("podgrouper", step, 3600.0, stop)
    thread = threading.Thread(target=r.run)
    thread.start()
    assert started.wait(5)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert r.steps == 1


def test_a_change_to_a_trigger_starts_the_next_step_after_the_minimum_gap_not_the_period() -> None:
    stop = threading.Event()
    activity = Activity()
    times: list[float] = []

    def step() -> None:
        times.append(time.monotonic())
        if len(times) == 1:
            activity.note("pods")  # a change while the step runs counts
        if len(times) == 3:
            stop.set()

    run = Runner("podgrouper", step, 30.0, stop, activity=activity, triggers=("pods",), min_gap=0.05)
    thread = threading.Thread(target=run.run)
    thread.start()
    while len(times) < 2:
        time.sleep(0.01)
    time.sleep(0.2)
    noted = time.monotonic()
    activity.note("pods")
    thread.join(timeout=10)
    assert not thread.is_alive() and len(times) == 3
    assert 0.05 <= times[1] - times[0] < 10  # woken by the change during the first step, after the gap
    assert noted <= times[2] < noted + 10  # woken by the later change, not after the 30 s period


def test_after_a_step_whose_writes_were_refused_a_change_does_not_start_the_next_before_the_period() -> None:
    """A step that made its writes with some refused (it makes them again next time) waits the full period
    before the next, however soon a change comes: while the API server refuses, a refused write is made again
    once a period, not on every change of a busy cluster (the scheduler re-sent each failed BindRequest every
    0.1 to 0.3 s through a burst of 500s). The step after one whose writes all went is started by a change again."""
    stop = threading.Event()
    activity = Activity()
    outcomes = [Outcome.WRITES_REFUSED, Outcome.WRITES_REFUSED, None]

    def step() -> object:
        activity.note("pods")  # changes keep coming
        return outcomes.pop(0) if outcomes else None

    waits = Waits(stop, 4)
    Runner("scheduler", step, 1.0, stop, wait=waits, activity=activity, triggers=("pods",), min_gap=0.1).run()
    assert waits.delays == [1.0, 1.0, 0.1, 0.1]


def test_changes_to_other_resources_do_not_start_a_step() -> None:
    stop = threading.Event()
    activity = Activity()
    calls = Script()
    run = Runner("binder", calls, 1.5, stop, activity=activity, triggers=("bindrequests",), min_gap=0.0)
    started = time.monotonic()
    thread = threading.Thread(target=run.run)
    thread.start()
    time.sleep(0.1)
    activity.note("pods")
    time.sleep(0.1)
    assert calls.calls == 1 or time.monotonic() - started >= 1.5  # still waiting out the period
    deadline = time.monotonic() + 10
    while calls.calls < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    activity.wake()
    thread.join(timeout=5)
    assert calls.calls >= 2  # the period still runs the step on an idle cluster


def test_activity_wait_for_sees_only_events_after_the_mark() -> None:
    activity = Activity()
    activity.note("pods")
    mark = activity.mark()
    assert not activity.wait_for(["pods"], mark, 0.01)
    activity.note("nodes")
    assert not activity.changed(["pods"], mark) and activity.changed(["nodes", "pods"], mark)
