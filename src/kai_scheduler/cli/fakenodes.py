"""`kai fake-nodes`: create GPU Node objects on a real API server and play their kubelet (docs/fake-nodes.md)."""

from __future__ import annotations

import argparse
import logging
import threading
import time
from dataclasses import dataclass

from kai_scheduler.api.clock import Clock, SystemClock
from kai_scheduler.api.duration import DurationError, parse_duration
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import connection
from kai_scheduler.fakenodes import fleet
from kai_scheduler.fakenodes.heartbeat import Heartbeat, HeartbeatConfig
from kai_scheduler.fakenodes.kubelet import FakeKubelet
from kai_scheduler.fakenodes.nodes import FleetSpec, build_nodes, parse_label, parse_mig, parse_taint
from kai_scheduler.store.interface import ClusterStore, StoreError

log = logging.getLogger(__name__)

IDLE_WAIT = 0.5  # seconds a step waits for pod events when there are none
REPORT_EVERY = 10.0  # seconds between progress lines at -v
RETRY_AFTER = 2.0  # seconds before trying again when the API server cannot be reached
DELETE_MARGIN = 1.5  # seconds of the shutdown bound kept for closing the store after --delete-on-exit


_QPS, _BURST = 1000.0, 2000  # a fleet of fake kubelets writes far more than one component


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    d = FleetSpec()
    p = sub.add_parser(
        "fake-nodes",
        help="create fake GPU nodes on an API server and play their kubelet",
        description="Create COUNT Node objects with GPU capacity and KAI's labels, and act as their kubelet: "
        "pods bound to them become Running, finish after their kai.scheduler/fake-duration "
        "annotation, and go once deleted. Runs until SIGINT/SIGTERM.",
    )
    connection.add_flags(p, qps=_QPS, burst=_BURST)
    p.add_argument("--count", type=int, default=d.count, help="number of nodes (default %(default)s)")
    p.add_argument("--gpus", type=int, default=d.gpus, help="GPUs per node (default %(default)s)")
    p.add_argument("--gpu-product", default=d.gpu_product, help="nvidia.com/gpu.product (default %(default)s)")
    p.add_argument(
        "--gpu-memory",
        type=int,
        default=d.gpu_memory_mib,
        help="MiB per GPU, label nvidia.com/gpu.memory (default %(default)s)",
    )
    p.add_argument("--cpu", default=d.cpu, help="CPU capacity, a quantity (default %(default)s)")
    p.add_argument("--memory", default=d.memory, help="memory capacity, a quantity (default %(default)s)")
    p.add_argument("--pods", type=int, default=d.pods, help="pod capacity (default %(default)s)")
    p.add_argument("--prefix", default=d.prefix, help="node names are PREFIX-<i> (default %(default)s)")
    p.add_argument("--node-pool", default="", help="value of the kai.scheduler/node-pool label")
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="extra node label (repeatable)")
    p.add_argument(
        "--rack-size", type=int, default=0, metavar="R", help="nodes per rack: label kai.scheduler/rack=rack-<i//R>"
    )
    p.add_argument(
        "--zone-size",
        type=int,
        default=0,
        metavar="Z",
        help="nodes per zone (a multiple of R): label topology.kubernetes.io/zone=zone-<i//Z>",
    )
    p.add_argument("--taint", action="append", default=[], metavar="K=V:EFFECT", help="node taint (repeatable)")
    p.add_argument(
        "--mig",
        action="append",
        default=[],
        metavar="PROFILE=COUNT",
        help="MIG instances per node, mixed strategy: capacity nvidia.com/mig-PROFILE (repeatable)",
    )
    p.add_argument(
        "--heartbeat-period", default="10s", help="node lease renewal period, a Go duration (default %(default)s)"
    )
    p.add_argument("--delete-on-exit", action="store_true", help="delete the nodes on SIGINT/SIGTERM")
    p.add_argument(
        "--exit-after",
        default=None,
        metavar="DURATION",
        help="stop after this long (a Go duration), as on SIGTERM; for scripts",
    )
    p.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class Settings:
    spec: FleetSpec
    heartbeat: HeartbeatConfig
    delete_on_exit: bool
    exit_after: float | None
    verbose: bool
    connection: connection.Connection


