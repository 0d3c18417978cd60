"""The one boolean reader for flags and config values: the spellings Go's `strconv.ParseBool` accepts, as KAI's
flags and config files are read by Go."""

from __future__ import annotations

_WORDS = {
    **dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
    **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False),
}


def parse_bool(text: str) -> bool | None:
    """True or False for a spelling Go accepts; None for anything else (the caller names the flag or field)."""
    return _WORDS.get(text)
