"""Go `time.Duration` strings as seconds: what KAI's `time.ParseDuration` accepts, and nothing more."""

from __future__ import annotations

import pytest

from kai_scheduler.api.duration import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    "text, seconds",
    [
        pytest.param("90s", 90.0, id="seconds"),
        pytest.param("10m", 600.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("1h30m15s", 5415.0, id="three terms"),
        pytest.param("1.5h", 5400.0, id="fractional hours"),
        pytest.param(".5s", 0.5, id="leading dot"),
        pytest.param("300ms", 0.3, id="milliseconds"),
        pytest.param("1us", 1e-6, id="microseconds"),
        pytest.param("1µs", 1e-6, id="microseconds with the micro sign"),
        pytest.param("10ns", 1e-8, id="nanoseconds"),
        pytest.param("-1s", -1.0, id="negative"),
        pytest.param("+2m", 120.0, id="explicit plus"),
        pytest.param("0", 0.0, id="bare zero is the one unitless duration"),
        pytest.param("-0", 0.0, id="negative zero"),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("10", id="number without unit"),
        pytest.param("abc", id="letters"),
        pytest.param("1h 30m", id="space between terms"),
        pytest.param("1d", id="days are not a Go unit"),
        pytest.param("1w", id="weeks are not a Go unit"),
        pytest.param("1m1", id="trailing number"),
        pytest.param("1.5.5s", id="two dots"),
        pytest.param("s", id="unit without number"),
        pytest.param("--1s", id="a doubled minus sign"),
        pytest.param("+-1s", id="a plus then a minus sign"),
    ],
)
def test_invalid_durations_raise(text: str) -> None:
    with pytest.raises(DurationError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("value", [pytest.param(90, id="an integer"), pytest.param(None, id="null")])
def test_non_strings_raise(value: object) -> None:
    with pytest.raises(DurationError, match="want a string"):
        parse_duration(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text, seconds",
    [
        pytest.param("1d", 86400.0, id="days"),
        pytest.param("1w", 604800.0, id="weeks"),
        pytest.param("1w2d", 777600.0, id="weeks and days"),
    ],
)
def test_days_and_weeks_only_where_allowed(text: str, seconds: float) -> None:
    assert parse_duration(text, allow_days=True) == seconds


@pytest.mark.parametrize(
    "seconds, text",
    [
        pytest.param(0, "0s", id="zero"),
        pytest.param(45, "45s", id="seconds"),
        pytest.param(3600, "1h", id="an hour without zero terms"),
        pytest.param(5400, "1h30m", id="hours and minutes"),
        pytest.param(-90, "-1m30s", id="negative"),
        pytest.param(0.5, "0.5s", id="fraction of a second"),
        pytest.param(1_000_000, "277h46m40s", id="long durations stay in hours"),
    ],
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [0, 1, 59, 61, 3599, 86400, 1_080_000, 0.25, -600])
def test_format_round_trips(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
