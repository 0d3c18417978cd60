"""What `kai`'s own argparse parsers accept: its commands and, per command, its option strings."""

from __future__ import annotations

import argparse
import re

from kai_scheduler import cli


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command of `parser` (`kai`'s: `cli.parser()`)."""
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
    commands = subcommands(top)
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


# the components docs/components.md's "Every component" table is about
COMPONENTS = ("scheduler", "binder", "podgrouper", "controllers", "node-scale-adjuster", "run", "operator")


# pages whose title names no `kai` command, and the command their flag tables are about
PAGE_COMMANDS = {"node-scale-adjuster.md": ("node-scale-adjuster",)}


def table_flags(name: str, text: str) -> list[tuple[int, tuple[str, ...], str]]:
    """(line, commands, flag) of every flag in the first cell of a flag table row (`| `--flag …`, `--other` | …`)
    of a page. The commands: those its heading names (`### `kai binder``; `Every component`: all of them), else
    the last one the prose or a code block of its section names, else those of the page's title (or PAGE_COMMANDS)."""
    found = []
    title: tuple[str, ...] = PAGE_COMMANDS.get(name, ())
    heading: tuple[str, ...] = ()
    prose: tuple[str, ...] = ()
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:  # a code block's `kai manifests …` names the command as prose does
            prose = tuple(re.findall(r"^kai ([a-z-]+)", line.strip())) or prose
        elif line.startswith("#"):
            named = COMPONENTS if "Every component" in line else tuple(re.findall(r"`kai ([a-z-]+)", line))
            if line.startswith("# "):
                title = named or title
            heading, prose = named, ()
        elif line.startswith("| `--"):
            for flag in re.findall(r"`(--[\w-]+\*?)", line.split("|")[1]):
                found.append((number, heading or prose or title, flag))
        elif not line.startswith("|"):
            prose = tuple(re.findall(r"`kai ([a-z-]+)", line))[-1:] or prose
    return found


def _accepts(parser: argparse.ArgumentParser, flag: str) -> bool:
    if flag.endswith("*"):  # `--leader-elect*`: the flags of that prefix
        return any(option.startswith(flag[:-1]) for option in _options(parser))
    return flag in _options(parser)


def table_problems(name: str, text: str) -> list[str]:
    """A flag a table names that its command does not take (each of them, for `Every component`; at least one
    of them for a heading naming several, such as `kai podgrouper`, `kai controllers`)."""
    commands = subcommands(cli.parser())
    found = []
    for number, named, flag in table_flags(name, text):
        if not named:
            found.append(f"{name}:{number}: {flag}: no `kai COMMAND` in its heading, section or the page's title")
            continue
        refusing = [cmd for cmd in named if cmd not in commands or not _accepts(commands[cmd], flag)]
        if (named == COMPONENTS and refusing) or len(refusing) == len(named):
            found.append(f"{name}:{number}: {flag}: not a flag of kai {' / kai '.join(refusing)}")
    return found


def undocumented(text: str) -> dict[str, list[str]]:
    """Per command, the flags its --help lists that the text never names (by any of their option strings)."""
    named = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))
    found = {}
    for name, sub in sorted(subcommands(cli.parser()).items()):
        missing = [
            action.option_strings[-1]
            for action in sub._actions
            if action.option_strings
            and action.help != argparse.SUPPRESS
            and "--help" not in action.option_strings
            and not named.intersection(action.option_strings)
        ]
        if missing:
            found[name] = missing
    return found


def help_texts() -> list[tuple[str, str]]:
    """(command, text) of every description and flag help `kai … --help` prints, unwrapped."""
    top = cli.parser()
    found = [("kai", top.description or "")]
    for name, sub in sorted(subcommands(top).items()):
        found.append((f"kai {name}", sub.description or ""))
        found.extend((f"kai {name} {action.option_strings}", action.help or "") for action in sub._actions)
    return found
