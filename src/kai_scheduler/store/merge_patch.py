"""JSON merge patch (RFC 7386) and the strategic merge patch the API server applies to the kinds it knows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kai_scheduler.store.interface import STRATEGIC_MERGE_KEYS

NO_LIST_KEYS: Final[Mapping[str, str]] = {}  # RFC 7386: every list is replaced whole


def merge_patch(target: Any, patch: Any, list_keys: Mapping[str, str] = NO_LIST_KEYS, field: str = "") -> Any:
    """Apply an RFC 7386 JSON merge patch; null deletes a key, a non-object replaces.

    With `list_keys` (field name → merge key), a list under one of those field names merges item by item on
    its key instead (a patch item replaces the fields it names of the item with the same key, or is appended):
    a strategic merge patch. Returns a new value and never mutates `target`: untouched subtrees are shared."""
    key = list_keys.get(field)
    if key is not None and isinstance(patch, list) and isinstance(target, list):
        merged = list(target)
        where = {item.get(key): i for i, item in enumerate(merged) if isinstance(item, dict)}
        for item in patch:
            i = where.get(item.get(key)) if isinstance(item, dict) else None
            if i is None:
                merged.append(item)
            else:
                merged[i] = merge_patch(merged[i], item, list_keys)
        return merged
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value, list_keys, name)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A merge patch where the lists of `STRATEGIC_MERGE_KEYS` merge item by item on their key; other lists
    are replaced."""
    return merge_patch(target, patch, STRATEGIC_MERGE_KEYS)
