"""Prometheus' rules for metric name prefixes and label names, checked with a readable reason. Apart from the
exposition (which loads prometheus_client) so that a command line can check a flag without loading the client."""

from __future__ import annotations

import re

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def check_namespace(namespace: str) -> None:
    """A metrics namespace ("" for none) that makes valid metric names, else ValueError."""
    if namespace and not _METRIC_NAME.fullmatch(namespace):
        raise ValueError(f"{namespace!r} is not a metric name prefix (letters, digits, _ and :, not first a digit)")


def check_label_name(name: str) -> None:
    """A valid Prometheus label name that is not reserved (`__`), else ValueError."""
    if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
        raise ValueError(f"{name!r} is not a label name (letters, digits and _, not first a digit, not __ first)")
