"""Kubernetes quantities are parsed exactly and converted to the scheduler's units (millicores, bytes)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kai_scheduler.api import quantity
from kai_scheduler.api.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize(
    "text, want",
    [
        pytest.param("500m", Decimal("0.5"), id="m suffix is milli"),
        pytest.param("64Gi", Decimal(64 * 2**30), id="Gi is 2^30"),
        pytest.param("1Ki", Decimal(1024), id="Ki is 2^10"),
        pytest.param("1.5Gi", Decimal(3 * 2**29), id="binary suffix on a decimal number is exact"),
        pytest.param("1.5", Decimal("1.5"), id="plain decimal"),
        pytest.param("2e3", Decimal(2000), id="lower-case exponent"),
        pytest.param("1E3", Decimal(1000), id="upper-case exponent is an exponent, not exa"),
        pytest.param("1e-3", Decimal("0.001"), id="negative exponent"),
        pytest.param(".5", Decimal("0.5"), id="leading dot"),
        pytest.param("2k", Decimal(2000), id="k is 10^3"),
        pytest.param("3M", Decimal(3_000_000), id="M is mega, not milli"),
        pytest.param("1G", Decimal(10**9), id="G is 10^9"),
        pytest.param("100n", Decimal("1e-7"), id="n is nano"),
        pytest.param("8", Decimal(8), id="bare integer"),
        pytest.param(8, Decimal(8), id="an integer value from JSON"),
        pytest.param(0.25, Decimal("0.25"), id="a float value from JSON keeps its decimal reading"),
    ],
)
def test_parse(text: str | int | float, want: Decimal) -> None:
    assert parse_quantity(text) == want


def test_a_tenth_is_exactly_a_tenth() -> None:
    assert parse_quantity("0.1") == Decimal("0.1")
    assert parse_quantity("0.1") + parse_quantity("0.2") == Decimal("0.3")


@pytest.mark.parametrize(
    "text, millicores",
    [
        pytest.param("500m", 500, id="millicores as written"),
        pytest.param("2", 2000, id="whole cores"),
        pytest.param("1.5", 1500, id="fractional cores"),
        pytest.param("0.0001", 1, id="below a millicore rounds up to one"),
        pytest.param("1.0001", 1001, id="a sliver above rounds up"),
        pytest.param("100u", 1, id="micro cores round up"),
        pytest.param("2e3", 2_000_000, id="exponent applies before conversion"),
    ],
)
def test_cpu_is_ceiled_to_millicores(text: str, millicores: int) -> None:
    assert quantity.to_millicores(text) == millicores


@pytest.mark.parametrize(
    "text, num_bytes",
    [
        pytest.param("64Gi", 64 * 2**30, id="binary"),
        pytest.param("1G", 10**9, id="decimal"),
        pytest.param("1.5", 2, id="a fractional byte rounds up"),
        pytest.param("128974848", 128974848, id="plain bytes"),
    ],
)
def test_memory_in_bytes(text: str, num_bytes: int) -> None:
    assert quantity.to_bytes(text) == num_bytes


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1.5.5", id="two dots"),
        pytest.param("Gi", id="suffix without number"),
        pytest.param("1 Gi", id="space before suffix"),
        pytest.param("1e", id="exponent without digits"),
        pytest.param("1KiB", id="unknown suffix"),
        pytest.param("1k1", id="digits after suffix"),
        pytest.param(None, id="null"),
        pytest.param(True, id="a boolean is not a number"),
        pytest.param(float("nan"), id="nan"),
        pytest.param(float("inf"), id="infinity"),
        pytest.param([1], id="a list"),
    ],
)
def test_invalid_quantities_raise(value: object) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(value)  # type: ignore[arg-type]


def test_error_quotes_the_value() -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity("lots")
    assert str(err.value) == "invalid quantity 'lots'"


@pytest.mark.parametrize(
    "fmt, value, text",
    [
        pytest.param(quantity.format_cpu, 8000, "8", id="whole cores without suffix"),
        pytest.param(quantity.format_cpu, 1500, "1500m", id="fractional cores in millicores"),
        pytest.param(quantity.format_memory, 64 * 2**30, "64Gi", id="largest exact binary suffix"),
        pytest.param(quantity.format_memory, 1536 * 2**20, "1536Mi", id="not a whole Gi"),
        pytest.param(quantity.format_memory, 1000, "1000", id="no exact suffix"),
        pytest.param(quantity.format_count, 8.0, "8", id="whole devices"),
        pytest.param(quantity.format_count, 0.5, "0.5", id="fraction without trailing zeros"),
    ],
)
def test_format(fmt: object, value: float, text: str) -> None:
    assert fmt(value) == text  # type: ignore[operator]


@pytest.mark.parametrize("text", ["8", "1500m", "250m"])
def test_cpu_format_round_trips(text: str) -> None:
    assert quantity.format_cpu(quantity.to_millicores(text)) == text


@pytest.mark.parametrize("text", ["64Gi", "512Mi", "3Ki", "1Ti"])
def test_memory_format_round_trips(text: str) -> None:
    assert quantity.format_memory(quantity.to_bytes(text)) == text


@pytest.mark.parametrize(
    "written, hint",
    [
        ("512GB", " (did you mean 512Gi or 512G?)"),
        ("64GiB", " (did you mean 64Gi?)"),
        ("16gi", " (did you mean 16Gi?)"),
        ("3 mb", " (did you mean 3Mi or 3M?)"),
        ("1kB", " (did you mean 1Ki or 1k?)"),
        ("64 Gi", " (did you mean 64Gi?)"),
        ("8 cores", " (did you mean 8?)"),
        ("lots", ""),
        ("5x", ""),
    ],
)
def test_a_unit_written_as_people_write_it_is_given_the_kubernetes_spelling(written: str, hint: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(written)
    assert quantity.near_miss(written) == hint


@given(st.text(alphabet="0123456789. kKmMgGtTpPeEiIbB", max_size=8))
def test_every_suggested_spelling_is_a_quantity(written: str) -> None:
    """A hint never proposes something that is itself rejected."""
    hint = quantity.near_miss(written)
    if hint:
        for proposal in hint.removeprefix(" (did you mean ").removesuffix("?)").split(" or "):
            parse_quantity(proposal)


def test_a_quantity_past_1e30_is_refused_and_9ei_is_not() -> None:
    """9Ei (past int64) is a quantity Kubernetes reads; 1e400 and 40 digits are typos that were OverflowErrors."""
    assert parse_quantity("9Ei") == 9 * 2**60
    for text in ("1e400", "9" * 40, "1e31"):
        with pytest.raises(QuantityError, match="is too large"):
            parse_quantity(text)


@pytest.mark.parametrize("suffix", ["", "Ki", "k", "e3"])
def test_a_million_digits_are_too_large_not_a_decimal_overflow(suffix: str) -> None:
    """Past Decimal's exponent range (a 2 MB annotation of nines) scaling raised decimal.Overflow, no QuantityError."""
    with pytest.raises(QuantityError, match="is too large"):
        parse_quantity("9" * 2**21 + suffix)
