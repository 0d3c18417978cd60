"""The `kai` command. Argument handling only: every command calls into the layers below.

A user error (bad file, bad field, bad flag: a `UserError`, or the system refusing a file or an address) is one
line on stderr and exit code 2, never a traceback. Any other exception is a bug: its traceback and exit code 70
(EX_SOFTWARE), so it is never mistaken for the user's mistake.
Building the parser imports only the standard library and light project modules: each subcommand imports
what it needs (numpy, matplotlib, the Kubernetes client, cryptography) when it runs, so `kai --help` is quick.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from typing import Any, NoReturn

from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import (
    admission,
    components,
    dashboard,
    explain,
    fakenodes,
    logs,
    manifests,
    migrate,
    operator,
    schedule,
    simulate,
)

DIST = "kai-scheduler"
EXIT_USER_ERROR = 2
EXIT_BUG = 70  # EX_SOFTWARE (sysexits.h): an internal error, not the user's
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a Unix tool's shell status is when its reader went away


def version() -> str:
    from importlib import metadata  # only for --version: it costs a third of the parser's start-up

    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog} {version()}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but a bad flag is one line as every other user error (argparse prints its whole usage
    first, which pushes the reason out of a narrow terminal): `kai: --until: expected a duration such as 90s or
    2h, got '2hours' (see kai simulate --help)`, exit code 2. Subcommands' parsers are of this class too.

    A flag is taken only by its whole name, as Kubernetes' components take theirs: `--cycle 3` is refused rather
    than read as `--cycles 3`, so a script that abbreviates does not change meaning when a flag is added."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"kai: {message.removeprefix('argument ')} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kai",
        description="KAI scheduling system for Kubernetes GPU clusters.",
    )
    p.add_argument("--version", action=_Version)
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log lines as text with key=value fields, or one JSON object a line (default text)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schedule.add_parser(sub)
    simulate.add_parser(sub)
    explain.add_parser(sub)
    components.add_parser(sub)
    admission.add_parser(sub)
    operator.add_parser(sub)
    manifests.add_parser(sub)
    fakenodes.add_parser(sub)
    dashboard.add_parser(sub)
    migrate.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logs.configure(level, args.log_format)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except UserError as err:  # ObjectError, ScenarioError, ConfigError, a bad flag
        print(f"kai: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kai … | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as err:  # a file that is not there or not writable, an address in use
        print(f"kai: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as err:  # a broken invariant: show where, and never as the user's mistake
        traceback.print_exc(file=sys.stderr)
        print(f"kai: internal error (a bug in kai, not in your input): {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_BUG
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of the broken pipe does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout already closed or not a real file (tests)
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
