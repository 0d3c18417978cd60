"""The snapshot: the cluster as one cycle sees it, built from typed objects (KAI `cache/cluster_info`).

The entry point is `build` (`builder`); the names below are the package's public API. How to read it:

- `inputs`: what a build takes (`ClusterObjects`, `SnapshotParams`) and `Problem`;
- `model`: the `Snapshot` a build gives; `changes`: its change log (`ChangeLog`, the only way its records change)
  and `TaskLog` (the task records builds replaced);
- `pools`, `queues`, `pods`, `jobs`: what the node pool, the queues, each pod and each PodGroup yield;
- `full`: a build from nothing, every record new;
- `memo`, `carried`, `incremental`, `entries`, `bind_requests`, `derive`, `sorted_keys`: the incremental
  build, which carries its model (`carried.CarriedModel`) in the `Memo` from one build to the next and
  changes in it only what the objects changed.
"""

from kai_scheduler.cluster.snapshot.builder import build
from kai_scheduler.cluster.snapshot.changes import ChangeLog, TaskLog
from kai_scheduler.cluster.snapshot.inputs import FED_RESOURCES, ClusterObjects, Problem, SnapshotParams
from kai_scheduler.cluster.snapshot.memo import Memo
from kai_scheduler.cluster.snapshot.model import Snapshot

__all__ = [
    "FED_RESOURCES",
    "ChangeLog",
    "ClusterObjects",
    "Memo",
    "Problem",
    "Snapshot",
    "SnapshotParams",
    "TaskLog",
    "build",
]
