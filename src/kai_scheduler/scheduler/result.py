"""What one scheduling cycle decided and why: the input of reports, `kai schedule` and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from kai_scheduler.cluster.snapshot import Problem, Snapshot
from kai_scheduler.framework.points import Reject
from kai_scheduler.framework.search_stats import SearchStats
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.framework.statement import Op, Operation


@dataclass(slots=True)
class CycleResult:
    now: float
    held: Snapshot | None  # the model as the session left it (`snapshot`); None once `release`d
    operations: list[Operation]
    fit_errors: dict[str, list[Reject]]  # job uid → reasons
    queue_shares: dict[str, QueueShare]
    problems: list[Problem]
    action_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    write_errors: list[str] = field(default_factory=list)
    open_session_seconds: float = 0.0
    close_session_seconds: float = 0.0
    action_ends: dict[str, int] = field(default_factory=dict)  # action → end index of its `operations`
    # "OnSessionOpen" / "OnSessionClose" → plugin → seconds it took
    plugin_seconds: dict[str, dict[str, float]] = field(default_factory=dict)
    bind_seconds: list[float] = field(default_factory=list)  # each BindRequest's writing (KAI's cache.Bind)
    usage_query_seconds: list[float] = field(default_factory=list)  # usage fetches that came in since the last cycle
    search: SearchStats = field(default_factory=SearchStats)  # the victim actions' scenario search

    @property
    def snapshot(self) -> Snapshot:
        """The model as the cycle's session left it."""
        if self.held is None:
            raise RuntimeError("this cycle's snapshot was released: only its decisions are kept")
        return self.held

    def release(self) -> None:
        """Let go of the snapshot, keeping the decisions: the carried snapshot model is then updated in place by the
        next build instead of built again beside it (a report that reads only the decisions, as `kai schedule`'s)."""
        self.held = None

    def count(self, op: Op) -> int:
        return sum(1 for o in self.operations if o.op is op)

    @property
    def binds(self) -> int:
        return self.count(Op.ALLOCATE)

    @property
    def evictions(self) -> int:
        return self.count(Op.EVICT)

    @property
    def pipelines(self) -> int:
        """Tasks pipelined, moved victims included (pipelined on their new node, as KAI counts them)."""
        return self.count(Op.PIPELINE) + self.count(Op.UNEVICT) + sum(1 for o in self.operations if o.moved)
