"""When a request is tried again, and after how long.

A 429 answer, and a 5xx that carries Retry-After, is retried after the delay the server asks for, a bounded
number of times (client-go's `checkWait`); a 429 that is a refusal rather than throttling (a pod disruption budget
blocking an eviction) is left to the caller. A watch that broke reconnects after an exponential backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kai_scheduler.store.interface import JSON, StoreError
from kai_scheduler.store.kube_http.errors import Throttled, error_from, status_of

# Decides about a 429 before it is retried: an error to raise at once, or None to treat it as throttling. It gets
# the Status and the request's name (`what`).
RefusalCheck = Callable[[JSON, str], StoreError | None]


def delay_before_retry(
    status: int,
    retry_after: str | None,
    read: Callable[[], bytes],
    attempt: int,
    max_retries: int,
    max_retry_after: float,
    refusal: RefusalCheck | None,
    what: str,
) -> float | None:
    """None to hand the answer (its status and Retry-After header) to the caller; else the delay before the next
    attempt, once the answer's body was read (`read`). Past `max_retries` the answer's error is raised (Throttled
    for a 429)."""
    if status != 429 and not (status >= 500 and retry_after is not None):
        return None
    raw = read()
    if refusal is not None and status == 429:
        refused = refusal(status_of(raw), what)
        if refused is not None:
            raise refused
    if attempt >= max_retries:
        err = error_from(status, raw, what, retry_after=retry_after)
        if status == 429:
            throttled = Throttled(f"{err} (gave up after {attempt} retries)")
            throttled.code, throttled.retry_after = err.code, err.retry_after
            raise throttled
        raise err
    return min(parse_retry_after(retry_after), max_retry_after)


def parse_retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header; 1 when absent or not a number of seconds (the HTTP-date form
    is not used by the API server)."""
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0


def backoff_delays(initial: float, maximum: float, factor: float = 2.0) -> Iterator[float]:
    """Delays between reconnection attempts: initial, initial*factor, … capped at maximum."""
    delay = initial
    while True:
        yield delay
        delay = min(delay * factor, maximum)
