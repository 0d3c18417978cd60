"""constraints.txt, the image's dependency pins (Dockerfile, `make constraints`), covers what pyproject asks."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version and not any(c in version for c in " ;<>=!~"), f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


@pytest.mark.parametrize("requirement", _runtime_requirements(), ids=str)
def test_every_runtime_dependency_is_pinned_within_its_range(requirement: Requirement) -> None:
    version = _pins().get(canonicalize_name(requirement.name))
    assert version is not None, f"{requirement.name} is not in constraints.txt: run `make constraints`"
    assert requirement.specifier.contains(version, prereleases=True), (
        f"constraints.txt pins {requirement.name}=={version}, outside {requirement.specifier}: run `make constraints`"
    )


def test_the_pins_hold_what_each_pinned_release_requires() -> None:
    """Checked for the pinned releases installed here at the pinned version (the metadata at hand)."""
    pins, missing = _pins(), []
    for name, version in pins.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        for text in dist.requires or []:
            need = Requirement(text)
            applies = need.marker is None or need.marker.evaluate({"extra": ""})
            if applies and canonicalize_name(need.name) not in pins:
                missing.append(f"{name} needs {need.name}")
    assert not missing, f"not pinned: {missing}; run `make constraints`"
