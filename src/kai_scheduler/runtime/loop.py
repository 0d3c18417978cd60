"""Run one component's step every period, forever: through API outages, bad objects and bugs.

- With leader election, the step runs only while the elector says this process leads; a standby process is
  ready when its elector reaches the API server.
- A transient error (the API server unreachable or throttling, or any store error that is not about one
  object: a 403 from RBAC, a 500) logs one line with the server's reason and the request it refused, marks the
  component not ready and retries after an exponential backoff (1s, 2s, 4s … 60s; never sooner than the
  Retry-After of a 429 the store gave up retrying); the first success marks it ready and resets the backoff.
- A store error about one object (NotFound, Conflict, …) that escapes the step is one warning line; the next
  period retries. Any other exception is one error line (the traceback at debug level); the loop goes on.
- Waiting happens on the stop Event, so setting it (SIGTERM, SIGINT) ends the loop within one wait.
  Steps wait one period after they end, as KAI's `wait.Until` loops do; a runner given the store's `Activity`
  and the resources its step reads (`triggers`) starts the next step as soon as one of them changed (any
  time since the last step began), but never sooner than `min_gap` after the last one ended. The period stays
  the longest wait, so time-driven work still runs on an idle cluster.
- A step that returns `Outcome.WRITES_REFUSED` (the API server refused some of its writes; it went on with the
  others and its next run makes them again) is followed by its full period, however soon a change comes: a refused
  write is made again once a period, as in KAI, not on every change of a busy cluster while the server refuses.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kai_scheduler.store.activity import Activity
from kai_scheduler.store.interface import AlreadyExists, Cancelled, Conflict, Gone, Invalid, NotFound, StoreError
from kai_scheduler.store.kube_http.retry import parse_retry_after

log = logging.getLogger(__name__)

PER_OBJECT_ERRORS = (NotFound, AlreadyExists, Conflict, Gone, Invalid)

_STOP_CHECK = 0.25  # a runner waiting for a change looks at the stop Event this often

Wait = Callable[[float], bool]  # wait up to `seconds`; True when the loop must stop


class Outcome(enum.Enum):
    """What a step may return to its runner (anything else, None included, is a step that did all it had to)."""

    # The API server refused some of the step's writes; it went on with the others, and its next run makes them
    # again.
    WRITES_REFUSED = "writes refused"


class Leadership(Protocol):
    @property
    def is_leader(self) -> bool: ...

    @property
    def reachable(self) -> bool: ...


@dataclass(slots=True)
class Backoff:
    """Exponential delays: initial, 2×initial, … capped at maximum; `reset` after a success."""

    initial: float = 1.0
    maximum: float = 60.0
    failures: int = 0

    def next(self) -> float:
        delay = min(self.initial * 2.0 ** min(self.failures, 62), self.maximum)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


class Runner:
    def __init__(
        self,
        name: str,
        step: Callable[[], object],
        period: float,
        stop: threading.Event,
        *,
        leadership: Leadership | None = None,
        wait: Wait | None = None,
        backoff: Backoff | None = None,
        standby_poll: float = 0.5,
        activity: Activity | None = None,
        triggers: tuple[str, ...] = (),
        min_gap: float = 0.0,
    ) -> None:
        self.name = name
        self.step = step
        self.period = period
        self.stop = stop
        self.leadership = leadership
        self.wait: Wait = wait or stop.wait
        self.backoff = backoff or Backoff()
        self.standby_poll = standby_poll
        self.activity = activity if triggers else None
        self.triggers = triggers
        self.min_gap = min_gap
        self.steps = 0  # successful steps, for tests and logs
        self._ready = False
        self._refused = False  # the last step returned Outcome.WRITES_REFUSED

    @property
    def ready(self) -> bool:
        if self.leadership is not None and not self.leadership.is_leader:
            return self.leadership.reachable
        return self._ready

    def run(self) -> None:
        log.info("component started", extra={"component": self.name})
        while not self.stop.is_set():
            standby = self.leadership is not None and not self.leadership.is_leader
            if standby:
                stopped = self.wait(self.standby_poll)
            else:
                mark = self.activity.mark() if self.activity is not None else 0
                delay = self.tick()
                if self.activity is not None and self.backoff.failures == 0 and not self._refused:
                    stopped = self._wait_for_change(self.activity, mark, delay)
                else:
                    stopped = self.wait(delay)
            if stopped or self.stop.is_set():
                break
        log.info("component stopped", extra={"component": self.name})

    def _wait_for_change(self, activity: Activity, mark: int, period: float) -> bool:
        """Wait `min_gap`, then until a trigger resource changed after `mark` or the period is over; True when
        the loop must stop."""
        gap = min(self.min_gap, period)
        if self.wait(gap) or self.stop.is_set():
            return True
        left = period - gap
        while left > 0:
            step = min(left, _STOP_CHECK)
            if activity.wait_for(self.triggers, mark, step):
                return self.stop.is_set()
            if self.stop.is_set():
                return True
            left -= step
        return False

    def tick(self) -> float:
        """Run the step once; return how long to wait before the next one."""
        self._refused = False
        try:
            self._refused = self.step() is Outcome.WRITES_REFUSED
        except PER_OBJECT_ERRORS as err:
            log.warning(f"{self.name}: {err.reason}: {err}", extra={"component": self.name})
            return self.period
        except Cancelled as err:  # the process is stopping and says so itself
            log.debug(f"{self.name}: step cut: {err}", extra={"component": self.name})
            return self.period
        except StoreError as err:
            self._ready = False
            delay = self.backoff.next()
            if err.retry_after is not None:  # a 429 the store retried as asked, then gave up on: not sooner
                delay = max(delay, min(parse_retry_after(err.retry_after), self.backoff.maximum))
            log.warning(
                f"{self.name}: {err.reason}, retrying in {delay:g}s: {err}",
                extra={"component": self.name, "reason": err.reason, "retry_in": delay},
            )
            return delay
        except Exception as err:
            log.debug(f"{self.name}: step failed", exc_info=True, extra={"component": self.name})
            log.error(f"{self.name}: step failed: {type(err).__name__}: {err}", extra={"component": self.name})
            return self.period
        if not self._ready:
            log.info(f"{self.name}: ready", extra={"component": self.name})
        self._ready = True
        self.steps += 1
        self.backoff.reset()
        return self.period
