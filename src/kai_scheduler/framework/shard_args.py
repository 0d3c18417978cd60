"""A SchedulingShard's `args` (KAI's scheduler command-line flags by name, without dashes) as the flags of the
`kai scheduler` command the operator renders, BEHAVIOR.md §1.5.

KAI's operator (`pkg/operator/operands/scheduler/resources_for_shard.go`, `buildArgsList`) appends `--NAME=VALUE`
after the flags it generates for every arg its scheduler's flag set defines, and drops any other name. Here:

- a flag `kai scheduler` takes by the same name (`SCHEDULER_FLAGS`) is passed as it is, after the install's
  flags, so the shard's wins; its value is checked first, so a bad one is refused, not a crash-looping pod;
- a KAI flag with another spelling here is renamed (`RENAMED`: `namespace` is the Lease and event namespace);
- KAI's log flags become `kai`'s own, written before the subcommand: `v` (KAI's verbosity, default 3) gives
  `-v` at 4 and `-vv` at 5 and above, as `kai schedule snapshot-tool --verbosity` reads it; `log-json` gives
  `--log-format=json` (false: text);
- a name one typo away from a flag taken here is refused (the user means it to apply);
- any other name (KAI's profiler and Pyroscope flags, `version`, `resource-reservation-app-label`, its worker
  node label keys, or a name KAI's scheduler does not have either) is accepted, ignored, and named in `ignored`;
  so is a flag of `FIXED_FLAGS` set to other than its default (`detailed-fit-errors: "true"`, as KAI's docs
  suggest for diagnosis): the scheduler takes only the default, which then applies.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kai_scheduler.api import duration, flags
from kai_scheduler.api.booleans import parse_bool
from kai_scheduler.framework.config import FIXED_FLAGS, Flags

# Every flag of `kai scheduler` a shard's args may set, with the kind of its value (`api.flags`: "bool" as Go spells
# it, "int", "float", "duration" in Go syntax, "str"). Not the kubeconfig and context: a shard's pod has its own.
SCHEDULER_FLAGS: Final[dict[str, str]] = {
    flag.name: flag.kind.name
    for flag in (
        *flags.SCHEDULING,
        *flags.LEADER_ELECTION,
        flags.LISTEN_ADDRESS,
        flags.QPS,
        flags.BURST,
        *flags.SCHEDULER,
    )
}
RENAMED: Final = {"namespace": "leader-elect-namespace"}
VERBOSITY: Final = "v"
LOG_JSON: Final = "log-json"
# How alike an unknown name must be to a flag taken here to be taken as its typo (difflib's ratio).
TYPO_CUTOFF: Final = 0.85


class ArgError(ValueError):
    """A shard arg that cannot be passed; `name` is the arg as written."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True, slots=True)
class ShardArgs:
    command: tuple[str, ...] = ()  # `kai` flags, before the subcommand
    scheduler: tuple[str, ...] = ()  # `kai scheduler` flags, after the install's
    ignored: tuple[str, ...] = ()  # the args as written that are not passed


def resolve(args: Mapping[str, str]) -> ShardArgs:
    """The flags of `args`, by flag name; ArgError for a bad value or a typo of a flag taken here."""
    command: list[str] = []
    scheduler: list[str] = []
    ignored: list[str] = []
    for written in sorted(args):
        name, value = written.removeprefix("--"), args[written]
        if name == VERBOSITY:
            command += _verbosity(written, value)
        elif name == LOG_JSON:
            command.append(f"--log-format={'json' if _bool(written, value) else 'text'}")
        elif name in SCHEDULER_FLAGS or name in RENAMED:
            flag = RENAMED.get(name, name)
            checked = _checked(written, flag, value)
            if _is_fixed_away(flag, checked):
                ignored.append(written)
            else:
                scheduler.append(f"--{flag}={checked}")
        else:
            typo = difflib.get_close_matches(name, [*SCHEDULER_FLAGS, *RENAMED], n=1, cutoff=TYPO_CUTOFF)
            if typo:
                raise ArgError(written, f"unknown scheduler flag (did you mean {typo[0]}?)")
            ignored.append(written)
    return ShardArgs(tuple(command), tuple(scheduler), tuple(ignored))


def _checked(written: str, flag: str, value: str) -> str:
    kind = SCHEDULER_FLAGS[flag]
    if kind == "bool":
        return "true" if _bool(written, value) else "false"
    if kind == "int":
        try:
            return str(int(value.strip()))
        except ValueError:
            raise ArgError(written, f"expected an integer, got {value!r}") from None
    if kind == "float":
        try:
            float(value)
        except ValueError:
            raise ArgError(written, f"expected a number, got {value!r}") from None
    if kind == "duration":
        try:
            duration.parse_duration(value)
        except duration.DurationError as err:
            raise ArgError(written, str(err)) from None
    return value


def _is_fixed_away(flag: str, value: str) -> bool:
    """A flag this scheduler takes only at its default (`FIXED_FLAGS`), set to another value."""
    name = flag.replace("-", "_")
    return name in FIXED_FLAGS and value != str(getattr(Flags(), name)).lower()


def _bool(written: str, value: str) -> bool:
    parsed = parse_bool(value)
    if parsed is None:
        raise ArgError(written, f"expected true or false, got {value!r}")
    return parsed


def _verbosity(written: str, value: str) -> list[str]:
    try:
        level = int(value.strip())
    except ValueError:
        raise ArgError(written, f"expected a verbosity level (an integer), got {value!r}") from None
    return ["-vv"] if level >= 5 else ["-v"] if level == 4 else []
