"""Topology validating webhook (`/validate-kai-scheduler-v1alpha1-topology`), BEHAVIOR.md §1.4.

Create and update: the Topology must parse with the scheduler's parser (1 to 16 levels, each with a node label;
node labels unique; an alias unique and not a node label; `kubernetes.io/hostname` only as the last level).
An alias may also not repeat a node label of a later level. On update the list of node labels is immutable
(aliases may change).
"""

from __future__ import annotations

from typing import Any

from kai_scheduler.admission.review import Review, Verdict, allow, deny, written
from kai_scheduler.api import Topology


def validate(review: Review) -> Verdict:
    topology = written(review, Topology.from_dict)
    if isinstance(topology, Verdict):
        return topology
    where = f"Topology {topology.meta.name}"
    labels = [lv.node_label for lv in topology.levels]
    for i, lv in enumerate(topology.levels):
        if lv.alias and lv.alias in labels:
            return deny(f"{where} spec.levels[{i}].alias: alias {lv.alias!r} is the node label of another level")
    if review.operation == "UPDATE" and review.old_object is not None:
        old_labels = _node_labels(review.old_object)
        if old_labels is not None and old_labels != labels:
            return deny(
                f"{where} spec.levels: the node labels of a Topology cannot change (were "
                f"{', '.join(old_labels)}); create a new Topology instead"
            )
    return allow()


def _node_labels(obj: dict[str, Any]) -> list[str] | None:
    """The node labels of the stored Topology, or None when it cannot be read (then nothing is compared)."""
    levels = (obj.get("spec") or {}).get("levels")
    if not isinstance(levels, list):
        return None
    return [str(lv.get("nodeLabel")) for lv in levels if isinstance(lv, dict)]
