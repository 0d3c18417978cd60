"""Where the dashboard's document comes from: a live cluster's watch caches, or an embedded cluster it runs.

Each source has one worker thread, the only one that touches its model; it publishes a new document to the
`Feed` after a change (never more often than its period), and page views only read the feed.

- `LiveSource`: the scheduler's object cache (LIST then WATCH) over any `ClusterStore`, and the scheduler's
  snapshot of it; nothing is written. A build happens only when a watched resource moved.
- `EmbeddedSource`: the embedded cluster of a scenario (podgrouper, scheduler, binder, kubelet, controllers);
  it runs a cycle and what happens between cycles each period, `cycles` times (None: without end), then
  keeps serving the last picture and follows writes made to its store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kai_scheduler.api.clock import Clock, SystemClock
from kai_scheduler.dashboard import view
from kai_scheduler.dashboard.feed import Feed
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.scheduler.scheduler import Scheduler
from kai_scheduler.sim.embedded import EmbeddedCluster
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.interface import ClusterStore, StoreError

log = logging.getLogger(__name__)

DECISIONS = 100  # recent decisions kept and shown


class _Decisions:
    """The scheduler's decision events (binds, evictions, pipelined claims), from a watch of events."""

    def __init__(self, store: ClusterStore, scheduler_name: str) -> None:
        self._changes = Changes.of(store, "events")
        self._scheduler = scheduler_name
        self._decisions: dict[str, view.Decision] = {}
        self.problem = ""

    def poll(self) -> bool:
        """Take in new events; whether a decision came or went (or their readability changed).

        Events that cannot be read (no right to list them) leave `problem` set and the rest of the picture
        intact; the next poll tries again."""
        try:
            changes = self._changes.poll()
        except StoreError as err:
            moved, self.problem = not self.problem, f"recent decisions: cannot read events: {err}"
            return moved
        moved, self.problem = bool(self.problem), ""
        for key, obj in changes:
            decision = view.decision(obj, self._scheduler) if obj is not None else None
            if decision is None:
                moved = self._decisions.pop(key, None) is not None or moved
            else:
                self._decisions[key] = decision
                moved = True
        if len(self._decisions) > 4 * DECISIONS:  # keep the newest: the page shows DECISIONS
            newest = sorted(self._decisions.items(), key=lambda kv: kv[1].time)[-DECISIONS:]
            self._decisions = dict(newest)
        return moved

    def notes(self) -> list[str]:
        return [self.problem] if self.problem else []

    def decisions(self) -> list[view.Decision]:
        """The newest DECISIONS, newest first."""
        return sorted(self._decisions.values(), key=lambda d: (-d.time, d.object))[:DECISIONS]


class LiveSource:
    def __init__(
        self,
        store: ClusterStore,
        config: SchedulerConfig,
        feed: Feed,
        *,
        period: float = 0.25,
        clock: Clock | None = None,
        name: str = "live",
    ) -> None:
        self.feed = feed
        self.config = config
        self.period = period
        self.name = name
        # Its own cache and snapshot memo: this scheduler object never runs a cycle, it only looks.
        self._scheduler = Scheduler(store, config, clock or SystemClock())
        self._decisions = _Decisions(store, config.flags.scheduler_name)
        self._seen: tuple[str, ...] | None = None
        self._events_moved = False
        self._lock = threading.Lock()

    def refresh(self, *, force: bool = False) -> bool:
        """Sync the caches; rebuild and publish if anything moved (or `force`). Whether it published."""
        with self._lock:
            snap = self._scheduler.snapshot()
            versions = self._scheduler.cache.versions()
            self._events_moved = self._decisions.poll() or self._events_moved
            if not force and versions == self._seen and not self._events_moved:
                return False
            document = view.build(
                snap,
                self.config,
                decisions=self._decisions.decisions(),
                source=self.name,
                notes=[*self._decisions.notes(), *self._pool_notes()],
            )
            del snap  # the carried model is reused only once nobody holds the snapshot
            self.feed.publish(document)
            self._seen, self._events_moved = versions, False
            return True

    def _pool_notes(self) -> list[str]:
        """A note naming the other node pools whose queues this view leaves out (it shows one pool, as its
        scheduler sees it), so an empty page over a cluster whose nodes are all in pools says why."""
        flags = self.config.flags
        key, shown = flags.nodepool_label_key, flags.partition_label_value
        others = sorted({labels.get(key, "") for labels in self._scheduler.cache.dropped("queues").values()})
        if not others:
            return []
        here = f"node pool {shown!r}" if shown else f"the node pool of objects without {key}"
        names = ", ".join(repr(o) if o else f"(no {key})" for o in others)
        return [
            f"showing {here}; other node pools have queues too: {names} "
            "(kai dashboard --partition-label-value POOL shows one)"
        ]

    def run(self, stop: threading.Event) -> None:
        _loop(stop, self.period, lambda first: self.refresh(force=first), self.feed, self.name)


class EmbeddedSource:
    def __init__(
        self,
        cluster: EmbeddedCluster,
        feed: Feed,
        *,
        period: float = 1.0,
        cycles: int | None = None,
        name: str = "embedded",
    ) -> None:
        self.cluster = cluster
        self.feed = feed
        self.period = period
        self.cycles = cycles
        self.name = name
        self.done = 0  # cycles run
        self._decisions = _Decisions(cluster.store, cluster.config.flags.scheduler_name)
        self._seen: tuple[str, ...] | None = None

    def step(self) -> None:
        """One cycle (after what the cluster does between cycles from the second on), then publish."""
        if self.cycles is None or self.done < self.cycles:
            if self.done:
                self.cluster.between_cycles()
            self.cluster.cycle()
            self.done += 1
        else:  # cycles done: the cluster's controllers still take in what was written to its store
            self.cluster.settle()
        self.publish(force=False)

    def publish(self, *, force: bool = True) -> bool:
        """Publish the cluster as it is now, unless nothing moved since the last time (and not `force`)."""
        moved = self._decisions.poll()
        snap = self.cluster.view()
        versions = self.cluster.scheduler.cache.versions()
        if not force and not moved and versions == self._seen:
            return False
        document = view.build(
            snap,
            self.cluster.config,
            decisions=self._decisions.decisions(),
            source=self.name,
            notes=self._decisions.notes(),
        )
        del snap
        self.feed.publish(document)
        self._seen = versions
        return True

    def run(self, stop: threading.Event) -> None:
        def step(first: bool) -> bool:
            if first:
                self.publish()
            else:
                self.step()
            return True

        _loop(stop, self.period, step, self.feed, self.name)


def _loop(stop: threading.Event, period: float, step: Callable[[bool], Any], feed: Feed, name: str) -> None:
    """Call `step` every `period` seconds until `stop`; a failing step is logged and shown, never fatal."""
    first = True
    while not stop.is_set():
        started = time.monotonic()
        try:
            step(first)
            first = False
        except StoreError as err:
            feed.fail(f"cannot read the cluster: {err}")
            log.warning("dashboard source cannot read the cluster", extra={"source": name, "error": str(err)})
        except Exception as err:  # a bug in one build must not end the dashboard: say it, keep serving
            feed.fail(f"internal error building the view: {type(err).__name__}: {err}")
            log.exception("dashboard build failed", extra={"source": name})
        stop.wait(max(0.0, period - (time.monotonic() - started)))
