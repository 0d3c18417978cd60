"""The CustomResourceDefinitions of KAI's kinds (Queue, PodGroup, BindRequest, Topology), as shipped.

The manifests are package data (`api/crds/*.yaml`, the files the Helm chart installs), so `kai` can install
them and tests can check them against the parsers in this package. Reading package data is this layer's only
file access.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

_PACKAGE = "kai_scheduler.api"
_DIRECTORY = "crds"
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster


def load_crds() -> list[dict[str, Any]]:
    """Every CRD manifest, parsed, in file-name order (stable for installs and tests)."""
    directory = resources.files(_PACKAGE).joinpath(_DIRECTORY)
    files = sorted((f for f in directory.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    return [_parse(f.name, f.read_text(encoding="utf-8")) for f in files]


def crd_for(kind: str) -> dict[str, Any]:
    """The CRD whose `spec.names.kind` is `kind`; KeyError if none is shipped."""
    for crd in load_crds():
        if crd["spec"]["names"]["kind"] == kind:
            return crd
    raise KeyError(f"no CRD for kind {kind!r}")


def _parse(name: str, text: str) -> dict[str, Any]:
    doc = yaml.load(text, Loader=_LOADER)
    if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{name}: not a CustomResourceDefinition")
    return doc
