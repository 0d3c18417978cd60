"""Reclaim on examples/hierarchical-org.yaml (seed 1, first 40 minutes) does not thrash with the default flags,
which are KAI's rules (no pipelined claims, KAI's simulation order): KAI's victim simulation re-places the
victims in allocate's queue order, so it never reclaims what allocate would hand straight back; evictions per
cycle stay small, no job is evicted again and again (a ping-pong), and the protective rule
(`reclaim-protects-deserved`) evicts no less. With the old rule of this scheduler (`preemptor-placed-first`)
and without pipelined claims the same clusters ping-pong: that is what the check catches, and the claims
(`pipelined-claims`) stop it. The flat two-team case is tests/actions/test_reclaim.py (evictions per cycle
[4, 0, 0, 0, 0, 0], and [6, 0, 0, 0, 0, 0] for the gang case)."""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hierarchical-org.yaml"
UNTIL = 2400.0  # 40 minutes: every team has submitted and reclaimed by then


@functools.cache
def _evictions_per_cycle(
    *, protects_deserved: bool | None = None, claims: bool | None = None, preemptor_first: bool | None = None
) -> tuple[list[int], dict[str, list[int]]]:
    """Evictions of each cycle, and for each evicted job the cycles that evicted it; a flag given as None is
    left at its default."""
    loaded = sources.load(EXAMPLE, seed=1)
    raw = dict(loaded.config or {})
    given = {
        "reclaim-protects-deserved": protects_deserved,
        "pipelined-claims": claims,
        "preemptor-placed-first": preemptor_first,
    }
    raw["flags"] = {**dict(raw.get("flags") or {}), **{k: v for k, v in given.items() if v is not None}}
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

    run.scheduler.run_once = counted  # type: ignore[method-assign]
    run.run()
    return counts, by_job


def _thrashes(by_job: dict[str, list[int]]) -> list[str]:
    """Jobs evicted more than 3 times in the 40 minutes (each job runs 20 minutes or so: a ping-pong)."""
    return [f"{job}: cycles {cycles}" for job, cycles in by_job.items() if len(cycles) > 3]


def test_the_default_flags_are_kais_rules() -> None:
    flags = load_config(sources.load(EXAMPLE, seed=1).config).flags
    assert (flags.reclaim_protects_deserved, flags.pipelined_claims, flags.preemptor_placed_first) == (False,) * 3


def test_the_default_does_not_thrash_on_the_hierarchical_org() -> None:
    counts, by_job = _evictions_per_cycle()
    assert sum(counts) > 0  # reclaim does act in this example
    assert max(counts) <= 8, counts  # no cycle evicts more than two 4-pod gangs
    assert not _thrashes(by_job)
    protective, _ = _evictions_per_cycle(protects_deserved=True)
    assert sum(counts) <= sum(protective)


def test_with_the_preemptor_placed_first_and_without_claims_the_rule_ping_pongs() -> None:
    counts, by_job = _evictions_per_cycle(claims=False, preemptor_first=True)
    assert _thrashes(by_job)
    default, _ = _evictions_per_cycle()
    assert sum(counts) > 2 * sum(default)


def test_pipelined_claims_stop_the_ping_pong_of_the_preemptor_placed_first() -> None:
    counts, by_job = _evictions_per_cycle(claims=True, preemptor_first=True)
    assert max(counts) <= 8, counts
    assert not _thrashes(by_job)
    unclaimed, _ = _evictions_per_cycle(claims=False, preemptor_first=True)
    assert 2 * sum(counts) < sum(unclaimed)
