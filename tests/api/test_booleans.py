from __future__ import annotations

import pytest

from kai_scheduler.api.booleans import parse_bool


@pytest.mark.parametrize("text", ["1", "t", "T", "true", "TRUE", "True"])
def test_go_true_spellings(text: str) -> None:
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "false", "FALSE", "False"])
def test_go_false_spellings(text: str) -> None:
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["", "yes", "tRuE", " true", "2", "maybe"])
def test_anything_else_is_none_for_the_caller_to_name(text: str) -> None:
    assert parse_bool(text) is None
