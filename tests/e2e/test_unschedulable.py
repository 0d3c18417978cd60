"""A pod no node can take is told why, on its PodGroup, its own condition and its own event, also when it is made
again under the same name in a PodGroup already told (a pod deleted and re-applied, a Job's replacement pod), and
when its PodGroup is deleted while it waits.

Before: the pods were told only when the PodGroup's condition changed, and events were named by the pod's name and
message alone, so the second pod got no `PodScheduled=False` condition and its event already existed (for the
first pod's uid): `kubectl describe pod` showed it nothing.
"""

from __future__ import annotations

import time
from typing import Any

from kai_scheduler.api.podgroup import fit_message
from kai_scheduler.store.interface import NotFound
from tests.e2e.harness import NAMESPACE, Cluster, pod, podgroup

JSON = dict[str, Any]
WRITTEN = (("pods", "big"), ("podgroups", "e2e-big"))


def _condition(clean: Cluster, name: str) -> JSON | None:
    obj = clean.store.get("podgroups", name, NAMESPACE)
    conditions = (obj.get("status") or {}).get("schedulingConditions") or []
    return next((c for c in conditions if c.get("type") == "UnschedulableOnNodePool"), None)


def _told(clean: Cluster, name: str, group: str) -> bool:
    """The PodGroup says why, and so do the pod's condition and an event of the pod's own uid."""
    condition = _condition(clean, group)
    if condition is None:
        return False
    message = "; ".join(r["message"] for r in condition["reasons"])
    current = clean.store.get("pods", name, NAMESPACE)
    said = [
        c
        for c in (current.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
    ]
    events, _ = clean.store.list("events", NAMESPACE)
    own = [
        e
        for e in events
        if e.get("reason") == "Unschedulable"
        and (e.get("involvedObject") or {}).get("uid") == current["metadata"]["uid"]
        and e.get("message") == message
    ]
    return bool(said) and said[0].get("message") == message and bool(own)


def test_a_pod_too_large_for_every_node_is_told_and_so_is_the_same_pod_made_again(clean: Cluster) -> None:
    clean.create(podgroup("e2e-big", min_member=1, queue="default-queue"))
    first = clean.create(pod("big", gpus=16, group="e2e-big"))
    clean.wait("the PodGroup, the pod and its event say why", lambda: _told(clean, "big", "e2e-big"), timeout=30)
    condition = _condition(clean, "e2e-big")
    assert condition is not None
    assert "the task requests 16 GPUs; the largest node has 8 GPUs" in [r["message"] for r in condition["reasons"]]
    _as_kai_writes_it(clean, condition, "e2e-big")
    # Told once: the cycles that follow (several a second while anything changes) write neither object again.
    versions = [clean.store.get(r, n, NAMESPACE)["metadata"]["resourceVersion"] for r, n in WRITTEN]
    time.sleep(3)
    assert [clean.store.get(r, n, NAMESPACE)["metadata"]["resourceVersion"] for r, n in WRITTEN] == versions

    clean.store.delete("pods", "big", NAMESPACE, grace_period_seconds=0)
    clean.wait("the first pod gone", lambda: not clean.pods("e2e=true"))
    second = clean.create(pod("big", gpus=16, group="e2e-big"))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    clean.wait("the pod made again is told too", lambda: _told(clean, "big", "e2e-big"), timeout=30)


def _as_kai_writes_it(clean: Cluster, condition: JSON, group: str) -> None:
    """The condition names the unlabelled pool `default` and carries its own reason and one-line message, and the
    PodGroup has one `Normal Unschedulable` event saying that message, as KAI's status updater writes them."""
    assert condition["nodePool"] == "default"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == fit_message([(r["reason"], r["message"]) for r in condition["reasons"]])
    uid = clean.store.get("podgroups", group, NAMESPACE)["metadata"]["uid"]

    def said() -> list[JSON]:
        events, _ = clean.store.list("events", NAMESPACE)
        return [e for e in events if (e.get("involvedObject") or {}).get("uid") == uid]

    clean.wait("the PodGroup's event", lambda: bool(said()), timeout=10)
    [event] = said()
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "Unschedulable", condition["message"])
    assert event["involvedObject"]["kind"] == "PodGroup"


def test_a_pending_pod_whose_podgroup_is_deleted_is_grouped_and_told_again(clean: Cluster) -> None:
    """The pod grouper's PodGroup of a pending pod deleted (by hand; the garbage collector does the same to a pod
    made again from a saved manifest naming the old pod's): before, nothing grouped the pod again until it
    changed, and the scheduler, which schedules PodGroups, said nothing more of it."""
    clean.create(pod("orphan", gpus=16))

    def group() -> str:
        annotations = clean.store.get("pods", "orphan", NAMESPACE)["metadata"].get("annotations") or {}
        return str(annotations.get("pod-group-name", ""))

    clean.wait("the pod grouped and told", lambda: bool(group()) and _told(clean, "orphan", group()), timeout=30)
    clean.store.delete("podgroups", group(), NAMESPACE)

    def told_again() -> bool:
        try:
            return _condition(clean, group()) is not None
        except NotFound:
            return False

    clean.wait("a PodGroup for the pod again, with the condition", told_again, timeout=30)
