"""`kai dashboard [FILE]`: a live, read-only web view of the cluster as the scheduler sees it.

FILE is a scenario (the components run over it, embedded) or a simulation's `dashboard.json` (written by
`kai simulate --dashboard`: the views along virtual time, with a slider); without FILE the dashboard watches
the cluster of --kubeconfig. Starlette and uvicorn are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from kai_scheduler.api import flags
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments, connection, file_flags

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 8090
QPS, BURST = 20.0, 50


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "dashboard",
        help="serve a live, read-only web view of queues, jobs, GPUs and decisions",
        description="Serve a web page of the cluster as the scheduler sees it: the queue tree with deserved, "
        "fair share, allocated, requested and limit per resource; each queue's jobs in scheduling order with "
        "the reason a pending job waits; a GPU map by node pool and topology domain; recent binds and "
        "evictions. It updates itself within a second of a change and writes nothing to the cluster. "
        "Without FILE it watches the cluster of --kubeconfig; with a scenario FILE it runs the components "
        "over it (embedded); with a simulation's dashboard.json (kai simulate --dashboard) it shows the "
        "recorded instants along a slider. The figures are computed with --config; with --kubeconfig, "
        "--partition-label-value shows one node pool as its scheduler shard sees it (docs/shards.md). "
        "See docs/dashboard.md.",
    )
    p.add_argument("file", nargs="?", help="scenario or manifest (YAML), or a simulation's dashboard.json")
    connection.add_flags(p, qps=QPS, burst=BURST)
    p.add_argument(
        "--address", default=DEFAULT_ADDRESS, help=f"address to listen on (default {DEFAULT_ADDRESS}: this machine)"
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    arguments.add(p, file_flags.CONFIG, None, shown="a scenario's `config:`, else KAI's defaults")
    arguments.add(p, flags.PARTITION_LABEL_VALUE, None, shown="the configuration's, else the objects without the label")
    p.add_argument(
        "--period",
        type=float,
        default=None,
        help="seconds between two looks at the cluster (default 0.25 live); with a scenario, between two "
        "scheduling cycles (default 1)",
    )
    arguments.add(
        p,
        file_flags.CYCLES,
        None,
        shown="the file's `cycles`, else without end (with a scenario; the result then stays shown)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.file and (args.kubeconfig or args.context):
        raise UserError("dashboard: give a FILE or --kubeconfig/--context, not both")
    if args.file and args.partition_label_value is not None:
        raise UserError(
            "--partition-label-value: only with a cluster (--kubeconfig); a scenario's shards show every pool"
        )
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port: want 0 to 65535, got {args.port}")
    if args.period is not None and args.period <= 0:
        raise UserError(f"--period: must be positive, got {args.period}")
    if args.cycles is not None and args.cycles < 1:
        raise UserError(f"--cycles: must be at least 1, got {args.cycles}")
    try:
        from kai_scheduler.dashboard import serve
    except ImportError as err:
        raise UserError(f"the dashboard needs its extra: pip install 'kai-scheduler[dashboard]' ({err.name})") from None

    if args.file and args.file.endswith(".json"):
        target = serve.recorded(args.file)
    elif args.file:
        target = serve.embedded(args.file, config=args.config, period=args.period or 1.0, cycles=args.cycles)
    else:
        conn = connection.parse(args)
        target = serve.live(
            conn.kubeconfig,
            conn.context,
            conn.qps,
            conn.burst,
            config=args.config,
            period=args.period,
            partition=args.partition_label_value,
        )
    with target:
        server = serve.listen(target, args.address, args.port)
        print(f"dashboard: http://{_host(args.address)}:{server.port}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
        serve.wait(server)
    return 0


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address
