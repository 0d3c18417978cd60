"""What `kai dashboard` runs: a source feeding a `Feed`, and the web app serving it on one address.

`live`, `embedded` and `recorded` each return a `Target` (a context manager: the source's worker runs while
inside); `listen` serves its app; `wait` blocks until SIGINT/SIGTERM. `attach` is the live view inside a
component process (the scheduler's `--dashboard-address`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import orjson

from kai_scheduler.api.errors import UserError
from kai_scheduler.dashboard import app
from kai_scheduler.dashboard.feed import Feed
from kai_scheduler.dashboard.sources import EmbeddedSource, LiveSource
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.runtime.process import open_store, stop_on_signals
from kai_scheduler.store.interface import NotFound, StoreError

LIVE_PERIOD = 0.25
STOP_WAIT = 10.0  # seconds a stopping target waits for its worker's step to end


class Target:
    """A feed, the worker that keeps it current, and what to release after (a store's connection)."""

    def __init__(
        self,
        feed: Feed,
        name: str,
        worker: Callable[[threading.Event], None] | None = None,
        *,
        first: Callable[[], object] | None = None,
        timeline: bytes | None = None,
        close: Callable[[], None] | None = None,
        source: LiveSource | EmbeddedSource | None = None,
    ) -> None:
        self.feed = feed
        self.source = source
        self.name = name
        self.timeline = timeline
        self._worker = worker
        self._first = first
        self._close = close
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Target:
        try:
            if self._first is not None:
                self._first()
            if self._worker is not None:
                self._thread = threading.Thread(
                    target=self._worker, args=(self._stop,), name=f"kai-dashboard-{self.name}", daemon=True
                )
                self._thread.start()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._release()  # closing the connection first ends a watch the worker may be waiting in
        if self._thread is not None:
            self._thread.join(timeout=STOP_WAIT)

    def _release(self) -> None:
        if self._close is not None:
            self._close()
            self._close = None


def live(
    kubeconfig: str | None,
    context: str | None,
    qps: float,
    burst: int,
    *,
    config: str | None = None,
    period: float | None = None,
    partition: str | None = None,
) -> Target:
    """Watch the cluster of `kubeconfig`; the first picture is taken before serving, so a cluster that cannot
    be read (no server, no rights, no CRDs) is one line at start. `partition`: the node pool to show, over the
    configuration's `partition-label-value`."""
    scheduler_config = _config(config)
    if partition is not None:
        flags = dataclasses.replace(scheduler_config.flags, partition_label_value=partition)
        scheduler_config = dataclasses.replace(scheduler_config, flags=flags)
    store = open_store(kubeconfig, context, qps, burst, user_agent="kai-dashboard")
    feed = Feed()
    source = LiveSource(store, scheduler_config, feed, period=period or LIVE_PERIOD)

    def first() -> None:
        try:
            source.refresh(force=True)
        except NotFound as err:
            raise UserError(f"dashboard: cannot read the cluster: {err} (are KAI's CRDs installed?)") from None
        except StoreError as err:
            raise UserError(f"dashboard: cannot read the cluster: {err}") from None

    return Target(feed, "live", source.run, first=first, close=store.close, source=source)


def attach(kubeconfig: str | None, context: str | None, qps: float, burst: int, config: SchedulerConfig) -> Target:
    """A live view for a component process (`--dashboard-address`), with the process's scheduler
    configuration. It has its own connection and watches, so it never competes with the components' streams;
    a cluster it cannot read yet is shown on the page, and never stops the process."""
    store = open_store(kubeconfig, context, qps, burst, user_agent="kai-dashboard")
    feed = Feed()
    source = LiveSource(store, config, feed, period=LIVE_PERIOD, name="scheduler")
    return Target(feed, "scheduler", source.run, close=store.close, source=source)


def embedded(path: str, *, config: str | None = None, period: float = 1.0, cycles: int | None = None) -> Target:
    """Run the components over the scenario at `path`, one cycle a `period` (the file's `cycles`, or
    `cycles`, or without end)."""
    from kai_scheduler import scenario as scenarios
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim.embedded import EmbeddedCluster
    from kai_scheduler.sim.shards import shard_configs

    loaded = scenarios.load(path)
    source_config = config_file.of_scenario(loaded, config)
    shards = shard_configs(loaded.shards, source_config)  # a sharded scenario: every pool, each its scheduler
    cluster = EmbeddedCluster(loaded.objects, config_file.load(source_config), now=loaded.now, shards=shards)
    feed = Feed()
    source = EmbeddedSource(cluster, feed, period=period, cycles=cycles or loaded.cycles, name=Path(path).name)
    return Target(feed, "embedded", source.run, first=source.publish, source=source)


def recorded(path: str) -> Target:
    """A simulation's recorded pictures (`kai simulate --dashboard`): the last one, and all for the slider."""
    try:
        raw = Path(path).read_bytes()
        frames = orjson.loads(raw).get("frames")
    except orjson.JSONDecodeError as err:
        raise UserError(f"{path}: not a dashboard recording: {err}") from None
    if not isinstance(frames, list) or not frames or not isinstance(frames[-1], dict):
        raise UserError(f"{path}: not a dashboard recording: no `frames` (write one with kai simulate --dashboard)")
    feed = Feed()
    feed.publish(frames[-1])
    return Target(feed, "recorded", timeline=raw)


def listen(target: Target, address: str, port: int, *, flag: str = "--address/--port") -> app.Server:
    """Serve the target's app on `address`:`port` ("" = every interface); a UserError naming `flag` if the
    address cannot be bound."""
    server = app.Server(app.create(target.feed, timeline=target.timeline), address, port)
    try:
        server.start()
    except OSError as err:
        raise UserError(f"{flag}: cannot listen on {address}:{port}: {err.strerror or err}") from None
    return server


def wait(server: app.Server) -> None:
    """Serve until SIGINT or SIGTERM, then stop the server."""
    stop = threading.Event()
    try:
        with stop_on_signals(stop):
            while not stop.wait(0.5):
                pass
    finally:
        server.stop()


def _config(path: str | None) -> SchedulerConfig:
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.scheduler.scheduler import load_config

    return config_file.load(config_file.read(path)) if path else load_config(None)
