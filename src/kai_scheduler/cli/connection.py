"""The API-server connection flags of the commands that talk to a cluster, with each command's rate limit."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from kai_scheduler.api import flags
from kai_scheduler.cli import arguments

# The order of store.kube_http.config.load_client: in a pod and with neither flag given, the service account.
KUBECONFIG_DEFAULT = (
    "in a pod with neither --kubeconfig nor --context, the in-cluster service account; otherwise $KUBECONFIG, "
    "then ~/.kube/config"
)


@dataclass(frozen=True, slots=True)
class Connection:
    kubeconfig: str | None
    context: str | None
    qps: float
    burst: int


def add_flags(p: argparse.ArgumentParser, *, qps: float, burst: int) -> None:
    arguments.add(p, flags.KUBECONFIG, None, shown=KUBECONFIG_DEFAULT)
    arguments.add(p, flags.CONTEXT, None, shown="the current one")
    arguments.add(p, flags.QPS, qps)
    arguments.add(p, flags.BURST, burst)


def parse(args: argparse.Namespace) -> Connection:
    return Connection(kubeconfig=args.kubeconfig, context=args.context, qps=args.qps, burst=args.burst)
