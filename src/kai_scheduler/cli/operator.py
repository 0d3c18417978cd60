"""`kai operator`: reconcile the Config `kai-config` and the SchedulingShards into the components (docs/operator.md)."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from kai_scheduler.api import flags
from kai_scheduler.cli import arguments, process_flags
from kai_scheduler.runtime.options import OperatorOptions

DESCRIPTION = (
    "Run the operator: render the Config kai-config and every SchedulingShard (kai.scheduler/v1) into the "
    "components' Deployments and Services and each shard's scheduler ConfigMap in --namespace, replacing only what "
    "changed, deleting what a deleted shard had, and writing Reconciled/Degraded conditions on each CR. Against the "
    "API server of the kubeconfig (or the in-cluster service account), with /healthz, /readyz and /metrics on "
    "--listen-address. Durations take Go syntax (500ms, 2s, 1m); booleans --flag or --flag=false."
)


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "operator", help="run the operator: Config and SchedulingShards into the components", description=DESCRIPTION
    )
    process_flags.add(p, p)
    defaults = OperatorOptions()
    arguments.add(p, flags.NAMESPACE, None, shown=process_flags.NAMESPACE_DEFAULT)
    arguments.add(p, flags.IMAGE, None, shown="the chart's kai-scheduler:<version>")
    arguments.add(p, flags.RECONCILE_PERIOD, defaults.reconcile_period)
    arguments.add(p, flags.CREATE_DEFAULTS, defaults.create_defaults)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from kai_scheduler.api.clock import SystemClock
    from kai_scheduler.install.values import split_image
    from kai_scheduler.operator.component import operator
    from kai_scheduler.runtime.options import in_cluster_namespace
    from kai_scheduler.runtime.process import Process, connect, stop_on_signals

    process_options = process_flags.options(args)
    if args.image:
        split_image(args.image)  # a one-line error for a bad one, before anything starts
    options = OperatorOptions(
        namespace=args.namespace or in_cluster_namespace(),
        image=args.image,
        reconcile_period=args.reconcile_period,
        create_defaults=args.create_defaults,
    )
    registry = CollectorRegistry()
    clock = SystemClock()
    store = connect(process_options)
    try:
        stop = threading.Event()
        process = Process([operator(store, options, clock, registry)], store, process_options, registry, clock, stop)
        with stop_on_signals(stop):
            return process.run()
    finally:
        store.close()
