"""`build`, the entry point: what every build does first (the pods' and nodes' DRA device counts, the pool's
objects), then a build from nothing (`full`), or with a `Memo` from earlier builds the incremental one
(`incremental`); both give the same snapshot."""

from __future__ import annotations

import dataclasses

from kai_scheduler.cluster.dra import DraDerived, with_device_counts
from kai_scheduler.cluster.snapshot.full import build_full
from kai_scheduler.cluster.snapshot.incremental import build_incremental
from kai_scheduler.cluster.snapshot.inputs import ClusterObjects, SnapshotParams
from kai_scheduler.cluster.snapshot.memo import Memo
from kai_scheduler.cluster.snapshot.model import Snapshot
from kai_scheduler.cluster.snapshot.pools import pool_objects


def build(objects: ClusterObjects, params: SnapshotParams, memo: Memo | None = None) -> Snapshot:
    """Build the cycle's snapshot; every problem with an object is collected, never raised. With a `memo`
    from earlier builds, the records of what did not change are kept (`incremental`); the result is the same as
    without."""
    dra_memo = memo.dra if memo is not None else DraDerived()
    nodes, pods = with_device_counts(objects.nodes, objects.pods, objects.dra, dra_memo)
    if nodes is not objects.nodes or pods is not objects.pods:
        # Pods with their claims' GPUs change when a claim does: the feed's pod keys no longer tell what changed.
        marks = {r: m for r, m in objects.marks.items() if r != "pods" or pods is objects.pods}
        objects = dataclasses.replace(objects, nodes=nodes, pods=pods, marks=marks)
    objects = pool_objects(objects, params)
    snap = build_full(objects, params) if memo is None else build_incremental(objects, params, memo)
    snap.dra_objects, snap.dra_memo = objects.dra, dra_memo
    snap.namespace_objects = objects.namespaces
    return snap
