"""Standard five-field cron expressions (minute hour day-of-month month day-of-week), UTC, for cron windows.

A cron window (§5.5 `windowType: cron`) restarts at every instant the expression matches; `last_match(t)` is
the start of the window that contains `t`. Fields accept `*`, numbers, `a-b`, lists and `/step`; day-of-week
0-7 with 0 and 7 both Sunday; the descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
`@midnight` and `@hourly`. As in cron, when both day fields are restricted a day matching either one matches.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from kai_scheduler.api.errors import UserError

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))
_SEARCH_DAYS = 366 * 5  # a valid expression that never matches in five years (e.g. 30 February) is an error


class CronError(UserError):
    """An expression that is not a valid cron schedule; the message names the field."""


@dataclass(frozen=True, slots=True)
class Cron:
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day of month is "*"
    any_weekday: bool  # day of week is "*"

    def matches_day(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        dom, dow = day.day in self.days, (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def last_match(self, t: float) -> float:
        """The latest instant ≤ t (POSIX seconds, UTC) the expression matches."""
        now = dt.datetime.fromtimestamp(t, tz=dt.UTC).replace(second=0, microsecond=0)
        day = now.date()
        for back in range(_SEARCH_DAYS):
            if self.matches_day(day):
                latest = (now.hour, now.minute) if back == 0 else (23, 59)
                found = self._latest_time(latest)
                if found is not None:
                    hour, minute = found
                    return dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC).timestamp()
            day -= dt.timedelta(days=1)
        raise CronError(f"cron {self.text!r}: no match in the last {_SEARCH_DAYS // 366} years")

    def _latest_time(self, latest: tuple[int, int]) -> tuple[int, int] | None:
        for hour in sorted(self.hours, reverse=True):
            if hour > latest[0]:
                continue
            limit = latest[1] if hour == latest[0] else 59
            minutes = [m for m in self.minutes if m <= limit]
            if minutes:
                return hour, max(minutes)
        return None


def parse(text: str) -> Cron:
    """A Cron from its text; CronError naming the field that is wrong."""
    spec = _DESCRIPTORS.get(text.strip(), text)
    parts = spec.split()
    if len(parts) != 5:
        raise CronError(f"cron {text!r}: want 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}")
    sets = [_field(text, part, name, low, high) for part, (name, low, high) in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4])
    cron = Cron(text, sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*")
    return cron


def _field(text: str, part: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in part.split(","):
        base, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = low, high
            elif "-" in base:
                a, b = base.split("-", 1)
                start, end = int(a), int(b)
            else:
                start = int(base)
                end = high if step_text else start
        except ValueError:
            raise CronError(f"cron {text!r}: bad {name} {item!r}") from None
        if step < 1 or not low <= start <= end <= high:
            raise CronError(f"cron {text!r}: {name} {item!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)
