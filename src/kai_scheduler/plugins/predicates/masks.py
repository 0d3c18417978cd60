"""Masks the predicates cache for a session and share between tasks: read-only, so a stray write fails."""

from __future__ import annotations

from kai_scheduler.framework.points import Mask


def none_if_all(mask: Mask) -> Mask | None:
    return None if mask.all() else frozen(mask)


def frozen(mask: Mask) -> Mask:
    """Cached masks are shared by many tasks: make any accidental write fail loudly."""
    mask.flags.writeable = False
    return mask
