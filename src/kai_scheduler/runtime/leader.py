"""Leader election over a `coordination.k8s.io/v1` Lease, with client-go's semantics (`leaderelection.go`).

- A candidate takes the lease when it is absent, when its holder is empty (released), or when it has expired as
  observed locally: the lease record has not changed for `lease_duration` by this candidate's clock (clocks
  of different machines are never compared).
- The leader renews every `retry_period`. It stops being leader when no renew has succeeded for
  `renew_deadline`, which is shorter than `lease_duration`: it steps down before anyone else may take over.
- Every write carries the resourceVersion read just before: a Conflict means another candidate wrote first.
- `release()` on a clean shutdown clears the holder, so the next candidate takes over at once.

`is_leader` is computed against the clock at every call, so a leader whose renewals stall reads as not leader
from the instant its deadline passes, even before its loop notices. `guard` notices it at that instant even
while an attempt hangs on a stalled connection (client-go bounds each renewal by the renew deadline) and calls
`on_lapse`, with which the process cuts its requests in flight: a write sent before the lapse and held by the
network is abandoned instead of landing after another candidate took over. Time comes from an injected `Clock`.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.store.interface import JSON, AlreadyExists, Cancelled, ClusterStore, Conflict, NotFound, StoreError

log = logging.getLogger(__name__)

LEASE_API_VERSION = "coordination.k8s.io/v1"
GUARD_POLL = 0.1  # seconds: how often `guard` looks at a leadership it does not hold


@dataclass(frozen=True, slots=True)
class LeaderConfig:
    """client-go's and KAI's defaults: lease 15s, renew deadline 10s, retry every 2s."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def validate(self) -> None:
        if self.retry_period <= 0:
            raise UserError(f"--leader-elect-retry-period: must be positive, got {self.retry_period}s")
        if self.renew_deadline <= self.retry_period:
            raise UserError("--leader-elect-renew-deadline: must be longer than --leader-elect-retry-period")
        if self.lease_duration <= self.renew_deadline:
            raise UserError("--leader-elect-lease-duration: must be longer than --leader-elect-renew-deadline")


