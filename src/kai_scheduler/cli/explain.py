"""`kai explain JOB [FILE]`: why a job is where it is, on a live cluster (read only) or on a scenario."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments, connection, file_flags
from kai_scheduler.runtime.options import ProcessOptions

if TYPE_CHECKING:  # the command imports the explain package only when it runs: `kai --help` stays quick
    from kai_scheduler.explain import Explanation, JobRef, Limits


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "explain",
        help="say why a job is pending, placeable or running, and what could make room or take its pods",
        description="Explain JOB (a PodGroup, a pod of it, or its workload such as a Job: NAME or NAMESPACE/NAME) as "
        "the scheduler sees it: "
        "its queue's deserved and fair share, the jobs ahead of it, for each node pool the closest nodes and "
        "what each lacks, and dry runs of allocate, reclaim, preempt and consolidation; for a running job, "
        "what could take its pods and whether min-runtime protects it. With FILE (a scenario or manifests) "
        "on the embedded cluster; without, on the cluster of the kubeconfig, which is only read. "
        "Nothing is ever written. See docs/explain.md.",
    )
    p.add_argument("job", metavar="JOB", help="PodGroup, pod or workload (Job, PyTorchJob…): NAME or NAMESPACE/NAME")
    p.add_argument("file", nargs="?", metavar="FILE", help="scenario file or Kubernetes manifests (YAML)")
    p.add_argument("-n", "--namespace", metavar="NS", help="the job's namespace (default: search them all)")
    rate = ProcessOptions()  # the components'
    connection.add_flags(p, qps=rate.qps, burst=rate.burst)
    arguments.add(p, file_flags.CONFIG, None, shown="FILE's `config:`, else KAI's defaults")
    arguments.add(p, file_flags.OUTPUT, "text", choices=("text", "json"))
    p.add_argument(
        "--nodes", type=int, default=3, metavar="N", help="closest nodes shown per pod shape and node pool (default 3)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kai_scheduler import explain

    if args.nodes < 1:
        raise UserError(f"--nodes: must be at least 1, got {args.nodes}")
    ref = explain.JobRef.parse(args.job, args.namespace)
    limits = explain.Limits(closest=args.nodes)
    if args.file is not None:
        if args.kubeconfig or args.context:
            raise UserError("give FILE or --kubeconfig/--context, not both")
        result = _from_file(args, ref, limits)
    else:
        result = _from_cluster(args, ref, limits)
    _print(result, args.output)
    return 0


def _from_file(args: argparse.Namespace, ref: JobRef, limits: Limits) -> Explanation:
    from kai_scheduler import explain
    from kai_scheduler import scenario as scenarios
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.sim.embedded import EmbeddedCluster
    from kai_scheduler.sim.shards import shard_configs

    loaded = scenarios.load(args.file)
    if (note := loaded.skipped_note()) is not None:
        print(f"kai: {note}", file=sys.stderr)
    source = config_file.of_scenario(loaded, args.config)
    config = config_file.load(source)
    cluster = EmbeddedCluster(loaded.objects, config, now=loaded.now)
    pools = {c.flags.partition_label_value: c for _, c in shard_configs(loaded.shards, source)}
    return explain.explain(cluster.store, config, cluster.clock, ref, limits, pool_configs=pools)


def _from_cluster(args: argparse.Namespace, ref: JobRef, limits: Limits) -> Explanation:
    from kai_scheduler import explain
    from kai_scheduler.api.clock import SystemClock
    from kai_scheduler.runtime.process import open_store
    from kai_scheduler.scheduler import config_file
    from kai_scheduler.scheduler.scheduler import load_config

    config = config_file.load(config_file.read(args.config)) if args.config else load_config(None)
    conn = connection.parse(args)
    store = open_store(conn.kubeconfig, conn.context, conn.qps, conn.burst, user_agent="kai-explain")
    try:
        return explain.explain(store, config, SystemClock(), ref, limits)
    finally:
        store.close()


def _print(result: Explanation, output: str) -> None:
    import orjson

    from kai_scheduler.explain import text

    if output == "json":
        print(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())
    else:
        print(text.render(result), end="")
