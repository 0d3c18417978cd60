"""The fake kubelet: plays the pods bound to its nodes over any `ClusterStore`, on an injected clock.

Each `step()` reads the pod changes (LIST, then WATCH), renews the node heartbeats that are due, then acts
on the pods of its nodes (`lifecycle`): start the Pending ones, finish those whose duration has elapsed,
remove the terminating ones whose grace period has passed. A pod costs two writes over its life (one status
write to start, one to finish) plus the removal of a deleted one; a GPU reservation pod one more, the GPU
index its "device plugin" gives it (the lowest index no other reservation pod on the node holds).

A write the API server refuses is made again 1, 2, 4 … s later (`store/retries.py`), not at every step: a step
comes at every pod change. State is kept per pod uid and only moves forward, so a stale watch event never starts
a pod twice. After a restart, pods found Running keep their `startTime` and finish on time. A pod whose fields
cannot be read is logged once and skipped; a bad `kai.scheduler/fake-duration` is logged once and the pod runs
until deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.fakenodes import lifecycle
from kai_scheduler.fakenodes.heartbeat import Heartbeat
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.interface import JSON, ClusterStore, NotFound, StoreError
from kai_scheduler.store.retries import Retries

log = logging.getLogger(__name__)


@dataclass(slots=True)
class KubeletStats:
    """Totals since the kubelet was made."""

    started: int = 0
    finished: int = 0
    removed: int = 0
    writes: int = 0  # pod writes (heartbeats count in `Heartbeat.writes`)
    running: int = 0  # at the end of the last step


@dataclass(slots=True)
class _Tracked:
    view: lifecycle.PodView
    started_at: float | None = None
    duration: float | None = None
    finished: bool = False
    removing: bool = False
    notes: set[str] = field(default_factory=set)  # problems already logged for this pod


class FakeKubelet:
    def __init__(
        self, store: ClusterStore, clock: Clock, nodes: Iterable[str], heartbeat: Heartbeat | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.nodes = frozenset(nodes)
        self.heartbeat = heartbeat
        self.stats = KubeletStats()
        self._feed = Changes.of(store, "pods")
        self._pods: dict[str, _Tracked] = {}
        self._bad: dict[str, str] = {}  # unreadable pods: key → the message logged
        self._retries = Retries(clock.now)  # pods whose last write was refused: acted on again after a backoff

    def step(self, timeout: float = 0.0) -> KubeletStats:
        """One round: changes (waiting up to `timeout` for the first), heartbeats, then pod actions."""
        for key, obj in self._feed.poll(timeout):
            self._observe(key, obj)
        if self.heartbeat is not None:
            self.heartbeat.beat()
        now = self.clock.now()
        due = self._retries.due()
        for key in sorted(self._pods):
            if key not in self._retries or key in due:
                self._act(key, now)
        self.stats.running = sum(
            1 for t in self._pods.values() if t.started_at is not None and not t.finished and not t.removing
        )
        return self.stats

    # --- what the store says ---

    def _observe(self, key: str, obj: JSON | None) -> None:
        spec = obj.get("spec") if obj is not None else None
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        if obj is None or not isinstance(node, str) or node not in self.nodes:
            self._pods.pop(key, None)
            self._bad.pop(key, None)
            self._retries.forget(key)
            return
        try:
            view = lifecycle.read_pod(obj)
        except ObjectError as err:
            self._pods.pop(key, None)
            if self._bad.get(key) != str(err):
                self._bad[key] = str(err)
                log.warning("pod skipped: the fake kubelet cannot read it", extra={"pod": key, "error": str(err)})
            return
        self._bad.pop(key, None)
        tracked = self._pods.get(key)
        if tracked is None or tracked.view.uid != view.uid:
            tracked = self._pods[key] = _Tracked(view)
        tracked.view = view
        if view.phase != "Pending" and tracked.started_at is None:
            tracked.started_at = view.start_time if view.start_time is not None else self.clock.now()
        if view.phase in lifecycle.TERMINAL_PHASES:
            tracked.finished = True
        tracked.duration = self._duration(tracked)

    def _duration(self, tracked: _Tracked) -> float | None:
        try:
            return lifecycle.duration_of(tracked.view)
        except ObjectError as err:
            if str(err) not in tracked.notes:
                tracked.notes.add(str(err))
                log.warning("pod runs until deleted: bad duration", extra={"pod": tracked.view.key, "error": str(err)})
            return None

    # --- what the kubelet does ---

    def _act(self, key: str, now: float) -> None:
        tracked = self._pods[key]
        view = tracked.view
        try:
            if view.deletion is not None:
                if not tracked.removing and lifecycle.removal_due(view.deletion, now):
                    self._remove(tracked, now)
            elif tracked.finished:
                return
            elif tracked.started_at is None:
                self._start(tracked, now)
            elif tracked.duration is not None and now >= tracked.started_at + tracked.duration:
                self._finish(tracked, now)
        except NotFound:
            self._pods.pop(key, None)
            self._retries.forget(key)
        except StoreError as err:
            delay = self._retries.failed(key)
            log.warning("pod write failed", extra={"pod": key, "error": str(err), "retry_in": delay})
        else:
            self._retries.succeeded(key)

    def _start(self, tracked: _Tracked, now: float) -> None:
        view = tracked.view
        if view.reservation and view.gpu_index is None:
            index = self._free_gpu_index(view)
            patch = {"metadata": {"annotations": {lifecycle.ANNOTATION_GPU_INDEX: index}}}
            self._written(self.store.patch("pods", view.name, view.namespace, patch))
        self._written(
            self.store.patch("pods", view.name, view.namespace, lifecycle.running_status(view, now), "status")
        )
        tracked.started_at = now
        self.stats.started += 1
        log.debug("pod started", extra={"pod": view.key, "node": view.node})

    def _finish(self, tracked: _Tracked, now: float) -> None:
        view = tracked.view
        assert tracked.started_at is not None
        self._written(
            self.store.patch(
                "pods", view.name, view.namespace, lifecycle.succeeded_status(view, tracked.started_at, now), "status"
            )
        )
        tracked.finished = True
        self.stats.finished += 1
        log.debug("pod finished", extra={"pod": view.key, "node": view.node})

    def _remove(self, tracked: _Tracked, now: float) -> None:
        view = tracked.view
        if view.phase not in lifecycle.TERMINAL_PHASES:  # a finalizer (a Job's) waits for a terminal phase
            self._written(
                self.store.patch(
                    "pods", view.name, view.namespace, lifecycle.killed_status(view, tracked.started_at, now), "status"
                )
            )
        self.store.delete("pods", view.name, view.namespace, grace_period_seconds=0)
        self.stats.writes += 1
        tracked.removing = True
        self.stats.removed += 1
        log.debug("pod removed", extra={"pod": view.key, "node": view.node})

    def _written(self, obj: JSON) -> None:
        self.stats.writes += 1
        self._observe(f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}", obj)

    def _free_gpu_index(self, view: lifecycle.PodView) -> str:
        taken = {
            t.view.gpu_index
            for t in self._pods.values()
            if t.view.reservation
            and t.view.node == view.node
            and t.view.deletion is None
            and not t.finished
            and t.view.uid != view.uid
        }
        return next(str(i) for i in range(len(taken) + 1) if str(i) not in taken)