def settings(args: argparse.Namespace) -> Settings:
    """The command's settings; ValueError (one line naming the flag) on bad input."""
    labels = dict(parse_label(text) for text in args.label)
    spec = FleetSpec(
        count=args.count,
        gpus=args.gpus,
        gpu_product=args.gpu_product,
        gpu_memory_mib=args.gpu_memory,
        cpu=args.cpu,
        memory=args.memory,
        pods=args.pods,
        prefix=args.prefix,
        node_pool=args.node_pool,
        labels=labels,
        rack_size=args.rack_size,
        zone_size=args.zone_size,
        taints=tuple(parse_taint(text) for text in args.taint),
        mig=tuple(sorted(dict(parse_mig(text) for text in args.mig).items())),
    )
    spec.check()
    period = _duration("--heartbeat-period", args.heartbeat_period)
    if period <= 0:
        raise UserError(f"--heartbeat-period: must be positive, got {args.heartbeat_period!r}")
    exit_after = None if args.exit_after is None else _duration("--exit-after", args.exit_after)
    conn = connection.parse(args)
    if conn.qps < 0 or conn.burst < 1:
        raise UserError(f"--qps/--burst: want qps >= 0 and burst >= 1, got {conn.qps:g} and {conn.burst}")
    return Settings(
        spec,
        HeartbeatConfig(lease_period=period, status_period=max(60.0, period)),
        args.delete_on_exit,
        exit_after,
        args.verbose > 0,
        conn,
    )


def run(args: argparse.Namespace) -> int:
    from kai_scheduler.runtime import process

    config = settings(args)
    conn = config.connection
    store = process.open_store(conn.kubeconfig, conn.context, conn.qps, conn.burst, user_agent="kai-fake-nodes")
    stop = threading.Event()
    # After the signal the loop's step gets the components' grace; deleting the nodes gets what the bound leaves
    # (docs/components.md, "Stopping"): past it the requests are cut and the command says which failed.
    grace = process.SHUTDOWN_BOUND - DELETE_MARGIN if config.delete_on_exit else process.STEP_GRACE
    with store, process.stop_on_signals(stop), process.cancel_when_stuck(stop, store, grace):
        try:
            return serve(store, SystemClock(), config, stop)
        except StoreError as err:  # creating or deleting the nodes failed: one line, not a traceback
            if stop.is_set() and not config.delete_on_exit:  # told to stop while the nodes were being made
                log.warning("stopped before the nodes were ready", extra={"error": str(err)})
                return 0
            raise UserError(f"API server: {err}") from None


def serve(store: ClusterStore, clock: Clock, config: Settings, stop: threading.Event) -> int:
    """Create or adopt the nodes, play their kubelet until `stop` is set, then delete them if asked."""
    result = fleet.ensure(store, build_nodes(config.spec, clock.now()))
    print(
        f"fake-nodes: {len(result.played)} nodes ready ({len(result.created)} created, {len(result.adopted)} adopted)",
        flush=True,
    )
    if result.foreign:
        print(
            f"fake-nodes: {len(result.foreign)} nodes with our names are not fake nodes, left alone: "
            f"{', '.join(result.foreign)}",
            flush=True,
        )
    heartbeat = Heartbeat(store, clock, result.played, config.heartbeat, result.uids)
    kubelet = FakeKubelet(store, clock, result.played, heartbeat)
    deadline = None if config.exit_after is None else time.monotonic() + config.exit_after
    next_report = time.monotonic() + REPORT_EVERY
    while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
        try:
            stats = kubelet.step(IDLE_WAIT)
        except StoreError as err:
            log.warning("API server unavailable, retrying", extra={"error": str(err)})
            stop.wait(RETRY_AFTER)
            continue
        if config.verbose and time.monotonic() >= next_report:
            next_report = time.monotonic() + REPORT_EVERY
            print(
                f"fake-nodes: pods started {stats.started}, finished {stats.finished}, "
                f"removed {stats.removed}, running {stats.running}",
                flush=True,
            )
    stats = kubelet.stats
    print(
        f"fake-nodes: stopping; pods started {stats.started}, finished {stats.finished}, removed {stats.removed}",
        flush=True,
    )
    if config.delete_on_exit:
        deleted = fleet.delete(store, result.played, config.heartbeat.namespace)
        print(f"fake-nodes: {deleted} nodes deleted", flush=True)
    return 0


def _duration(flag: str, text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as err:
        raise UserError(f"{flag}: {err}") from None
