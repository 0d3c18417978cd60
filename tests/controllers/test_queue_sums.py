"""The Queue status controller keeps each queue's sums of its PodGroups' figures as they change, and writes what
summing them afresh (in the PodGroups' key order, as it did) gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.controllers import amounts
from kai_scheduler.controllers.amounts import Amounts, RunningTotal
from kai_scheduler.controllers.queue_status import FIELDS, QueueStatusController
from kai_scheduler.store.interface import JSON
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, podgroup, queue

RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "example.com/fpga")

figures = st.one_of(
    st.integers(-(2**60), 2**60).map(float),
    st.integers(0, 64).map(lambda n: n / 4),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e20, max_value=1e20),
    st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.7, 2.0**53, 2.0**53 + 2, -(2.0**53)]),
)
parts = st.dictionaries(st.sampled_from(RESOURCES), figures, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), parts, st.integers(0, 20)), max_size=40))
def test_a_running_total_is_the_sum_afresh_or_none(steps: list[tuple[bool, Amounts, int]]) -> None:
    running = RunningTotal()
    present: list[Amounts] = []
    for add, part, pick in steps:
        if add or not present:
            running.add(part)
            present.append(part)
        else:
            running.add(present.pop(pick % len(present)), -1)
        kept = running.value()
        if kept is not None:
            for order in (present, present[::-1]):
                summed = amounts.total(order)
                assert kept == summed
                assert kept.keys() == summed.keys()
                assert all(str(kept[k]) == str(summed[k]) for k in kept)  # -0.0 is not 0.0 here


def test_a_running_total_declines_what_float_sums_round() -> None:
    running = RunningTotal()
    running.add({"nvidia.com/gpu": 0.1})
    running.add({"nvidia.com/gpu": 0.2})
    assert running.value() is None  # 0.1 + 0.2 and 0.2 + 0.1 are not the same float
    running.add({"nvidia.com/gpu": 0.1}, -1)
    running.add({"nvidia.com/gpu": 0.2}, -1)
    running.add({"memory": 2.0**53})
    assert running.value() == {"memory": 2.0**53}
    running.add({"memory": 1.0})
    assert running.value() is None  # past 2**53 a float sum rounds
    running.add({"memory": 1.0}, -1)
    running.add({"memory": 2.0**53}, -1)
    assert running.value() == {}
    assert not running


def test_resource_lists_are_read_and_written_by_value_and_type() -> None:
    # 1, 1.0 and True are equal (and hash alike): a memo keyed on them alone would read one as the other.
    assert amounts.from_resource_list({"cpu": True}) == {}
    assert amounts.from_resource_list({"cpu": 1}) == {"cpu": 1000.0}
    assert amounts.from_resource_list({"cpu": "1"}) == {"cpu": 1000.0}
    assert amounts.from_resource_list({"cpu": True}) == {}
    assert amounts.from_resource_list({"cpu": [1]}) == {}
    assert amounts.to_resource_list({"cpu": -0.0, "memory": 0.0}) == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}
    assert amounts.to_resource_list({"nvidia.com/gpu": 1, "x": 2}) == {
        "cpu": "0",
        "memory": "0",
        "nvidia.com/gpu": "1",
        "x": "2",
    }
    listed = amounts.to_resource_list({"nvidia.com/gpu": 1.5})
    listed["cpu"] = "changed"
    assert amounts.to_resource_list({"nvidia.com/gpu": 1.5})["cpu"] == "0"  # each caller has its own copy


QUANTITIES = {
    "cpu": ["0", "100m", "1", "2500m", "1e3"],
    "memory": ["0", "1Gi", "64Gi", "9Ei", "1e18", "3"],
    "nvidia.com/gpu": ["0", "1", "0.5", "0.1", "0.2", "0.7", "8"],
}
resource_lists = st.fixed_dictionaries({name: st.sampled_from(values) for name, values in QUANTITIES.items()})
statuses = st.one_of(st.none(), st.fixed_dictionaries({field: resource_lists for field in FIELDS}))
QUEUES = ("org", "team-a", "team-b", "solo")
GROUPS = [f"g{i}" for i in range(6)]
steps = st.lists(
    st.tuples(
        st.sampled_from(["status", "move", "delete", "annotate", "reconcile"]),
        st.sampled_from(GROUPS),
        st.sampled_from(QUEUES),
        statuses,
    ),
    max_size=30,
)


def expected(store: MemoryStore) -> dict[str, JSON]:
    """Every queue's status as summing its PodGroups afresh gives: each queue's own in the PodGroups' key order,
    then its children's totals in their name order."""
    groups, _ = store.list("podgroups")
    own: dict[str, tuple[Amounts, ...]] = {}
    for name in QUEUES:
        members = sorted(
            (f"{g['metadata']['namespace']}/{g['metadata']['name']}", g) for g in groups if g["spec"]["queue"] == name
        )
        own[name] = tuple(
            amounts.total(
                amounts._parse(((g.get("status") or {}).get("resourcesStatus") or {}).get(f, {}).items())
                for _, g in members
            )
            for f in FIELDS
        )
    children = {"org": ["team-a", "team-b"]}

    def total(name: str) -> tuple[Amounts, ...]:
        out = tuple(dict(figures) for figures in own[name])
        for child in children.get(name, []):
            for mine, theirs in zip(out, total(child), strict=True):
                amounts.add(mine, theirs)
        return out

    return {name: {f: amounts.to_resource_list(t) for f, t in zip(FIELDS, total(name), strict=True)} for name in QUEUES}


