"""`Memo`: what earlier builds made, carried to the next (the scheduler holds one); an empty one builds in full."""

from __future__ import annotations

from dataclasses import dataclass, field

from kai_scheduler.cluster.dra import DraDerived
from kai_scheduler.cluster.snapshot.carried import CarriedModel
from kai_scheduler.cluster.snapshot.pools import PoolNodes
from kai_scheduler.cluster.snapshot.queues import QueueTree


@dataclass(slots=True, eq=False)
class Memo:
    """What earlier builds made, kept for the next: the pool's nodes and their ledgers, the carried model
    (`incremental`), the DRA derivations, the queue tree, and what plugins carry (`Snapshot.plugin_memo`)."""

    pool_nodes: PoolNodes | None = None
    carried: CarriedModel | None = None
    dra: DraDerived = field(default_factory=DraDerived)
    plugins: dict[str, object] = field(default_factory=dict)
    queue_tree: QueueTree | None = None