def default_identity() -> str:
    """hostname_<random>, as client-go's callers build it: unique even for two processes on one host."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:12]}"


def format_micro_time(seconds: float) -> str:
    """A Kubernetes MicroTime: RFC 3339 with microseconds ("2026-01-01T00:00:00.000000Z")."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        store: ClusterStore,
        namespace: str,
        name: str,
        clock: Clock,
        *,
        identity: str | None = None,
        config: LeaderConfig | None = None,
        on_lapse: Callable[[], object] | None = None,
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.name = name
        self.clock = clock
        self.identity = identity or default_identity()
        self.config = config or LeaderConfig()
        self.config.validate()
        self.on_lapse = on_lapse  # called once per lapse, by whichever thread notices it
        self._observed: JSON | None = None  # the lease spec last read or written
        self._observed_at = 0.0  # local time it last changed
        self._renewed_at: float | None = None  # local time of our last successful write while leader
        self.reachable = False  # the last attempt got an answer from the store
        self._last_failure = ""  # the error of the failing attempts, logged once while it repeats
        self._waiting_on = ""  # the other holder this candidate last said it waits for
        self._lock = threading.Lock()

    @property
    def is_leader(self) -> bool:
        with self._lock:
            renewed = self._renewed_at
        return renewed is not None and self.clock.now() - renewed < self.config.renew_deadline

    @property
    def holder(self) -> str:
        """The holder of the lease as last observed ("" when none)."""
        return str((self._observed or {}).get("holderIdentity") or "")

    def step(self) -> bool:
        """One attempt to acquire or renew; return whether this candidate is leader afterwards."""
        self._notice_lapse()  # the deadline may have passed since the last step, while no attempt was made
        acquired = self._try_acquire_or_renew()
        if self.reachable:
            self._last_failure = ""
        if acquired:
            with self._lock:
                was_leader, self._renewed_at = self._renewed_at is not None, self.clock.now()
            if not was_leader:
                log.info("became leader", extra={"lease": self._key(), "identity": self.identity})
            return True
        self._notice_lapse()
        return self.is_leader

    def _notice_lapse(self) -> None:
        """Say once that leadership was lost when the last renewal is older than the renew deadline (`is_leader`
        turned false by itself, between two attempts or during one), forget it and call `on_lapse`."""
        with self._lock:
            renewed = self._renewed_at
            lapsed = renewed is not None and self.clock.now() - renewed >= self.config.renew_deadline
            if lapsed:
                self._renewed_at = None
        if lapsed:
            log.warning(
                "lost leadership: the lease was not renewed within the renew deadline",
                extra={"lease": self._key(), "identity": self.identity},
            )
            if self.on_lapse is not None:
                self.on_lapse()

    def guard(self, stop: threading.Event) -> None:
        """Until `stop` is set: wake at each renew deadline and notice a lapse there, whatever `run` is waiting on."""
        while not stop.is_set():
            with self._lock:
                renewed = self._renewed_at
            wait = GUARD_POLL
            if renewed is not None:
                wait = max(wait, renewed + self.config.renew_deadline - self.clock.now())
            if stop.wait(min(wait, self.config.retry_period)):
                return
            self._notice_lapse()

    def run(self, stop: threading.Event) -> None:
        """Acquire and renew every retry period until `stop` is set. The caller releases the lease once the
        work it guards has stopped (`release`), so no step runs after another process took over."""
        while not stop.is_set():
            try:
                self.step()
            except Exception as err:  # the elections outlive any one attempt
                self._failed_unexpectedly(err)
            stop.wait(self.config.retry_period)

    def _failed_unexpectedly(self, err: Exception) -> None:
        """An attempt that raised what no branch expects (a bug, a Lease this code cannot read) is a failed one:
        a leader steps down at its renew deadline as when the server is down (its fence ends its writes), and the
        next attempt comes after the retry period. The traceback is logged the first time, then one line while
        the same error repeats."""
        text = f"{type(err).__name__}: {err}"
        extra = {"lease": self._key(), "identity": self.identity}
        if text != self._last_failure:
            self._last_failure = text
            log.exception(f"leader election attempt failed unexpectedly: {text}", extra=extra)
        else:
            log.debug(f"leader election attempt failed unexpectedly again: {text}", extra=extra)
        self._notice_lapse()

    def release(self) -> bool:
        """Clear the holder if this candidate holds the lease (client-go's ReleaseOnCancel); whether it did.

        The holder becomes "" with a 1 s duration, as client-go writes it: a standby takes the lease at its next
        attempt (within its retry period) instead of waiting for the lease to expire."""
        if not self.is_leader:
            return False
        with self._lock:
            self._renewed_at = None
        try:
            lease = self.store.get("leases", self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return False
            now = format_micro_time(self.clock.now())
            lease["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
            }
            self.store.update(lease)
        except StoreError as err:  # cut (Cancelled): the shutdown's line already names the lease as kept
            level = logging.DEBUG if isinstance(err, Cancelled) else logging.WARNING
            log.log(level, "could not release the lease", extra={"lease": self._key(), "reason": str(err)})
            return False
        log.info("released the lease", extra={"lease": self._key(), "identity": self.identity})
        return True

    # --- one attempt ---

    def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        try:
            lease = self.store.get("leases", self.name, self.namespace)
        except NotFound:
            return self._create(now)
        except StoreError as err:
            return self._unreachable(err)
        self.reachable = True
        spec: JSON = dict(lease.get("spec") or {})
        if spec != self._observed:
            self._observed, self._observed_at = spec, now
        holder = spec.get("holderIdentity") or ""
        duration = _seconds(spec.get("leaseDurationSeconds"), self.config.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            if holder != self._waiting_on:  # said once per holder: a standby otherwise waits in silence
                self._waiting_on = holder
                log.info(
                    f"waiting for the lease: {holder} holds it; taken over if not renewed within {duration:g}s",
                    extra={"lease": self._key(), "identity": self.identity, "holder": holder},
                )
            return False  # held by another, not expired
        self._waiting_on = ""
        transitions = int(spec.get("leaseTransitions") or 0)
        acquired = spec.get("acquireTime") if holder == self.identity else format_micro_time(now)
        lease["spec"] = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": _whole(self.config.lease_duration),
            "acquireTime": acquired,
            "renewTime": format_micro_time(now),
            "leaseTransitions": transitions if holder == self.identity else transitions + 1,
        }
        try:
            written = self.store.update(lease)
        except Conflict:
            return False  # another candidate wrote first
        except StoreError as err:
            return self._unreachable(err)
        self._observed, self._observed_at = dict(written.get("spec") or {}), now
        return True

    def _create(self, now: float) -> bool:
        stamp = format_micro_time(now)
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": _whole(self.config.lease_duration),
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        lease = {
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        try:
            written = self.store.create(lease)
        except AlreadyExists:
            self.reachable = True
            return False
        except StoreError as err:
            return self._unreachable(err)
        self.reachable = True
        self._observed, self._observed_at = dict(written.get("spec") or {}), now
        return True

    def _unreachable(self, err: StoreError) -> bool:
        """A failed attempt: a warning the first time it fails so (an RBAC refusal, the server down), then
        quiet (debug) while the same failure repeats every retry period."""
        self.reachable = False
        text = str(err)
        if isinstance(err, Cancelled):  # the process is stopping and says so itself
            log.debug(f"leader election attempt cut: {text}", extra={"lease": self._key()})
        elif text != self._last_failure:
            self._last_failure = text
            log.warning(f"leader election attempt failed: {text}", extra={"lease": self._key(), "reason": err.reason})
        else:
            log.debug(f"leader election attempt failed again: {text}", extra={"lease": self._key()})
        return False

    def _key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _seconds(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else default


def _whole(seconds: float) -> int:
    return max(1, math.ceil(seconds))  # rounding up: others wait at least as long as we promise
