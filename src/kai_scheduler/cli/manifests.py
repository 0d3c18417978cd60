"""`kai manifests`: the install set as YAML for `kubectl apply -f -`, or the Helm chart (`--helm-chart DIR`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kai_scheduler import install
from kai_scheduler.api import flags
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import arguments
from kai_scheduler.install.unused import unused


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "manifests",
        help="print the install manifests (or write the Helm chart)",
        description="Print everything needed to run KAI in a cluster as one YAML stream: "
        "`kai manifests | kubectl apply --server-side -f -`. By default that is KAI's install: the CRDs, RBAC, "
        "webhooks, priority classes and `kai operator`, which creates the Config kai-config and the SchedulingShard "
        "default and renders the scheduler, binder, podgrouper, controllers and admission from them. --static prints "
        "those components instead, with no operator. Values are the chart's values.yaml; KAI's chart values are "
        "accepted too (docs/install.md), a warning naming each one that has no effect here.",
    )
    arguments.add(p, flags.NAMESPACE, None, shown="the value namespace.name")
    arguments.add(p, flags.IMAGE, None, shown="the values image.repository and image.tag")
    p.add_argument(
        "-f",
        "--values",
        metavar="FILE",
        action="append",
        default=[],
        help="values file over the defaults (repeatable; later files win)",
    )
    p.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        dest="sets",
        help="set one value, e.g. scheduler.replicas=2 (repeatable)",
    )
    p.add_argument("--skip-crds", action="store_true", help="leave the CustomResourceDefinitions out")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--static",
        action="store_true",
        help="print the static install: the component Deployments, Services and scheduler ConfigMap rendered here "
        "from the values, and no operator (value operator.enabled=false)",
    )
    mode.add_argument(
        "--operator",
        action="store_true",
        help="the operator install, which is the default (value operator.enabled=true; kept so that scripts written "
        "when the static install was the default still work, and to win over a values file that turns it off)",
    )
    p.add_argument(
        "--helm-chart",
        metavar="DIR",
        help="write the Helm chart (generated from the same source) into DIR instead of printing",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.helm_chart:
        if args.values or args.sets or args.namespace or args.image or args.skip_crds or args.operator or args.static:
            raise UserError("--helm-chart writes the chart with its default values; pass values to helm install")
        written = install.write_chart(args.helm_chart)
        print(f"wrote {len(written)} files under {args.helm_chart}", file=sys.stderr)
        return 0
    sets = list(args.sets)
    if args.static or args.operator:  # the flag wins over --set and -f, as it is the more specific ask
        sets.append(f"operator.enabled={'false' if args.static else 'true'}")
    ignored: list[str] = []
    values = install.resolve(args.values, sets, namespace=args.namespace, image=args.image, ignored=ignored)
    sys.stdout.write(install.stream(install.manifests(values, skip_crds=args.skip_crds)))
    for note in ignored:
        print(f"kai manifests: warning: {note}", file=sys.stderr)
    for key in unused(values, skip_crds=args.skip_crds):
        print(f"kai manifests: warning: {key} changes nothing in this install{_why(values, key)}", file=sys.stderr)
    return 0


def _why(values: dict[str, Any], key: str) -> str:
    if values["operator"]["enabled"]:
        return (
            ": the operator renders the components from the Config kai-config and the SchedulingShard default this "
            "install renders, which have no field for it (docs/install.md), or use --static"
        )
    section = key.split(".")[0]
    switch = values.get(section, {}).get("enabled") if isinstance(values.get(section), dict) else None
    return f" ({section}.enabled is false)" if switch is False else ""
