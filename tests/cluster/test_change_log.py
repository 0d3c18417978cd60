"""The snapshot's change log (`cluster.snapshot.changes`): every change to a record is logged before and after, a
kept model's next build undoes the log newest first, and the nodes to recompute are those its moves reached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.pod_info import Placement
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.snapshot.changes import ChangeLog, Moved, Portioned, Restamped, Shown
from tests import builders as b

S = PodStatus


def _objects() -> snapshots.ClusterObjects:
    return b.objects(
        [
            b.queue("q"),
            b.node("n1", gpu_memory=40_000),
            b.node("n2", gpu_memory=40_000),
            b.podgroup("run"),
            b.pod("run", gpus=1, node="n1"),
            b.podgroup("mem"),
            b.pod("mem", gpu_memory=10_000),
        ]
    )


def _view(snap: snapshots.Snapshot) -> dict[str, Any]:
    return {
        "tasks": {uid: (t.placement, t.memory_portion) for uid, t in snap.tasks.items()},
        "stale": {uid: j.stale_since for uid, j in snap.jobs.items()},
        "nodes": {n.name: (sorted(n.tasks), sorted(n.gpu_groups)) for n in snap.nodes},
        "ledgers": {k: v.tolist() for k, v in b.ledgers(snap).items()},
    }


def test_undo_reverts_newest_first_and_names_the_nodes_moves_reached() -> None:
    snap = b.snapshot([b.queue("q"), b.node("n1"), b.node("n2"), b.podgroup("p"), b.pod("p", gpu_memory=100)])
    task, job = b.task(snap, "p"), snap.jobs["pg-p"]
    log = ChangeLog()
    start, portion = task.placement, task.memory_portion
    log.record(Moved(task, start, Placement(S.ALLOCATED, "n1")))
    log.record(Moved(task, task.placement, Placement(S.PIPELINED, "n2")))
    log.record(Shown(task, task.placement, Placement(S.PIPELINED, "n1")))
    log.record(Portioned(task, task.memory_portion, 0.25))
    log.record(Portioned(task, task.memory_portion, 0.75))
    log.record(Restamped(job, job.stale_since, 7.0))
    assert (task.placement, task.memory_portion, job.stale_since) == (Placement(S.PIPELINED, "n1"), 0.75, 7.0)
    assert log.moved_nodes() == {"n1", "n2"} and log.moved_jobs() == {"pg-p"}
    assert log.undo() == {"n1", "n2"}
    assert (task.placement, task.memory_portion, job.stale_since) == (start, portion, None)
    assert log.changes == [] and log.moved_nodes() == set()


def _move(snap: snapshots.Snapshot) -> None:
    snap.move(b.task(snap, "mem"), Placement(S.ALLOCATED, "n2", ("g",)))
    snap.move(b.task(snap, "run"), Placement(S.RELEASING, "n1"))


def _show(snap: snapshots.Snapshot) -> None:
    snap.show(b.task(snap, "run"), Placement(S.PIPELINED, "n2"))


def _portion(snap: snapshots.Snapshot) -> None:
    snap.set_memory_portion(b.task(snap, "mem"), 0.5)  # its pod's record says 0.25 (of the smallest GPU)


def _stale(snap: snapshots.Snapshot) -> None:
    snap.set_stale_since(snap.jobs["pg-run"], b.NOW)


@pytest.mark.parametrize("change", [_move, _show, _portion, _stale], ids=["move", "show", "portion", "stale"])
def test_a_kept_model_undoes_each_logged_change(change: Callable[[snapshots.Snapshot], None]) -> None:
    """The next build reuses the records (nobody holds the snapshot) and they read as a build from nothing."""
    objects, params, memo = _objects(), snapshots.SnapshotParams(now=b.NOW), snapshots.Memo()
    snap = snapshots.build(objects, params, memo)
    fresh = _view(snap)
    records = dict(snap.tasks)
    change(snap)
    assert _view(snap) != fresh
    del snap
    again = snapshots.build(objects, params, memo)
    assert again.tasks == records and all(again.tasks[uid] is t for uid, t in records.items())
    assert _view(again) == fresh == _view(snapshots.build(objects, params))
    assert again.changes.changes == []
