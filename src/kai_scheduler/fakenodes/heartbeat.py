"""Node heartbeats, so that a node-lifecycle controller never marks the fake nodes NotReady.

As the kubelet does: a Lease per node in `kube-node-lease` (holderIdentity = the node, leaseDurationSeconds
40, owned by the Node so that it goes with it) renewed every `lease_period`, and the Ready condition's
`lastHeartbeatTime` refreshed every `status_period` (a real kubelet: 5 minutes when nothing changes; the lease
is what the controller watches). A failed write is tried again at the next beat; it is logged once per node,
heartbeat and kind of failure, and once more when it works again. A not-ready or
unreachable taint found on a node at a status refresh is cleared (see `fleet.clear_condition_taints`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kai_scheduler.api.clock import Clock
from kai_scheduler.fakenodes.fleet import clear_condition_taints
from kai_scheduler.fakenodes.nodes import ready_condition
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class HeartbeatConfig:
    lease_period: float = 10.0
    status_period: float = 60.0
    lease_duration_seconds: int = 40
    namespace: str = LEASE_NAMESPACE


class Heartbeat:
    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        nodes: list[str],
        config: HeartbeatConfig | None = None,
        owners: dict[str, str] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.nodes = list(nodes)
        self.config = config or HeartbeatConfig()
        self.owners = owners or {}  # node name → uid, for the lease's ownerReference
        self._lease_due: dict[str, float] = {}  # node → next renewal (absent: now)
        self._status_due: dict[str, float] = {}
        self._ready_since: dict[str, float] = {}
        self._lease_exists: set[str] = set()
        self._failing: dict[tuple[str, str], str] = {}  # (node, heartbeat) → the reason it fails with, said once
        self.writes = 0

    def beat(self) -> None:
        """Renew every lease and Ready condition that is due."""
        now = self.clock.now()
        for node in self.nodes:
            if self._lease_due.get(node, now) <= now and self._try(node, "lease", self._renew_lease, now):
                self._lease_due[node] = now + self.config.lease_period
            if self._status_due.get(node, now) <= now and self._try(node, "status", self._refresh_status, now):
                self._status_due[node] = now + self.config.status_period

    def _try(self, node: str, what: str, write: Callable[[str, float], None], now: float) -> bool:
        try:
            write(node, now)
        except StoreError as err:
            # Once per node, heartbeat and kind of failure, until it works again: a failed write is retried at
            # every beat, so a node deleted by hand or a server down was hundreds of lines a minute.
            level = logging.DEBUG if self._failing.get((node, what)) == err.reason else logging.WARNING
            self._failing[(node, what)] = err.reason
            log.log(
                level,
                "node heartbeat failed; retried at every beat, said again once it works or fails otherwise",
                extra={"node": node, "heartbeat": what, "error": str(err)},
            )
            return False
        if self._failing.pop((node, what), None) is not None:
            log.info("node heartbeat works again", extra={"node": node, "heartbeat": what})
        self.writes += 1
        return True

    def _renew_lease(self, node: str, now: float) -> None:
        renew = {
            "spec": {
                "holderIdentity": node,
                "leaseDurationSeconds": self.config.lease_duration_seconds,
                "renewTime": micro_time(now),
            }
        }
        if node in self._lease_exists:
            try:
                self.store.patch("leases", node, self.config.namespace, renew)
                return
            except NotFound:
                self._lease_exists.discard(node)
        try:
            self.store.create(self._lease(node, renew["spec"]))
        except AlreadyExists:  # a previous run's lease: take it over
            self.store.patch("leases", node, self.config.namespace, renew)
        self._lease_exists.add(node)

    def _lease(self, node: str, spec: JSON) -> JSON:
        meta: JSON = {"name": node, "namespace": self.config.namespace}
        uid = self.owners.get(node)
        if uid:
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}]
        return {"apiVersion": LEASE_API_VERSION, "kind": "Lease", "metadata": meta, "spec": spec}

    def _refresh_status(self, node: str, now: float) -> None:
        since = self._ready_since.setdefault(node, now)
        written = self.store.patch(
            "nodes", node, "", {"status": {"conditions": [ready_condition(now, since)]}}, "status"
        )
        clear_condition_taints(self.store, written)


def micro_time(seconds: float) -> str:
    """A Kubernetes MicroTime (RFC 3339 with microseconds), as Lease.spec.renewTime wants."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
