"""`Writers`: results in the items' order, several at once, and an exception raised only once every write ended."""

from __future__ import annotations

import threading
import time

import pytest

from kai_scheduler.store.writers import Writers


def test_one_writer_writes_in_order_on_the_callers_thread() -> None:
    seen: list[tuple[int, threading.Thread]] = []
    assert Writers(1, "test").map(lambda i: seen.append((i, threading.current_thread())) or i * 2, [3, 1, 2]) == [
        6,
        2,
        4,
    ]
    assert seen == [(3, threading.current_thread()), (1, threading.current_thread()), (2, threading.current_thread())]


def test_several_write_at_once_and_answer_in_the_items_order() -> None:
    barrier = threading.Barrier(4)

    def write(i: int) -> int:
        barrier.wait(10)  # one at a time, the first would wait in vain
        return i

    assert Writers(4, "test").map(write, [4, 3, 2, 1]) == [4, 3, 2, 1]


def test_an_exception_is_raised_once_the_other_writes_ended() -> None:
    ended: list[int] = []

    def write(i: int) -> None:
        if i == 0:
            raise RuntimeError("a bug")
        time.sleep(0.05)
        ended.append(i)

    with pytest.raises(RuntimeError, match="a bug"):
        Writers(3, "test").map(write, [0, 1, 2, 3, 4])
    assert sorted(ended) == [1, 2, 3, 4]


def test_fewer_than_one_writer_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Writers(0, "test")
