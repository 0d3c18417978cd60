"""The client-side rate limit every request of a store takes a token from, as client-go's QPS and burst."""

from __future__ import annotations

import threading

from kai_scheduler.store.kube_http.timing import Timing


class RateLimiter:
    """A token bucket shared by every request of one store (client-go's `flowcontrol.NewTokenBucketRateLimiter`).

    Up to `burst` requests go at once, then `qps` per second. A request that finds the bucket empty
    reserves the next token (the count goes negative) and sleeps until it is due, so concurrent callers are
    spaced 1/qps apart in arrival order instead of waking together. qps <= 0 disables the limit.
    """

    def __init__(self, qps: float, burst: int, timing: Timing, interrupt: threading.Event | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be at least 1 when qps > 0, got {burst}")
        self._interrupt = interrupt  # a wait for a token ends early when it is set (the store is cancelled)
        self.qps = qps
        self.burst = burst
        self._timing = timing
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = timing.now()
        self.requests = 0  # tokens taken, for the shutdown log line
        self.waits = 0  # of which had to wait
        self.waited = 0.0  # seconds waited in all

    def acquire(self) -> float:
        """Take one token, sleeping until it is available; return the seconds waited."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._timing.now()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
            self.requests += 1
            if wait > 0:
                self.waits += 1
                self.waited += wait
        if wait > 0:
            self._timing.sleep(wait, self._interrupt)
        return wait
