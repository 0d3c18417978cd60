"""The error types for bad input: `UserError` for anything the user can fix, `ObjectError` naming the object
and the field.

A user error is printed as one line (`kai` exits 2); in a running cluster the same error marks the object and
the cycle goes on with the rest. Any other exception reaching `kai` is a bug: a traceback and exit 70.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(ValueError):
    """Input the user can fix (a file, a flag, an object): its str() is one readable line.

    A ValueError still, so code that catches ValueError around parsing keeps doing so.
    """


# The longest message an ObjectError keeps: a value quoted whole could be megabytes (an annotation), and the
# message goes into log lines and Events.
MESSAGE_LIMIT = 512
# Kept whole up to this much longer, so a message bounded once (its tail "… (N more characters)") stays as it is
# when the error is made again (`with_source`).
_SLACK = 40


class ObjectError(UserError):
    """A Kubernetes object (or scenario entry) with a field the scheduler cannot accept."""

    def __init__(self, kind: str, name: str, field: str, message: str, *, source: str = "") -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.message = _bounded(message)
        self.source = source
        super().__init__(str(self))

    def with_source(self, source: str) -> ObjectError:
        """Return the same error located in `source` (a file, or file:line)."""
        return ObjectError(self.kind, self.name, self.field, self.message, source=source)

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        field = f" {self.field}:" if self.field else ":"
        return f"{where}{self.kind} {self.name}{field} {self.message}"


def _bounded(message: str) -> str:
    if len(message) <= MESSAGE_LIMIT + _SLACK:
        return message
    return f"{message[:MESSAGE_LIMIT]}… ({len(message) - MESSAGE_LIMIT} more characters)"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` for the closest near miss of `name` among `known`, else empty: the hint every
    "unknown name" error carries (a field, an action or plugin, a job)."""
    hint = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {hint[0]}?)" if hint else ""
