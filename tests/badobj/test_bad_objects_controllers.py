"""The status controllers with one object changed in one field among good ones: the PodGroup status controller
(pods, BindRequests, PodGroups, priority classes in) and the Queue status controller (Queues and PodGroup
statuses in) never raise, and the PodGroups the change does not touch get the status they get without it.

PodGroup `status` and Queue `spec` are written by other clients through loosely typed CRDs, so any value may be
there; pods are a core kind and are changed only within their JSON types."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kai_scheduler.api import constants, priorityclass
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import QueueStatusController
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.badobj import cluster
from tests.badobj import mutations as m

JSON = dict[str, Any]


def _objects() -> list[JSON]:
    out = [o for o in cluster.cluster() if o["kind"] not in ("PriorityClass", "Topology")]
    for obj in out:  # a status as the controller wrote it earlier, which a client may have changed since
        if obj["kind"] == "PodGroup":
            allocated = {"cpu": "1", "memory": "1Gi", constants.RESOURCE_GPU: "1"}
            obj["status"] = {
                "resourcesStatus": {"allocated": allocated, "requested": allocated, "allocatedNonPreemptible": {}}
            }
    return out


OBJECTS = _objects()
MUTATIONS = [m.server_mutations(o) for o in OBJECTS]


def run(objects: list[JSON]) -> tuple[dict[str, JSON], dict[str, JSON]]:
    """Both controllers, twice: the PodGroups' resourcesStatus and the Queues' status, by name."""
    store = MemoryStore(ManualClock(b.NOW))
    store.add_many([*(pc.to_dict() for pc in priorityclass.shipped()), *objects])
    groups, queues = PodGroupStatusController(store), QueueStatusController(store, CollectorRegistry())
    for _ in range(2):
        groups.reconcile()
        queues.reconcile()
    pg_status = {
        pg["metadata"]["name"]: (pg.get("status") or {}).get("resourcesStatus") for pg in store.list("podgroups")[0]
    }
    return pg_status, {q["metadata"]["name"]: q.get("status") for q in store.list("queues")[0]}


@functools.cache
def _good() -> dict[str, JSON]:
    return run(OBJECTS)[0]


def _touched(obj: JSON) -> set[str]:
    """The PodGroups whose status a change of `obj` may change: its own, or its pod's or BindRequest's."""
    meta = obj["metadata"]
    if obj["kind"] == "PodGroup":
        return {meta["name"]}
    if obj["kind"] in ("Pod", "BindRequest"):
        pod = meta["name"] if obj["kind"] == "Pod" else obj["spec"]["podName"]
        owner = next(o for o in OBJECTS if o["kind"] == "Pod" and o["metadata"]["name"] == pod)
        return {owner["metadata"]["annotations"][constants.ANNOTATION_POD_GROUP_NAME]}
    return set(_good()) if obj["kind"] == "Node" else set()


def check(index: int, mutation: m.Mutation) -> None:
    obj = OBJECTS[index]
    groups, _ = run([*OBJECTS[:index], m.apply(obj, mutation), *OBJECTS[index + 1 :]])
    touched = _touched(obj)
    assert {k: v for k, v in groups.items() if k not in touched} == {
        k: v for k, v in _good().items() if k not in touched
    }, f"{mutation}: another PodGroup's status changed"


CHANGES = st.integers(0, len(OBJECTS) - 1).flatmap(lambda i: st.tuples(st.just(i), st.sampled_from(MUTATIONS[i])))


@settings(max_examples=80, deadline=None)
@given(CHANGES)
def test_one_bad_object_never_stops_the_status_controllers(change: tuple[int, m.Mutation]) -> None:
    check(*change)


def test_the_good_podgroups_get_their_status() -> None:
    groups, queues = run(OBJECTS)
    assert groups["gang"] is not None and queues["dept"] is not None
