"""One process running one or more components: a runner thread each, optionally a leader elector each, and
one HealthServer for health, readiness and metrics.

`/readyz` has one check per component (its runner's readiness); `/healthz` one per runner thread (alive).

Shutdown (the stop Event, set by SIGTERM or SIGINT) takes a bounded time whatever the API server does
(docs/components.md, "Stopping"):

1. the runners and electors get `STEP_GRACE` seconds to finish their current step;
2. if some are still waiting on the API server, the store's requests in flight are cut (`KubeStore.cancel`) and
   they get `CANCEL_GRACE` more; what they were writing is abandoned, which is safe because all state lives in
   the API server: the next leader (or this process restarted) reads it and redoes what is missing;
3. each Lease this process holds is released (client-go's ReleaseOnCancel) so a standby takes over at once, all
   together within `RELEASE_TIMEOUT`; never while a runner of ours might still write (then the lease expires);
4. the endpoints close. What was given up is said in one warning line.

`stop_on_signals` also starts a watchdog: the process ends `SHUTDOWN_BOUND` seconds after the first signal
whatever is still running, and a second signal ends it at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

from prometheus_client import CollectorRegistry, ProcessCollector, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.runtime.components import Component
from kai_scheduler.runtime.http import Endpoint, HealthServer, PluginServer, parse_address
from kai_scheduler.runtime.leader import LeaderElector, default_identity
from kai_scheduler.runtime.loop import Runner
from kai_scheduler.runtime.options import ProcessOptions
from kai_scheduler.store.interface import ClusterStore
from kai_scheduler.store.kube import ConfigurationError, KubeOptions, KubeStore

log = logging.getLogger(__name__)

# The shutdown's phases (seconds; see the module docstring). Their sum with the endpoints' and the store's close
# (about 1.5 s) stays under SHUTDOWN_BOUND, itself a third of Kubernetes' default terminationGracePeriodSeconds.
STEP_GRACE = 3.0
CANCEL_GRACE = 1.0
RELEASE_TIMEOUT = 2.0
SHUTDOWN_BOUND = 10.0
EXIT_FORCED = 1  # the exit code when the watchdog or a second signal ends the process


class LeaderStatus(Collector):
    """`leader_election_master_status{name=LEASE}`: 1 while this process leads the Lease, else 0 (controller-runtime's
    gauge, read at each scrape)."""

    def __init__(self, electors: dict[str, LeaderElector]) -> None:
        self.electors = electors

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "leader_election_master_status",
            "Gauge of if the reporter is master of the lease (1) or a standby (0)",
            labels=["name"],
        )
        for elector in self.electors.values():
            family.add_metric([elector.name], 1.0 if elector.is_leader else 0.0)
        yield family


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
        # KAI's plugin server, on the interface of --listen-address: one per port the components ask for.
        host = parse_address(options.listen_address)[0]
        by_port: dict[int, dict[str, Endpoint]] = {}
        for component in components:
            if component.plugin_port and component.endpoints:
                by_port.setdefault(component.plugin_port, {}).update(component.endpoints)
        self.plugin_servers = [PluginServer(host, port, endpoints) for port, endpoints in by_port.items()]
        identity = default_identity()
        self.electors: dict[str, LeaderElector] = {}
        self.runners: list[Runner] = []
        self.store = store
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
                    on_lapse=self._cut_in_flight,
                )
                self.electors[component.name] = elector
                if component.fence is not None:
                    component.fence.leadership = elector
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
        # What the Go components export beside their own metrics: the process's CPU seconds, memory and open files
        # (client_golang's process collector), and with leader election which replica leads (controller-runtime's
        # leader_election_master_status), so a scrape of every replica says which one is working.
        ProcessCollector(registry=registry)
        # No `…_created` series beside each counter and histogram (the Python client's addition; KAI's have none):
        # they doubled the scrape and their HELP lines read as metrics of their own.
        disable_created_metrics()  # type: ignore[no-untyped-call]  # the client leaves it unannotated
        if self.electors:
            registry.register(LeaderStatus(self.electors))
        # client-go's rest_client_* series of the store's requests (docs/components.md, "Controller metrics").
        if isinstance(store, KubeStore):
            registry.register(store.requests)

    def start(self) -> None:
        try:
            self.server.start()
        except OSError as err:
            raise UserError(f"--listen-address: cannot listen: {err.strerror or err}") from None
        for plugin_server in self.plugin_servers:
            try:
                plugin_server.start()
            except OSError as err:  # as KAI: the scheduler goes on without its debugging endpoints
                log.error(
                    f"--plugin-server-port: cannot listen on port {plugin_server.port}: {err.strerror or err}; "
                    f"serving no {', '.join(sorted(plugin_server.endpoints))}",
                )
        for runner in self.runners:
            thread = threading.Thread(target=runner.run, name=f"kai-{runner.name}", daemon=True)
            self.server.add_readiness(runner.name, _ready(runner))
            self.server.add_liveness(runner.name, _alive(thread, self.stop))
            self._threads.append(thread)
        for name, elector in self.electors.items():
            self._elector_threads.append(
                threading.Thread(target=elector.run, args=(self.stop,), name=f"kai-{name}-lease", daemon=True)
            )
            self._elector_threads.append(
                threading.Thread(target=elector.guard, args=(self.stop,), name=f"kai-{name}-guard", daemon=True)
            )
        for thread in (*self._elector_threads, *self._threads):
            thread.start()

    def _cut_in_flight(self) -> None:
        """A lease lapsed: cut every request in flight (writes a stalled connection holds are abandoned, not
        sent late; the watches reconnect) and take new ones again, which the fenced stores refuse to write."""
        if self.stop.is_set() or not isinstance(self.store, KubeStore):
            return  # a shutdown cuts and resumes by itself
        cut = self.store.cancel()
        self.store.resume()
        log.warning("requests in flight cut: a lease lapsed", extra={"connections_cut": cut})

    def run(self) -> int:
        """Start, wait for the stop Event, shut down; 0."""
        self.start()
        try:
            self.stop.wait()
        finally:
            self.shutdown()
        return 0

    def shutdown(self) -> None:
        """Stop within a bounded time (see the module docstring); what was given up is one warning line."""
        self.stop.set()
        started = time.monotonic()
        threads = [*self._threads, *self._elector_threads]
        busy = _join(threads, STEP_GRACE)
        given_up: dict[str, object] = {}
        if busy and isinstance(self.store, KubeStore):
            given_up["waiting_for"] = _names(busy)
            given_up["connections_cut"] = self.store.cancel()
            busy = _join(busy, CANCEL_GRACE)
        stuck = [t for t in self._threads if t in busy]
        if stuck:
            given_up["still_running"] = _names(stuck)
        elif isinstance(self.store, KubeStore):
            self.store.resume()  # for the Lease releases: the runners have ended and make no more requests
        released, unreleased = self._release(can_release=not stuck)
        if unreleased:
            given_up["leases_kept"] = unreleased
        self.server.stop()
        for plugin_server in self.plugin_servers:
            plugin_server.stop()
        if given_up:
            said = []
            if "waiting_for" in given_up or "still_running" in given_up:
                said.append(
                    f"gave up waiting for the API server after {STEP_GRACE:g}s; in-flight requests abandoned "
                    "(the state is the API server's: the next leader redoes what is missing)"
                )
            if unreleased:
                said.append(f"Leases not released, they expire after {self._lease_duration():g}s")
            log.warning("shutdown: " + "; ".join(said), extra=given_up)
        log.info("stopped", extra={"seconds": round(time.monotonic() - started, 2), "leases_released": released})

    def _release(self, *, can_release: bool) -> tuple[list[str], list[str]]:
        """Release every Lease this process leads, at once and within RELEASE_TIMEOUT; (released, not released).
        Not while a runner may still write (`can_release` False): a successor must not run beside it."""
        leading = {name: e for name, e in self.electors.items() if e.is_leader}
        if not leading:
            return [], []
        if not can_release:
            return [], sorted(e.name for e in leading.values())
        done: dict[str, bool] = {}

        def release(name: str, elector: LeaderElector) -> None:
            done[name] = elector.release()

        threads = [
            threading.Thread(target=release, args=(name, e), name=f"kai-{name}-release", daemon=True)
            for name, e in leading.items()
        ]
        for thread in threads:
            thread.start()
        _join(threads, RELEASE_TIMEOUT)
        released = sorted(leading[name].name for name, ok in done.items() if ok)
        return released, sorted(e.name for e in leading.values() if e.name not in released)

    def _lease_duration(self) -> float:
        return next(iter(self.electors.values())).config.lease_duration if self.electors else 0.0


def _join(threads: Sequence[threading.Thread], timeout: float) -> list[threading.Thread]:
    """Join the threads within `timeout` seconds in all; those still alive."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


