"""One process running one or more components: a runner thread each, optionally a leader elector each, and
one HealthServer for health, readiness and metrics.

`/readyz` has one check per component (its runner's readiness); `/healthz` one per runner thread (alive).
Shutdown (the stop Event): the runners finish their current step, then each held Lease is released so a
successor takes over at once, then the endpoints close.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.runtime.components import Component
from kai_scheduler.runtime.http import HealthServer
from kai_scheduler.runtime.leader import LeaderElector, default_identity
from kai_scheduler.runtime.loop import Runner
from kai_scheduler.runtime.options import ProcessOptions
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.kube import ConfigurationError, KubeOptions, KubeStore

log = logging.getLogger(__name__)


class Process:
    def __init__(
        self,
        components: Sequence[Component],
        store: ClusterStore,
        options: ProcessOptions,
        registry: CollectorRegistry,
        clock: Clock,
        stop: threading.Event | None = None,
    ) -> None:
        self.stop = stop or threading.Event()
        self.server = HealthServer(options.listen_address, registry)
        identity = default_identity()
        self.electors: dict[str, LeaderElector] = {}
        self.runners: list[Runner] = []
        activity = store.activity if isinstance(store, KubeStore) else None
        for component in components:
            elector = None
            if options.leader_elect:
                elector = LeaderElector(
                    store,
                    options.leader_elect_namespace,
                    component.lease,
                    clock,
                    identity=identity,
                    config=options.leader,
                )
                self.electors[component.name] = elector
            self.runners.append(
                Runner(
                    component.name,
                    component.step,
                    component.period,
                    self.stop,
                    leadership=elector,
                    activity=activity,
                    triggers=component.triggers,
                    min_gap=component.min_gap,
                )
            )
        self._threads: list[threading.Thread] = []
        self._elector_threads: list[threading.Thread] = []

    def start(self) -> None:
        try:
            self.server.start()
        except OSError as err:
            raise UserError(f"--listen-address: cannot listen: {err.strerror or err}") from None
        for runner in self.runners:
            thread = threading.Thread(target=runner.run, name=f"kai-{runner.name}", daemon=True)
            self.server.add_readiness(runner.name, _ready(runner))
            self.server.add_liveness(runner.name, _alive(thread, self.stop))
            self._threads.append(thread)
        for name, elector in self.electors.items():
            self._elector_threads.append(
                threading.Thread(target=elector.run, args=(self.stop,), name=f"kai-{name}-lease", daemon=True)
            )
        for thread in (*self._elector_threads, *self._threads):
            thread.start()

    def run(self) -> int:
        """Start, wait for the stop Event, shut down; 0."""
        self.start()
        try:
            self.stop.wait()
        finally:
            self.shutdown()
        return 0

    def shutdown(self) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join()
        for thread in self._elector_threads:
            thread.join()
        for elector in self.electors.values():
            elector.release()
        self.server.stop()
        log.info("stopped")


def _ready(runner: Runner) -> Callable[[], bool]:
    return lambda: runner.ready


def _alive(thread: threading.Thread, stop: threading.Event) -> Callable[[], bool]:
    return lambda: thread.is_alive() or stop.is_set()


def connect(options: ProcessOptions) -> KubeStore:
    """The API store the options name; an unusable kubeconfig is a ValueError (no request is made yet)."""
    return open_store(options.kubeconfig, options.context, options.qps, options.burst)


def open_store(
    kubeconfig: str | None, context: str | None, qps: float, burst: int, user_agent: str = "kai-scheduler"
) -> KubeStore:
    """A KubeStore for a command line's --kubeconfig/--context/--qps/--burst; bad ones are one-line ValueErrors."""
    if qps < 0 or burst < 1:
        raise UserError(f"--qps/--burst: want qps >= 0 and burst >= 1, got {qps:g} and {burst}")
    try:
        return KubeStore.connect(kubeconfig, context, KubeOptions(qps=qps, burst=burst, user_agent=user_agent))
    except ConfigurationError as err:
        raise UserError(f"--kubeconfig: {err}") from None


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT set `stop` (the loops end cleanly) instead of killing or raising; the
    previous handlers come back after. Off the main thread (where Python takes no handlers) it does nothing."""

    def handle(signum: int, frame: FrameType | None) -> None:
        del frame
        log.info("signal received, stopping", extra={"signal": signal.Signals(signum).name})
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