def written(store: MemoryStore) -> dict[str, JSON]:
    return {name: {f: (store.get("queues", name).get("status") or {}).get(f) for f in FIELDS} for name in QUEUES}


def _apply(store: MemoryStore, action: str, group: str, queue_name: str, status: JSON | None) -> None:
    try:
        current = store.get("podgroups", group, NAMESPACE)
    except Exception:
        current = None
    if current is None:
        if action != "delete":
            made = podgroup(group, queue=queue_name)
            if status is not None:
                made["status"] = {"resourcesStatus": status}
            store.create(made)
        return
    if action == "status":
        body: Any = {"resourcesStatus": status}
        store.patch("podgroups", group, NAMESPACE, {"status": body}, "status")
    elif action == "move":
        store.patch("podgroups", group, NAMESPACE, {"spec": {"queue": queue_name}})
    elif action == "delete":
        store.delete("podgroups", group, NAMESPACE)
    elif action == "annotate":
        store.patch("podgroups", group, NAMESPACE, {"metadata": {"annotations": {"touched": queue_name}}})


@settings(max_examples=150, deadline=None)
@given(steps)
def test_queue_status_is_what_summing_afresh_gives(actions: list[tuple[str, str, str, JSON | None]]) -> None:
    store = MemoryStore(ManualClock(NOW))
    store.add_many([queue("org"), queue("team-a", parent="org"), queue("team-b", parent="org"), queue("solo")])
    ctl = QueueStatusController(store)
    ctl.reconcile()
    for action, group, queue_name, status in actions:
        if action == "reconcile":
            ctl.reconcile()
            assert written(store) == expected(store)
        else:
            _apply(store, action, group, queue_name, status)
    ctl.reconcile()
    assert written(store) == expected(store)


def _whole(gpus: str) -> JSON:
    listed = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus}
    return {"resourcesStatus": {"allocated": listed, "allocatedNonPreemptible": listed, "requested": listed}}


def test_a_pass_reads_and_sums_only_the_podgroups_that_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(ManualClock(NOW))
    groups = [podgroup(f"g{i}", queue="q") | {"status": _whole("1")} for i in range(50)]
    store.add_many([queue("q"), *groups])
    ctl = QueueStatusController(store)
    ctl.reconcile()
    read: list[Any] = []
    parse = amounts.from_resource_list
    monkeypatch.setattr(amounts, "from_resource_list", lambda raw: read.append(raw) or parse(raw))

    def total(parts: Any) -> Amounts:
        raise AssertionError("summed afresh")

    monkeypatch.setattr(amounts, "total", total)
    store.patch("podgroups", "g7", NAMESPACE, {"metadata": {"annotations": {"kai.scheduler/last-start": "now"}}})
    ctl.reconcile()
    assert read == []  # its figures did not change: not read again
    store.patch("podgroups", "g7", NAMESPACE, {"status": _whole("3")}, "status")
    assert ctl.reconcile() == ["q"]
    assert len(read) == len(FIELDS)  # the one PodGroup's figures
    assert store.get("queues", "q")["status"]["allocated"] == {"cpu": "50", "memory": "50Gi", "nvidia.com/gpu": "52"}
