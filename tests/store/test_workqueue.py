"""The work queue: one item per key, one worker per key at a time, refused keys due again after a back-off."""

from __future__ import annotations

import threading

from kai_scheduler.store.workqueue import WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_many_times_is_taken_once_in_key_order() -> None:
    queue = WorkQueue()
    queue.add(["b", "a", "b"])
    queue.add(["a"])
    assert queue.take() == ["a", "b"]
    assert queue.take() == []  # being processed: not handed out again


def test_a_key_added_while_processed_is_due_again_once_done() -> None:
    queue = WorkQueue()
    queue.add(["a"])
    assert queue.take() == ["a"]
    queue.add(["a"])
    assert queue.take() == []  # one worker per key at a time
    queue.done("a")
    assert queue.take() == ["a"]
    queue.done("a")
    assert queue.take() == [] and queue.keys() == set()


def test_a_refused_key_is_due_after_a_backoff_that_doubles_and_starts_over_when_done() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    queue.add(["a"])
    queue.take()
    assert queue.retry("a") == 1.0
    assert queue.take() == [] and queue.backing_off("a")
    clock.now = 1.0
    assert queue.take() == ["a"]
    assert queue.retry("a") == 2.0
    clock.now = 2.5
    assert queue.take() == []
    clock.now = 3.0
    assert queue.take() == ["a"]
    queue.done("a")
    assert not queue.backing_off("a")
    queue.add(["a"])
    queue.take()
    assert queue.retry("a") == 1.0  # started over


def test_a_forgotten_key_leaves_nothing_behind() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    queue.add(["a", "b"])
    queue.take()
    queue.retry("a")
    queue.add(["b"])
    queue.forget("a")
    queue.forget("b")
    clock.now = 100.0
    assert queue.take() == [] and queue.keys() == set()


def test_threads_taking_at_once_never_share_a_key() -> None:
    queue = WorkQueue()
    keys = [f"k{i}" for i in range(200)]
    queue.add(keys)
    taken: list[list[str]] = []
    lock = threading.Lock()

    def work() -> None:
        mine = queue.take()
        with lock:
            taken.append(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(k for batch in taken for k in batch) == sorted(keys)


def test_a_key_again_is_due_at_the_next_take_its_refusals_kept() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    queue.add(["a"])
    queue.take()
    queue.retry("a")
    clock.now = 1.0
    assert queue.take() == ["a"] and queue.requeues("a") == 1
    queue.again("a")  # a step waits: not a refusal, not a success
    assert queue.take() == ["a"] and queue.requeues("a") == 1
    assert queue.retry("a") == 2.0  # the count went on
    queue.take()
    clock.now = 3.0
    assert queue.take() == ["a"]
    queue.done("a")
    assert queue.requeues("a") == 0


def test_keys_a_pass_left_unfinished_are_retried_not_held_forever() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    queue.add(["a", "b"])
    taken = queue.take()
    queue.done("a")
    assert queue.retry_unfinished(taken) == ["b"]  # the pass raised before finishing b
    queue.add(["b"])  # a change makes it due at once, as any retried key
    assert queue.take() == ["b"]
