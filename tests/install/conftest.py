"""Shared fixtures: the install sets are built once per session (building one loads the scheduler config).

`default_set` is what `kai manifests` prints with no option: the operator install (operator.enabled, KAI's install).
`static_set` is `kai manifests --static` (operator.enabled=false): the components rendered from the values, no
operator. `each_set` runs a test over both, as ("default" | "static", objects)."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler import install

JSON = dict[str, Any]


def static_values() -> dict[str, Any]:
    """The defaults with the static install chosen (`kai manifests --static`)."""
    return install.resolve(sets=["operator.enabled=false"])


@pytest.fixture(scope="session")
def default_set() -> list[JSON]:
    return install.manifests(install.defaults())


@pytest.fixture(scope="session")
def static_set() -> list[JSON]:
    return install.manifests(static_values())


@pytest.fixture(params=["default", "static"])
def each_set(request: pytest.FixtureRequest, default_set: list[JSON], static_set: list[JSON]) -> tuple[str, list[JSON]]:
    return request.param, default_set if request.param == "default" else static_set


def of_kind(objects: list[JSON], kind: str) -> list[JSON]:
    return [o for o in objects if o["kind"] == kind]


def by_name(objects: list[JSON], kind: str, name: str) -> JSON:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]
