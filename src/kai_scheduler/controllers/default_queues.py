"""The default queues `default-parent-queue` → `default-queue`, made by the controllers component.

They are not in the install stream: a Queue cannot be applied in the same pass as the CRD that defines it (the
API server has no such kind until the CRD is established), so `kubectl apply` of one stream would fail the first
time. Instead, as KAI's queue controller side does, the controllers component creates each one that is missing
when it starts (and when it becomes leader), then leaves them alone: a queue a user changed is not reset, and
one deleted later is not brought back until the next start. Until both exist, every failed attempt (the CRD not
established yet, the admission webhook not serving yet while its policy fails closed, RBAC) is one warning line
with the reason and the next attempt comes after a backoff of 1 s, 2 s, 4 s … capped at 10 s; the status
controllers run meanwhile.
"""

from __future__ import annotations

import logging
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.clock import Clock
from kai_scheduler.store.interface import AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
LABELS = {"app.kubernetes.io/part-of": "kai-scheduler"}


def _resources() -> dict[str, Any]:
    unlimited = {"quota": 0, "overQuotaWeight": 1, "limit": -1}
    return {"gpu": dict(unlimited), "cpu": dict(unlimited), "memory": dict(unlimited)}


def default_queues() -> list[dict[str, Any]]:
    """The two queues, parent first: every resource with no quota of its own, weight 1 and no limit."""
    parent = {
        "apiVersion": constants.QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": constants.DEFAULT_PARENT_QUEUE_NAME, "labels": dict(LABELS)},
        "spec": {"resources": _resources()},
    }
    child = {
        "apiVersion": constants.QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": constants.DEFAULT_QUEUE_NAME, "labels": dict(LABELS)},
        "spec": {"parentQueue": constants.DEFAULT_PARENT_QUEUE_NAME, "resources": _resources()},
    }
    return [parent, child]


class DefaultQueues:
    """`ensure()` once per controllers step: creates what is missing until both queues exist, then nothing."""

    def __init__(self, store: ClusterStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.done = False
        self.attempts = 0
        self._next_at = 0.0
        self._delay = INITIAL_BACKOFF

    def ensure(self) -> bool:
        """One attempt when one is due; whether both queues exist (as far as this process knows)."""
        if self.done or self.clock.now() < self._next_at:
            return self.done
        self.attempts += 1
        created = []
        try:
            for queue in default_queues():
                name = queue["metadata"]["name"]
                try:
                    self.store.get("queues", name)  # there already: left as its users made it
                    continue
                except NotFound:
                    pass
                try:
                    self.store.create(queue)
                    created.append(name)
                except AlreadyExists:
                    pass
        except StoreError as err:
            log.warning(
                f"default queues not created yet ({err.reason}), retrying in {self._delay:g}s: {err}",
                extra={"reason": err.reason, "retry_in": self._delay},
            )
            self._next_at = self.clock.now() + self._delay
            self._delay = min(self._delay * 2, MAX_BACKOFF)
            return False
        self.done = True
        if created:
            log.info(f"created the default queues {', '.join(created)}")
        return True
