"""The API server's answers as the store decodes them (kube_http.body)."""

from __future__ import annotations

import pytest

from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.kube_http.body import decode, encode


def test_an_answer_round_trips() -> None:
    doc = {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "p"}}]}
    assert decode(encode(doc), "list pods") == doc


def test_a_large_integer_is_kept_exactly() -> None:
    # An integer past 64 bits stays an int: a decoder that reads it as a double loses its last digits.
    assert decode(b'{"n": 123456789012345678901234567890}', "get x") == {"n": 123456789012345678901234567890}


@pytest.mark.parametrize("raw", [b"{bad", b"", b'{"a": "\\ud800"}'])
def test_a_malformed_answer_is_a_store_error_naming_the_request(raw: bytes) -> None:
    with pytest.raises(StoreError, match=r"^list pods: the API server answered with malformed JSON: "):
        decode(raw, "list pods")


def test_an_answer_that_is_not_an_object_is_a_store_error() -> None:
    with pytest.raises(StoreError, match=r"^get pod a/b: the API server answered with list, not an object$"):
        decode(b"[1, 2]", "get pod a/b")
