"""A node whose new version differs in nothing but its resourceVersion (a kubelet's status heartbeat) keeps the
scheduler's kept snapshot model: the next cycle updates it rather than building it again from nothing, and
decides the same. A change the scheduler reads (a label, readiness, a cordon, allocatable) is taken in."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cluster.snapshot import incremental
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]


def heartbeat(store: MemoryStore, name: str, when: str) -> None:
    store.patch(
        "nodes",
        name,
        "",
        {"status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": when}]}},
        "status",
    )


def cluster() -> tuple[MemoryStore, Scheduler]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q"), b.node("n1", gpus=2), b.node("n2", gpus=8)])
    return store, Scheduler(store, load_config(None), clock)


def fresh_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the kept model's builds from nothing."""
    calls: list[int] = []
    real = incremental.new_model

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(incremental, "new_model", counting)
    return calls


def test_a_heartbeat_keeps_the_model_and_the_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    store, scheduler = cluster()
    quiet_store, quiet = cluster()  # the same cluster without heartbeats decides the same
    scheduler.run_once()
    quiet.run_once()
    builds = fresh_builds(monkeypatch)
    for i in range(3):
        heartbeat(store, "n1", f"2026-01-01T00:00:0{i}Z")
        heartbeat(store, "n2", f"2026-01-01T00:00:0{i}Z")
        for s in (store, quiet_store):
            s.add_many([b.podgroup(f"j{i}", queue="q", min_member=1), b.pod(f"j{i}-0", group=f"j{i}", gpus=2)])
        placed = [(op.task.name, op.after.node) for op in scheduler.run_once().operations]
        builds_so_far = len(builds)
        assert placed == [(op.task.name, op.after.node) for op in quiet.run_once().operations]
        assert [name for name, _ in placed] == [f"j{i}-0"]
        assert builds_so_far == 0
    snap = scheduler.snapshot()
    assert {n.name for n in snap.nodes} == {"n1", "n2"}


@pytest.mark.parametrize(
    ("patch", "subresource"),
    [
        ({"metadata": {"labels": {"zone": "b"}}}, ""),
        ({"spec": {"unschedulable": True}}, ""),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "status"),
        ({"status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}, "status"),
    ],
)
def test_a_change_the_scheduler_reads_is_taken_in(patch: JSON, subresource: str) -> None:
    store, scheduler = cluster()
    scheduler.run_once()
    store.patch("nodes", "n1", "", patch, subresource)
    snap = scheduler.snapshot()
    node = snap.node_by_name["n1"].node
    assert node.meta.resource_version == store.get("nodes", "n1")["metadata"]["resourceVersion"]
