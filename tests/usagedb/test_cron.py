"""Cron windows: the latest instant at or before t the expression matches (UTC)."""

from __future__ import annotations

import datetime as dt

import pytest

from kai_scheduler.usagedb import cron


def _t(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    "expression, now, want",
    [
        pytest.param("0 * * * *", "2026-01-07T10:35:00", "2026-01-07T10:00:00", id="hourly"),
        pytest.param("@daily", "2026-01-07T10:35:00", "2026-01-07T00:00:00", id="daily descriptor"),
        pytest.param("30 2 * * *", "2026-01-07T01:00:00", "2026-01-06T02:30:00", id="yesterday's match"),
        pytest.param("0 0 * * 1", "2026-01-07T10:00:00", "2026-01-05T00:00:00", id="weekly on Monday"),
        pytest.param("0 0 * * 7", "2026-01-07T10:00:00", "2026-01-04T00:00:00", id="7 is Sunday"),
        pytest.param("*/15 * * * *", "2026-01-07T10:44:59", "2026-01-07T10:30:00", id="steps"),
        pytest.param("0 0 1 */3 *", "2026-05-20T00:00:00", "2026-04-01T00:00:00", id="quarterly"),
        pytest.param(
            "0 0 13 * 5",
            "2026-01-10T00:00:00",
            "2026-01-09T00:00:00",
            id="day of month or day of week when both are set",
        ),
        pytest.param("0 12 * * *", "2026-01-07T12:00:00", "2026-01-07T12:00:00", id="an exact match is its own start"),
    ],
)
def test_last_match(expression: str, now: str, want: str) -> None:
    assert cron.parse(expression).last_match(_t(now)) == _t(want)


@pytest.mark.parametrize(
    "expression, words",
    [
        pytest.param("* * * *", "want 5 fields", id="too few fields"),
        pytest.param("61 * * * *", "minute '61' is outside 0-59", id="minute out of range"),
        pytest.param("x * * * *", "bad minute 'x'", id="not a number"),
        pytest.param("0 0 * 13 *", "month '13'", id="month out of range"),
        pytest.param("*/0 * * * *", "outside", id="zero step"),
    ],
)
def test_bad_expressions_name_the_field(expression: str, words: str) -> None:
    with pytest.raises(cron.CronError, match=words):
        cron.parse(expression)


def test_a_date_that_never_comes_is_an_error() -> None:
    with pytest.raises(cron.CronError, match="no match"):
        cron.parse("0 0 30 2 *").last_match(_t("2026-01-01T00:00:00"))
