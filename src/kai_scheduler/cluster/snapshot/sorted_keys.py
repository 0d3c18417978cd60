"""Sorted lists of keys, the carried model's orders (of tasks, jobs, a queue's jobs, stale BindRequests), kept
sorted as keys come and go."""

from __future__ import annotations

import bisect
from typing import TypeVar

SortKey = tuple[str, str]
"""(namespace, name): the order of pods and jobs in a snapshot."""

_K = TypeVar("_K", SortKey, str)


def insert_sorted(keys: list[SortKey], key: SortKey, *, appending: bool) -> None:
    """Put `key` in its place; `appending`: keys arrive in order (a build from nothing), so a key past the last
    is appended without a search."""
    if appending and (not keys or keys[-1] < key):
        keys.append(key)
    else:
        bisect.insort(keys, key)


def remove_sorted(keys: list[_K], key: _K) -> None:
    """Take `key` out of `keys`, if there."""
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]


def key_of(sort_key: SortKey) -> str:
    """The object key ("namespace/name") of a sort key."""
    return f"{sort_key[0]}/{sort_key[1]}"


def sort_key_of(key: str) -> SortKey:
    """The sort key of an object key ("namespace/name")."""
    namespace, _, name = key.partition("/")
    return namespace, name
