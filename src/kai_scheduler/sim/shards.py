"""Scheduler shards side by side over one store, as in a cluster (docs/shards.md): a scenario's `shards:`.

Each shard is a real Scheduler with its own `partition-label-value`, cache and carried snapshot, over the same
store; a cycle runs them one after the other. What they decided together is one CycleResult: their
operations, reasons, queue shares (a queue and a job belong to one pool each) and problems, over a snapshot of
every pool taken after them (`kai schedule`'s report and the simulator's metrics read the whole cluster).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kai_scheduler.api.clock import Clock
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.statement import Op
from kai_scheduler.scenario.model import Shard
from kai_scheduler.scheduler import config_file
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import Scheduler, usage_source
from kai_scheduler.store.interface import ClusterStore


def shard_configs(shards: Sequence[Shard], base: config_file.ConfigSource) -> list[tuple[str, SchedulerConfig]]:
    """Each shard's name and configuration: its own `config:` (else `base`: the scenario's, --config's or a
    --compare file's), serving its pool (`partitionLabelValue` wins over a flag in that configuration)."""
    out = []
    for shard in shards:
        source = (
            base if shard.config is None else config_file.ConfigSource(shard.config, base.source, shard.config_lines)
        )
        config = config_file.load(source)
        flags = dataclasses.replace(config.flags, partition_label_value=shard.partition_label_value)
        out.append((shard.name, dataclasses.replace(config, flags=flags)))
    return out


class Shards:
    """The shards' schedulers, and `view`: a reader of every pool (whole-cluster cache) that never schedules."""

    def __init__(
        self, store: ClusterStore, shards: Sequence[tuple[str, SchedulerConfig]], view: Scheduler, clock: Clock
    ) -> None:
        self.schedulers = [
            (name, Scheduler(store, config, clock, usage_source(config, clock, offline=True)))
            for name, config in shards
        ]
        self.view = view
        self.placed_by: dict[str, str] = {}  # pod key → the shard that last placed it

    def run_once(self) -> CycleResult:
        parts = []
        for name, scheduler in self.schedulers:
            part = scheduler.run_once()
            for op in part.operations:
                if op.op in (Op.ALLOCATE, Op.PIPELINE):
                    self.placed_by[op.task.key] = name
            parts.append(part)
        merged = CycleResult(
            now=parts[0].now,
            held=self.view.snapshot(all_pools=True),
            operations=[op for p in parts for op in p.operations],
            fit_errors={uid: reasons for p in parts for uid, reasons in p.fit_errors.items()},
            queue_shares={q: share for p in parts for q, share in p.queue_shares.items()},
            problems=[problem for p in parts for problem in p.problems],
            seconds=sum(p.seconds for p in parts),
            write_errors=[e for p in parts for e in p.write_errors],
            open_session_seconds=sum(p.open_session_seconds for p in parts),
            close_session_seconds=sum(p.close_session_seconds for p in parts),
        )
        for part in parts:
            merged.search.add(part.search)
            for action, seconds in part.action_seconds.items():
                merged.action_seconds[action] = merged.action_seconds.get(action, 0.0) + seconds
        return merged
