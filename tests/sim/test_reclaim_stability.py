"""KAI's reclaim rule (the default) does not thrash on examples/hierarchical-org.yaml: evictions per cycle stay
small, no job is evicted again a few cycles after it came back (a ping-pong), and the protective rule
(`reclaim-protects-deserved`) evicts no less. The flat two-team case is tests/actions/test_reclaim.py
(evictions per cycle [4, 0, 0, 0, 0, 0] and the gang case)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hierarchical-org.yaml"
UNTIL = 2400.0              # 40 minutes: every team has submitted and reclaimed by then


def _evictions_per_cycle(protects_deserved: bool) -> tuple[list[int], dict[str, list[int]]]:
    """Evictions of each cycle, and for each evicted job the cycles that evicted it."""
    loaded = sources.load(EXAMPLE, seed=1)
    raw = dict(loaded.config or {})
    raw["flags"] = {**dict(raw.get("flags") or {}), "reclaim-protects-deserved": protects_deserved}
    run = replay.Replay(loaded, load_config(raw), replay.Options(until=UNTIL))
    counts: list[int] = []
    by_job: dict[str, list[int]] = defaultdict(list)
    run_once = run.scheduler.run_once

    def counted() -> CycleResult:
        result = run_once()
        evicted = [op for op in result.operations if op.op is Op.EVICT]
        for job in sorted({op.task.job_uid for op in evicted}):
            by_job[job].append(len(counts))
        counts.append(len(evicted))
        return result

    run.scheduler.run_once = counted      # type: ignore[method-assign]
    run.run()
    return counts, by_job


def test_kai_reclaim_rule_does_not_thrash_on_the_hierarchical_org() -> None:
    counts, by_job = _evictions_per_cycle(protects_deserved=False)
    assert sum(counts) > 0                                  # reclaim does act in this example
    assert max(counts) <= 8, counts                         # no cycle evicts more than two 4-pod gangs
    for job, cycles in by_job.items():
        gaps = [b - a for a, b in zip(cycles, cycles[1:], strict=False)]
        assert all(gap >= 5 for gap in gaps), f"job {job} evicted again soon after: cycles {cycles}"
    protective, _ = _evictions_per_cycle(protects_deserved=True)
    assert sum(counts) <= sum(protective)
