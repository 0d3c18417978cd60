"""Label selectors in the memory store: parsing a list's selector once, and the index that narrows a list to
the objects carrying the labels a selector requires."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final

from kai_scheduler.api.selectors import LabelSelector, parse_label_selector_string
from kai_scheduler.store.interface import JSON, Selector

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds


def parse_selector(selector: Selector) -> LabelSelector | None:
    if isinstance(selector, str):
        return _parse_selector_string(selector) if selector.strip() else None
    return selector


@functools.lru_cache(maxsize=256)
def _parse_selector_string(text: str) -> LabelSelector:
    """Components list with the same few selectors every cycle; a LabelSelector is frozen, so one parse each."""
    return parse_label_selector_string(text)


def _required_label_keys(selector: LabelSelector) -> list[str]:
    """Label keys an object must carry to match (matchLabels, `In` and `Exists` requirements)."""
    keys = [key for key, _ in selector.match_labels]
    keys += [r.key for r in selector.requirements if r.operator in ("In", "Exists")]
    return keys


def labels_of(obj: JSON) -> dict[str, str]:
    labels: dict[str, str] = obj["metadata"].get("labels") or {}
    return labels


_NO_KEYS: Final[frozenset[Key]] = frozenset()


class LabelIndex:
    """Per resource, label key → the objects that carry it, so a list with a selector that requires a label
    (`app=x`, `key`, `key in (…)`) looks at those objects only; objects whose labels are not a mapping are kept
    apart and always looked at. Not thread-safe: the store calls it under its lock."""

    def __init__(self) -> None:
        self._keys: dict[str, set[Key]] = {}
        self._odd: set[Key] = set()

    def candidates(self, objects: dict[Key, JSON], match: LabelSelector | None) -> Iterable[tuple[Key, JSON]]:
        """The objects that may match: those carrying the rarest label the selector requires, else all."""
        required = _required_label_keys(match) if match is not None else ()
        if not required:
            return objects.items()
        keys = min((self._keys.get(label, _NO_KEYS) for label in required), key=len) | self._odd
        return ((key, objects[key]) for key in keys)

    def update(self, key: Key, obj: JSON, *, adding: bool) -> None:
        labels = obj["metadata"].get("labels")
        if not labels:
            return
        if not isinstance(labels, dict):
            (self._odd.add if adding else self._odd.discard)(key)
            return
        for label in labels:
            if adding:
                self._keys.setdefault(label, set()).add(key)
            else:
                holders = self._keys.get(label)
                if holders is not None:
                    holders.discard(key)
                    if not holders:
                        del self._keys[label]
