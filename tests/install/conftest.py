"""Shared fixtures: the default install set is built once per session (building it loads the scheduler config)."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler import install

JSON = dict[str, Any]


@pytest.fixture(scope="session")
def default_set() -> list[JSON]:
    return install.manifests(install.defaults())


def of_kind(objects: list[JSON], kind: str) -> list[JSON]:
    return [o for o in objects if o["kind"] == kind]


def by_name(objects: list[JSON], kind: str, name: str) -> JSON:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]
