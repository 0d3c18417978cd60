"""Placeholder: replaced by the module that implements this command."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    del sub


def _unused(_: argparse.Namespace) -> int:
    return 0
