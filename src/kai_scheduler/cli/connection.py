"""The API-server connection flags of the commands that talk to a cluster: one definition, one help text; and the
readers of a number or boolean flag's text that the components' commands share."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from kai_scheduler.api.booleans import parse_bool
from kai_scheduler.api.errors import UserError

# The order of store.kube_http.config.load_client: in a pod and with neither flag given, the service account.
KUBECONFIG_HELP = (
    "kubeconfig file (default: in a pod with neither --kubeconfig nor --context, the in-cluster "
    "service account; otherwise $KUBECONFIG, then ~/.kube/config)"
)


@dataclass(frozen=True, slots=True)
class Connection:
    kubeconfig: str | None
    context: str | None
    qps: float
    burst: int


def add_flags(p: argparse.ArgumentParser, *, qps: float, burst: int) -> None:
    p.add_argument("--kubeconfig", metavar="PATH", help=KUBECONFIG_HELP)
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    p.add_argument(
        "--qps", default=None, metavar="QPS", help=f"API requests per second after the burst (default {qps:g})"
    )
    p.add_argument("--burst", default=None, metavar="N", help=f"API requests allowed at once (default {burst})")


def parse(args: argparse.Namespace, *, qps: float, burst: int) -> Connection:
    """The flags' values, or the command's defaults; a UserError naming the flag for a malformed number."""
    return Connection(
        kubeconfig=args.kubeconfig,
        context=args.context,
        qps=qps if args.qps is None else float(number("--qps", args.qps, float)),
        burst=burst if args.burst is None else int(number("--burst", args.burst, int)),
    )


def number(flag: str, text: str, kind: type[int] | type[float]) -> float:
    try:
        return kind(text)
    except ValueError:
        want = "an integer" if kind is int else "a number"
        raise UserError(f"{flag}: invalid value {text!r}: want {want}") from None


def boolean(flag: str, text: str) -> bool:
    """A boolean flag's text (true/false, as Go's strconv.ParseBool takes them); a UserError naming the flag."""
    value = parse_bool(text)
    if value is not None:
        return value
    raise UserError(f"{flag}: invalid boolean {text!r}: want true or false")