def _names(threads: Sequence[threading.Thread]) -> list[str]:
    return [t.name.removeprefix("kai-") for t in threads]


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
def stop_on_signals(stop: threading.Event, bound: float = SHUTDOWN_BOUND) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT set `stop` (the loops end cleanly) instead of killing or raising; the
    previous handlers come back after. The first signal also starts a watchdog that ends the process `bound`
    seconds later if it is still running; a second signal ends it at once (exit code EXIT_FORCED either way).
    Off the main thread (where Python takes no handlers) it does nothing.

    The signal's number goes to a pipe as the signal arrives (Python's wakeup fd, written by its C-level handler);
    a thread of its own reads it and does the rest. A Python handler would run only in the main thread between two
    bytecodes of whatever it was doing: not while the main thread waits inside libcurl for an answer (a `kai
    fake-nodes` step), and logging, setting an Event or starting a Timer take locks: were the interrupted code
    holding one of them (an Event's condition lock between `with` and `wait`, a handler's lock), the handler would
    wait for itself forever and the signal would be lost. The Python handler does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # as the wakeup fd must be

    def handle(signum: int, frame: FrameType | None) -> None:
        del signum, frame  # the wakeup fd said it

    def relay() -> None:
        while True:
            try:
                received = os.read(read_end, 1)
            except OSError:  # closed: the context ended
                return
            if not received:
                return
            if received[0] not in (signal.SIGINT, signal.SIGTERM):  # another handler's signal: not ours
                continue
            name = signal.Signals(received[0]).name
            if stop.is_set():
                _exit_now(f"shutdown: second {name}: exiting at once")
            log.info("signal received, stopping", extra={"signal": name, "bound_seconds": bound})
            stop.set()
            message = f"shutdown: not done {bound:g}s after {name}: exiting"
            watchdog = threading.Timer(bound, _exit_now, args=(message,))
            watchdog.daemon = True
            watchdog.start()

    relaying = threading.Thread(target=relay, name="kai-signals", daemon=True)
    relaying.start()
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        for sig, old in previous.items():
            signal.signal(sig, old)
        os.close(write_end)  # the relay reads the end of the pipe and returns
        relaying.join(1.0)
        os.close(read_end)


@contextlib.contextmanager
def cancel_when_stuck(stop: threading.Event, store: ClusterStore, grace: float = STEP_GRACE) -> Iterator[None]:
    """For a command that is not a `Process` (`kai fake-nodes`): while inside, once `stop` is set the work gets
    `grace` seconds to end, then the store's requests in flight are cut (`KubeStore.cancel`), with one warning
    line, so a loop waiting on an API server that does not answer ends."""
    if not isinstance(store, KubeStore):
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not stop.wait(0.25):
            if done.is_set():
                return
        if done.wait(grace):
            return
        cut = store.cancel()
        log.warning(
            f"shutdown: gave up waiting for the API server after {grace:g}s; in-flight requests abandoned",
            extra={"connections_cut": cut},
        )

    thread = threading.Thread(target=watch, name="kai-shutdown-guard", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        # Cutting the requests is what lets the work end: without the join the process could exit (the guard is a
        # daemon) between the cut and the line saying what was abandoned.
        thread.join(CANCEL_GRACE)


def _exit_now(message: str) -> None:
    """End the process at once (no cleanup: threads may be stuck), after saying why on stderr."""
    with contextlib.suppress(Exception):
        log.error(message)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    os._exit(EXIT_FORCED)
