"""api.meta.is_label_value: Kubernetes' rule for a label value (the fake nodes' --label and --taint values, a Grove
podgroup's name used as a SubGroup label, the node scale adjuster's member labels)."""

from __future__ import annotations

import pytest

from kai_scheduler.api.meta import is_label_value


@pytest.mark.parametrize("text", ["", "a", "A9", "a-b_c.d", "0" * 63, "llm-0-decode"])
def test_a_label_value(text: str) -> None:
    assert is_label_value(text)


@pytest.mark.parametrize("text", ["a" * 64, "-a", "a-", "_a", "a.", "a b", "Bad Name!", "a/b", "é"])
def test_not_a_label_value(text: str) -> None:
    assert not is_label_value(text)
