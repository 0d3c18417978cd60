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
    """The object's labels; labels that are not a mapping (a file may hold anything) match as none."""
    labels = obj["metadata"].get("labels")
    return labels if isinstance(labels, dict) else {}


_NO_KEYS: Final[frozenset[Key]] = frozenset()


class LabelIndex:
    """Per resource, label key → the objects that carry it, so a list with a selector that requires a label
    (`app=x`, `key`, `key in (…)`) looks at those objects only; objects whose labels are not a mapping are kept
    apart and always looked at. A label key listed by value (`key=value`) gets an index of its values too, made
    on that first list and kept from then on (the binder asks for one GPU group's pods among thousands that carry
    the group label). Not thread-safe: the store calls it under its lock."""

    def __init__(self) -> None:
        self._keys: dict[str, set[Key]] = {}
        self._odd: set[Key] = set()
        self._values: dict[str, dict[str, set[Key]]] = {}  # label key → value → objects (keys listed by value)

    def candidates(self, objects: dict[Key, JSON], match: LabelSelector | None) -> Iterable[tuple[Key, JSON]]:
        """The objects that may match: those carrying the rarest label (or label value) the selector requires,
        else all."""
        required = _required_label_keys(match) if match is not None else ()
        if not required:
            return objects.items()
        assert match is not None
        sets = [self._valued(label, objects).get(value, _NO_KEYS) for label, value in match.match_labels]
        sets += [self._keys.get(label, _NO_KEYS) for label in required]  # after: a tie takes a value's set
        keys = min(sets, key=len) | self._odd
        return ((key, objects[key]) for key in keys)

    def _valued(self, label: str, objects: dict[Key, JSON]) -> dict[str, set[Key]]:
        """The value index of one label key, made from the objects that carry it on first use. A value that is not
        a string matches no `key=value` selector and is left out."""
        index = self._values.get(label)
        if index is None:
            index = self._values[label] = {}
            for key in self._keys.get(label, _NO_KEYS):
                value = objects[key]["metadata"]["labels"][label]
                if isinstance(value, str):
                    index.setdefault(value, set()).add(key)
        return index

    def update(self, key: Key, obj: JSON, *, adding: bool) -> None:
        labels = obj["metadata"].get("labels")
        if not labels:
            return
        if not isinstance(labels, dict):
            (self._odd.add if adding else self._odd.discard)(key)
            return
        for label, value in labels.items():
            if adding:
                self._keys.setdefault(label, set()).add(key)
            else:
                holders = self._keys.get(label)
                if holders is not None:
                    holders.discard(key)
                    if not holders:
                        del self._keys[label]
            index = self._values.get(label)
            if index is not None and isinstance(value, str):
                if adding:
                    index.setdefault(value, set()).add(key)
                elif value in index:
                    index[value].discard(key)
                    if not index[value]:
                        del index[value]
