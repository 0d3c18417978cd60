"""The flags every long-running command takes (`kai scheduler` … `kai run`, `kai operator`, `kai admission`): the
API-server connection, the address of the health and metrics endpoints, and leader election."""

from __future__ import annotations

import argparse

from kai_scheduler.api import flags
from kai_scheduler.cli import arguments, connection
from kai_scheduler.runtime.leader import LeaderConfig
from kai_scheduler.runtime.options import ProcessOptions, in_cluster_namespace

NAMESPACE_DEFAULT = "the pod's namespace, else kai-scheduler"


def add(p: argparse.ArgumentParser, leader_election: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The flags, leader election's in `leader_election` (`p`, or a group that says how the command takes them)."""
    defaults, leader = ProcessOptions(), LeaderConfig()
    connection.add_flags(p, qps=defaults.qps, burst=defaults.burst)
    arguments.add(p, flags.LISTEN_ADDRESS, defaults.listen_address, shown=f'"{defaults.listen_address}"')
    arguments.add(leader_election, flags.LEADER_ELECT, defaults.leader_elect)
    arguments.add(leader_election, flags.LEADER_ELECT_NAMESPACE, None, shown=NAMESPACE_DEFAULT)
    arguments.add(leader_election, flags.LEADER_ELECT_LEASE_DURATION, leader.lease_duration)
    arguments.add(leader_election, flags.LEADER_ELECT_RENEW_DEADLINE, leader.renew_deadline)
    arguments.add(leader_election, flags.LEADER_ELECT_RETRY_PERIOD, leader.retry_period)


def options(args: argparse.Namespace) -> ProcessOptions:
    conn = connection.parse(args)
    parsed = ProcessOptions(
        kubeconfig=conn.kubeconfig,
        context=conn.context,
        qps=conn.qps,
        burst=conn.burst,
        listen_address=args.listen_address or ProcessOptions().listen_address,
        leader_elect=args.leader_elect,
        leader_elect_namespace=args.leader_elect_namespace or in_cluster_namespace(),
        leader=LeaderConfig(
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        ),
    )
    if parsed.leader_elect:
        parsed.leader.validate()
    return parsed
