"""`kai migrate --from volcano|yunikorn FILE`: another scheduler's queues as KAI Queues (docs/migration.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kai_scheduler.api.errors import UserError

SOURCES = ("volcano", "yunikorn")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "migrate",
        help="print Volcano Queues or YuniKorn's queues.yaml as KAI Queues",
        description="Read Volcano Queue objects (scheduling.volcano.sh/v1beta1) or YuniKorn's queue configuration "
        "(queues.yaml, or its ConfigMap) and print the equivalent KAI Queues as YAML on stdout, for "
        "`kubectl apply -f -`. What could not be mapped is listed on stderr, one line each.",
    )
    p.add_argument("--from", dest="source", required=True, choices=SOURCES, help="the scheduler FILE is written for")
    p.add_argument("file", metavar="FILE", help="the YAML file to read ('-': standard input)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kai_scheduler.install import migrate, migrate_volcano, migrate_yunikorn

    source = "stdin" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{source}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UserError(f"{source}: not a UTF-8 text file") from None
    reader = migrate_volcano if args.source == "volcano" else migrate_yunikorn
    result = reader.convert(text, source)
    sys.stdout.write(migrate.render(result))
    for line in result.unmapped:
        print(f"not mapped: {line}", file=sys.stderr)
    return 0
