"""Go `time.Duration` strings ("10m", "1h30m", "90s", "-1s", "1.5h") as seconds.

KAI reads `preemptionDelay`, `stalenessGracePeriod`, min-runtimes and scheduler flags with Go's
`time.ParseDuration`; scenario files and annotations use the same form. A bare number is not a Go duration
but is accepted as seconds in scenario files only, by the caller.
"""

from __future__ import annotations

import re

from kai_scheduler.api.errors import UserError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")
# Larger windows (usage windows, "1w", "1d") appear in KAI's usageDBConfig; accept them there.
_LONG_UNITS = {**_UNITS, "d": 86400.0, "w": 604800.0}
_LONG_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")


class DurationError(UserError):
    """A string that is not a Go duration."""


def parse_duration(text: str, *, allow_days: bool = False) -> float:
    """Seconds in a Go duration string; raise DurationError on anything else."""
    if not isinstance(text, str):
        raise DurationError(f'invalid duration {text!r}: want a string such as "90s" or "10m"')
    body = text.strip()
    sign = 1.0
    if body[:1] in ("+", "-"):  # one optional sign, as Go's ParseDuration
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    term, units = (_LONG_TERM, _LONG_UNITS) if allow_days else (_TERM, _UNITS)
    pos, total = 0, 0.0
    for match in term.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * units[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise DurationError(f'invalid duration {text!r}: want a Go duration such as "90s", "10m" or "1h30m"')
    return sign * total


def format_duration(seconds: float) -> str:
    """Seconds as a short Go-style duration ("1h30m", "45s", "0s")."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    rest = abs(seconds)
    parts = []
    for unit, size in (("h", 3600), ("m", 60)):
        if rest >= size:
            n = int(rest // size)
            parts.append(f"{n}{unit}")
            rest -= n * size
    if rest or not parts:
        text = f"{rest:.9f}".rstrip("0").rstrip(".")  # never exponent notation: Go does not read it
        parts.append(f"{text}s")
    return sign + "".join(parts)


def describe_duration(seconds: float | None) -> str:
    """Seconds for a person, at most two units: "850ms", "4.2s", "45s", "12m30s", "3h06m", "2d04h"; "–" for
    None or NaN. Not for parsing back (see format_duration)."""
    if seconds is None or seconds != seconds:
        return "–"
    sign = "-" if seconds < 0 else ""
    rest = abs(seconds)
    if rest == 0:
        return "0s"
    if rest < 1:
        return f"{sign}{rest * 1000:.0f}ms"
    if rest < 10:
        return f"{sign}{rest:.1f}s"
    whole = round(rest)
    if whole < 60:
        return f"{sign}{whole}s"
    for unit, size, small, small_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if whole >= size:
            return f"{sign}{whole // size}{unit}{(whole % size) // small_size:02d}{small}"
    return f"{sign}{whole}s"
