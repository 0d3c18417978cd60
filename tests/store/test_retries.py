"""`Retries`: a refused write is due again after 1 s, 2 s, 4 s … 60 s, until it succeeds or its object goes."""

from __future__ import annotations

from kai_scheduler.store.retries import MAXIMUM, Retries


def test_keys_are_due_after_a_doubling_capped_delay_until_they_succeed() -> None:
    now = [0.0]
    retries = Retries(lambda: now[0])
    assert [retries.failed("a") for _ in range(8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, MAXIMUM, MAXIMUM]
    assert retries.due() == set() and "a" in retries
    now[0] = 59.0
    assert retries.due() == set()
    now[0] = 60.0
    assert retries.due() == {"a"}
    retries.succeeded("a")
    assert retries.due() == set() and len(retries) == 0
    assert retries.failed("a") == 1.0  # a success starts the series over
    retries.forget("a")
    assert "a" not in retries
