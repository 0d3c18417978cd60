"""One bad object among good ones in a whole scheduler cycle (cache → snapshot → session → actions → commit over
an in-memory store): the cycle never raises; an object the cache refuses is left out exactly as if it were not
there (the good ones are placed as without it) and carries a `Warning InvalidObject` event whose message is one
line naming the object and the field.

The hypothesis test changes one field of one object of `cluster.cluster()` per example (`mutations.py`); the
table below keeps each crash it found as its own case.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import PARSERS, ObjectError
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.kinds import KIND_TO_PLURAL
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.interface import NotFound
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.badobj import cluster
from tests.badobj import mutations as m

JSON = dict[str, Any]
GOOD = cluster.cluster()
CONFIG = load_config(None)


@dataclass(frozen=True)
class Outcome:
    operations: tuple[tuple[str, str, str], ...]  # (operation, pod, node) of two cycles
    events: tuple[tuple[str, str, str, str, str], ...]  # (type, reason, kind, name, message)
    store: MemoryStore


def run(objects: list[JSON]) -> Outcome:
    """Two scheduler cycles, a second apart, over `objects`."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(objects)
    scheduler = Scheduler(store, CONFIG, clock)
    results = [scheduler.run_once()]
    clock.advance(1)
    results.append(scheduler.run_once())
    events = tuple(
        (e["type"], e["reason"], e["involvedObject"]["kind"], e["involvedObject"]["name"], e["message"])
        for e in store.list("events")[0]
    )
    operations = tuple((o.op.name, o.task.name, o.after.node) for r in results for o in r.operations)
    return Outcome(operations, events, store)


@functools.cache
def without(index: int) -> Outcome:
    return run(GOOD[:index] + GOOD[index + 1 :])


def check(index: int, mutation: m.Mutation) -> None:
    obj = GOOD[index]
    bad = m.apply(obj, mutation)
    outcome = run([*GOOD[:index], bad, *GOOD[index + 1 :]])  # raises nothing
    meta = obj["metadata"]
    # As the store holds it: the server sets some fields (creationTimestamp, uid) itself.
    try:
        stored = outcome.store.get(KIND_TO_PLURAL[obj["kind"]], meta["name"], meta.get("namespace", ""))
    except NotFound:  # taken as it is and deleted by the scheduler (a BindRequest naming no node is stale)
        return
    try:
        PARSERS[obj["kind"]](stored)
    except ObjectError as err:
        refused: ObjectError | None = err
    else:
        refused = None
    if refused is None:
        return  # a value the scheduler accepts (or takes its default for, with a warning): it decides anew
    name = meta["name"]
    assert outcome.operations == without(index).operations, f"{mutation}: the good objects were placed otherwise"
    warnings = [e for e in outcome.events if e[1:4] == ("InvalidObject", obj["kind"], name)]
    assert [e[4] for e in warnings] == [str(refused)], f"{mutation}: one InvalidObject event with the parse error"
    assert refused.field and refused.field in warnings[0][4]


CHANGES = st.integers(0, len(GOOD) - 1).flatmap(lambda i: st.tuples(st.just(i), st.sampled_from(m.mutations(GOOD[i]))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHANGES)
def test_one_bad_object_never_stops_the_cycle_nor_moves_the_good_ones(change: tuple[int, m.Mutation]) -> None:
    logging.disable(logging.WARNING)  # each refused object logs a warning: thousands of lines otherwise
    try:
        check(*change)
    finally:
        logging.disable(logging.NOTSET)


def test_the_good_cluster_places_every_kind_of_request() -> None:
    """The fuzzed cluster is worth fuzzing: a gang, a fraction, a gpu-memory share, a subgroup tree, MIG."""
    placed = {pod for _, pod, _ in run(GOOD).operations}
    assert placed == {"gang-0", "gang-1", "frac", "mem", "tree-lead", "tree-work", "migjob"}


def _index(kind: str, name: str) -> int:
    return next(i for i, o in enumerate(GOOD) if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.mark.parametrize(
    "kind, name, path, value",
    [
        pytest.param(
            "Node",
            "mig-0",
            ("status", "allocatable", cluster.MIG),
            "2Gi",
            id="a node with 2Gi MIG instances of a profile (was MemoryError: a slot per instance)",
        ),
        pytest.param(
            "Node",
            "gpu-0",
            ("metadata", "labels", "nvidia.com/gpu.memory"),
            "-Inf",
            id="a gpu.memory label of -Inf (was OverflowError in every cycle)",
        ),
        pytest.param(
            "Node",
            "gpu-0",
            ("status", "allocatable", "nvidia.com/gpu"),
            "1e400",
            id="a GPU count of 1e400 (was OverflowError placing a fraction)",
        ),
    ],
)
def test_a_bad_field_found_by_fuzzing_leaves_the_cycle_going(
    kind: str, name: str, path: tuple[str, ...], value: str
) -> None:
    check(_index(kind, name), m.Mutation(path, value))


def test_a_pod_on_a_refused_node_is_told_the_nodes_error() -> None:
    """Found on a real cluster: a node refused for a bad field left the pods running on it told that the node
    'is not in this node pool', with no word of the node's error."""
    index = _index("Node", "gpu-1")
    bad = m.apply(GOOD[index], m.Mutation(("status", "allocatable", "cpu"), "lots"))
    outcome = run([*GOOD[:index], bad, *GOOD[index + 1 :]])
    [told] = [e[4] for e in outcome.events if e[1:4] == ("NodeDoesNotExist", "Pod", "run")]
    assert told == (
        "pod is on node 'gpu-1', which the scheduler refused: "
        "Node gpu-1 status.allocatable.cpu: invalid quantity 'lots'"
    )


def test_a_pod_on_a_node_that_is_not_there_is_told_so() -> None:
    index = _index("Node", "gpu-1")
    outcome = run([*GOOD[:index], *GOOD[index + 1 :]])
    [told] = [e[4] for e in outcome.events if e[1:4] == ("NodeDoesNotExist", "Pod", "run")]
    assert told == "pod is on node 'gpu-1', which does not exist or is not in this node pool"


def test_a_job_in_a_refused_queue_is_told_the_queues_error() -> None:
    """Found writing the docs: a job whose queue was refused for a bad field was told the queue 'does not exist'."""
    index = _index("Queue", "other")
    bad = m.apply(GOOD[index], m.Mutation(("spec", "priority"), "abc"))
    outcome = run([*GOOD[:index], bad, *GOOD[index + 1 :]])
    podgroup = outcome.store.get("podgroups", "tree", b.NAMESPACE)
    [condition] = podgroup["status"]["schedulingConditions"]
    assert condition["reasons"] == [
        {
            "reason": "QueueDoesNotExist",
            "message": "queue 'other' is invalid: Queue other spec.priority: expected an integer, got 'abc'",
        }
    ]
