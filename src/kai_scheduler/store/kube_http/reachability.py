"""Whether the API server answers, said in two lines per outage rather than one per failed request or watch."""

from __future__ import annotations

import logging
import threading

from kai_scheduler.store.kube_http.timing import Timing

log = logging.getLogger(__name__)


class Reachability:
    """Whether the API server answers, as the requests of one store see it, said in two lines per outage instead
    of one per failed request or watch: a warning when a request first reaches no answer (`failed`), and a warning
    when one gets an answer again (`answered`), with how long it was unreachable and how many requests failed
    meanwhile. Both are warnings, so the default log level shows the end of what it shows the start of. While it
    is `down`, the watches retry quietly (debug): this line says it for all of them."""

    def __init__(self, timing: Timing) -> None:
        self._timing = timing
        self._lock = threading.Lock()
        self._since: float | None = None  # when the first request of the outage failed
        self._failed = 0  # requests failed since then

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, text: str) -> None:
        with self._lock:
            first = self._since is None
            if first:
                self._since = self._timing.now()
            self._failed += 1
        if first:
            log.warning(f"API server unreachable: {text}; every request and watch retries until it answers")

    def answered(self) -> None:
        if self._since is None:  # the usual case, without the lock
            return
        with self._lock:
            since, failed = self._since, self._failed
            self._since, self._failed = None, 0
        if since is not None:
            seconds = self._timing.now() - since
            log.warning(
                f"API server reachable again after {seconds:.1f}s unreachable; {failed} requests failed meanwhile "
                "(the watches resume or relist)",
                extra={"unreachable_seconds": round(seconds, 1), "failed_requests": failed},
            )
