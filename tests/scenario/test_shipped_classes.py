"""The PriorityClasses a file is read with offline are the ones `kai manifests` installs (§2): same names, values,
preemption policy and descriptions, so that a pod naming `build` gets one answer offline and in the cluster."""

from __future__ import annotations

from typing import Any

from kai_scheduler import install
from kai_scheduler.scenario import loads

JSON = dict[str, Any]
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"
SCENARIO = "nodes: [{name: n}]\nqueues: [{name: q}]\n"


def _without_metadata(objects: list[JSON]) -> list[JSON]:
    """The PriorityClasses, by name, with metadata reduced to the name (the install labels them, the loader
    gives uids)."""
    classes = [o for o in objects if o["kind"] == "PriorityClass"]
    return sorted(({**o, "metadata": {"name": o["metadata"]["name"]}} for o in classes), key=lambda o: o["value"])


def test_the_offline_classes_are_the_installed_ones() -> None:
    installed = _without_metadata(install.manifests(install.resolve(), skip_crds=True))
    assert [(o["metadata"]["name"], o["value"]) for o in installed] == [
        ("train", 50),
        ("build-preemptible", 75),
        ("build", 100),
        ("inference", 125),
    ]
    assert _without_metadata(loads(POD, "pods.yaml").objects) == installed
    assert _without_metadata(loads(SCENARIO, "scenario.yaml").objects) == installed
