"""The `kai` command. Argument handling only: every command calls into the layers below.

A user error (bad file, bad field, bad flag) is one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kai_scheduler.cli import admission, components, fakenodes, logs, manifests, schedule, simulate


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kai", description="KAI scheduling system for Kubernetes GPU clusters.",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="log lines as text with key=value fields, or one JSON object a line (default text)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schedule.add_parser(sub)
    simulate.add_parser(sub)
    components.add_parser(sub)
    admission.add_parser(sub)
    manifests.add_parser(sub)
    fakenodes.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logs.configure(level, args.log_format)
    try:
        code: int = args.run(args)
    except ValueError as err:            # ObjectError, ScenarioError, ConfigError: user errors
        print(f"kai: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
