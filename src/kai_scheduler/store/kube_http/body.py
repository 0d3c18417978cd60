"""Request and answer bodies on the wire: JSON, not the client library's models.

Requests are encoded with orjson. Answers are decoded with msgspec, which builds the objects as it reads: orjson
first parses the whole document into a tree of its own, and for a list read whole from the API server's watch
cache (140,000 pods in one body) that tree costs about 4.7 KB a pod more at the peak and four times the CPU
(bench/README.md, "The answers decoded by msgspec")."""

from __future__ import annotations

from typing import Any, Final

import msgspec
import orjson

from kai_scheduler.store.interface import JSON, Invalid, StoreError

JSON_TYPE: Final = "application/json"
MERGE_PATCH_TYPE: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH_TYPE: Final = "application/strategic-merge-patch+json"
# Datetimes (PyYAML parses unquoted timestamps) become RFC 3339 strings, as in MemoryStore.
_DUMP_OPTIONS: Final = orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC


def encode(body: Any) -> bytes:
    try:
        return orjson.dumps(body, option=_DUMP_OPTIONS)
    except TypeError as err:  # orjson.JSONEncodeError is a TypeError
        raise Invalid(f"object is not JSON: {err}") from None


def decode(raw: bytes, what: str) -> JSON:
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise StoreError(f"{what}: the API server answered with malformed JSON: {err}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"{what}: the API server answered with {type(doc).__name__}, not an object")
    return doc
