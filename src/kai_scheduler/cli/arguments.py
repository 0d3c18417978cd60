"""A `Flag` (`api.flags`) as an argument of a command's parser: the one way a flag that several commands take is added.

The command gives its default; --help shows it after the flag's help. A value is read while parsing, so a bad one
is the parser's one-line error naming the flag (`kai: --qps: invalid value 'lots': want a number`).
"""

from __future__ import annotations

import argparse
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kai_scheduler.api.flags import BOOL, SWITCH, Flag

T = TypeVar("T")

_DECLARED: weakref.WeakKeyDictionary[argparse.Action, Flag[Any]] = weakref.WeakKeyDictionary()


def add(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: Flag[T],
    default: T | None,
    *,
    shown: str | None = None,
    choices: Sequence[str] | None = None,
    aliases: bool = True,
) -> argparse.Action:
    """Add `flag` to `p`. Its parsed value is `default` when it is not given (None: the command tells "not given"
    apart, and `shown` says what applies then); `shown` is the default as --help writes it. `aliases=False`: the
    flag's own spelling alone, where an alias is another flag's name in that command."""
    if shown is None and default is not None and flag.kind is not SWITCH:
        shown = flag.kind.show(default)
    help_text = flag.help if shown is None else f"{flag.help} (default {shown})"
    options: dict[str, Any] = {"dest": flag.dest, "default": default, "help": help_text}
    if flag.kind is SWITCH:
        options["action"] = "store_true"
    else:
        options.update(type=_reader(flag), metavar=flag.metavar, choices=choices)
        if flag.kind is BOOL:  # `--flag` alone is true, as Go's boolean flags
            options.update(nargs="?", const=True)
        if flag.repeatable:
            options["action"] = "append"
    action = p.add_argument(*(flag.option_strings if aliases else (flag.option,)), **options)
    _DECLARED[action] = flag
    return action


def declared(action: argparse.Action) -> Flag[Any] | None:
    """The flag `add` made `action` of; None for an argument added otherwise."""
    return _DECLARED.get(action)


def _reader(flag: Flag[T]) -> Callable[[str], T]:
    def read(text: str) -> T:
        try:
            return flag.kind.read(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    read.__name__ = flag.kind.name  # argparse names a type in some messages
    return read


def given(value: T | None, default: T) -> T:
    """A flag added without a default: its value, or `default` when it was not given."""
    return default if value is None else value
