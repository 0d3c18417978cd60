"""What `kai`'s own argparse parsers accept: its commands and, per command, its option strings."""

from __future__ import annotations

import argparse

from kai_scheduler import cli


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(parser._option_string_actions)


def _takes_value(parser: argparse.ArgumentParser, flag: str) -> bool:
    action = parser._option_string_actions[flag]
    return action.nargs != 0


def problems(argv: tuple[str, ...]) -> list[str]:
    """Why `kai argv…` is not a command the parsers accept (a command that is not there, a flag the command
    does not take), empty if it is. Placeholders (FILE, JOB, `…`) and values are not judged, only names: a flag
    must be written in full (argparse would take an abbreviation, the docs should not show one)."""
    top = cli.parser()
    commands = _subcommands(top)
    top_options = _options(top)
    rest = list(argv)
    while rest and rest[0].startswith("-"):  # kai -v --log-format json COMMAND
        flag = rest.pop(0).split("=", 1)[0]
        if flag not in top_options:
            return [f"`kai {flag}`: kai takes no such option (kai --help)"]
        if _takes_value(top, flag) and "=" not in argv[len(argv) - len(rest) - 1] and rest:
            rest.pop(0)
    if not rest or rest[0] in ("…", "COMMAND", "<command>", "<component>"):
        return []
    name = rest.pop(0)
    if name not in commands:
        return [f"`kai {name}`: no such command (kai --help lists {', '.join(sorted(commands))})"]
    sub = commands[name]
    accepted = _options(sub)
    found = []
    for token in rest:
        flag = token.strip("[]").split("=", 1)[0]
        if flag == "-" or not flag.startswith("-") or flag.startswith("---"):
            continue
        if flag not in accepted:
            found.append(f"`kai {name} {flag}`: kai {name} takes no such flag (kai {name} --help)")
    return found


def parse_error(argv: tuple[str, ...]) -> str | None:
    """The one-line error `kai`'s parser gives for `kai argv…` (values checked too: a duration, a choice), or
    None when it parses. Nothing is run."""
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cli.parser().parse_args(list(argv))
    except SystemExit as exit_:
        return err.getvalue().strip() or f"exit {exit_.code}"
    return None
