"""What a replay measured: step-function time series while it runs, and the summary at the end.

The series are step functions: a row holds from its `time` until the next row. Cluster figures are kept
from the pods themselves (a pod counts from the moment it runs until it is gone, Releasing included); the
scheduler's own view (fair share and deserved per queue, the fragmentation reading) is taken at each cycle
and holds until the next; the replay runs a cycle on the first tick after every change of demand (an
arrival, a job's end, a pod gone), so these are the figures a scheduler cycling every period would show.
GPUs are devices; a shared pod counts its portion (devices × fraction).

- allocation ratio: allocated GPUs / GPUs of schedulable nodes; time-weighted mean over [0, end];
- idle_unusable_gpus: see `occupancy.Fragmentation`;
- fairness: Jain's index (Σx)² / (n·Σx²) over the leaf queues with a fair share > 0, x = allocated / fair
  share (1 = every queue has the same fraction of its fair share); undefined (NaN) when no queue has one;
- wait: first instant all the job's pods ran − submission; completion: finish − submission; gang wait: the
  wait of jobs whose minimum is more than one pod; makespan: the last completion (0 when none completed);
- jobs at the end: a replay that ran until nothing was due leaves pending only work nothing could make fit:
  a job that never ran is `never_scheduled`; any other job still pending or running then (one without a
  duration, one interrupted that cannot start again) is `unfinished`. A replay stopped at `--until` cannot
  tell: every job still pending or running is `unfinished` (running, or waiting), none `never_scheduled`.

Wall-clock cycle times are kept apart from the series, so two runs of one seed have identical series.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kai_scheduler.cluster import tolerance
from kai_scheduler.cluster.resources import QUEUE_NAMES
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.sim.occupancy import Fragmentation, OccupancyMap, occupancy
from kai_scheduler.sim.workload import Job, Phase

GPU_AXIS = QUEUE_NAMES.index("gpu")
CLUSTER_COLUMNS = (
    "allocated_gpus",
    "allocation_ratio",
    "idle_unusable_gpus",
    "pending_jobs",
    "running_jobs",
    "fairness",
    "total_gpus",  # capacity: changes only when nodes come and go (the autoscaler model)
)
QUEUE_COLUMNS = ("allocated", "fair_share", "deserved")
PEAK = "peak"
RUNNING, WAITING = "running", "waiting"  # an unfinished job at the end


@dataclass(slots=True)
class Series:
    """Columns of equal length; `queues[name][column]` per queue."""

    time: list[float] = field(default_factory=list)
    cluster: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CLUSTER_COLUMNS})
    queues: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "cluster": self.cluster, "queues": self.queues}

    def rows(self) -> tuple[list[str], list[list[float]]]:
        """A wide table: time, the cluster columns, then `<queue>.<column>` for every queue."""
        header = ["time", *CLUSTER_COLUMNS]
        columns = [self.time, *(self.cluster[c] for c in CLUSTER_COLUMNS)]
        for name, cols in self.queues.items():
            for c in QUEUE_COLUMNS:
                header.append(f"{name}.{c}")
                columns.append(cols[c])
        return header, [list(row) for row in zip(*columns, strict=True)]


class Recorder:
    """Fed by the replay (pods on and off, cycles, samples); reads nothing itself."""

    def __init__(self, total_gpus: float, parents: dict[str, str]) -> None:
        """`parents`: every queue → its parent ("" for a top queue); a parent's allocation is its subtree's."""
        self.total_gpus = total_gpus
        self.parents = dict(sorted(parents.items()))
        queues = list(self.parents)
        self.leaves = [q for q in queues if q not in set(parents.values())]
        self.series = Series(queues={q: {c: [] for c in QUEUE_COLUMNS} for q in queues})
        self.allocated = 0.0
        self.by_queue: dict[str, float] = dict.fromkeys(queues, 0.0)
        self.pods: dict[str, tuple[str, float]] = {}
        self.fair_share: dict[str, float] = dict.fromkeys(queues, 0.0)
        self.deserved: dict[str, float] = dict.fromkeys(queues, 0.0)
        self.idle_unusable = 0.0
        self.evictions: Counter[str] = Counter()
        self.cycle_seconds: list[float] = []
        self.action_seconds: Counter[str] = Counter()
        self.reasons: dict[str, str] = {}  # job key → the last reason it did not fit
        self.maps: list[OccupancyMap] = []
        self._peak: OccupancyMap | None = None
        self._peak_allocated = 0.0
        self._fragmentation = Fragmentation()

    # --- events ---

    def pod_on(self, key: str, queue: str, gpus: float) -> None:
        if key in self.pods:
            return
        self.pods[key] = (queue, gpus)
        self.allocated += gpus
        self.by_queue[queue] = self.by_queue.get(queue, 0.0) + gpus

    def pod_off(self, key: str) -> None:
        held = self.pods.pop(key, None)
        if held is None:
            return
        queue, gpus = held
        self.allocated -= gpus
        self.by_queue[queue] -= gpus
        if not self.pods:  # no drift from float sums: empty is exactly zero
            self.allocated = 0.0
            self.by_queue = dict.fromkeys(self.by_queue, 0.0)

    def cycle(self, now: float, result: CycleResult, *, has_pending: bool) -> None:
        """Take the scheduler's view after a cycle: shares, evictions, fit reasons, fragmentation, maps."""
        for name, share in result.queue_shares.items():
            self.fair_share[name] = float(share.fair_share[GPU_AXIS])
            self.deserved[name] = float(share.deserved[GPU_AXIS])
        for op in result.operations:
            if op.op is Op.EVICT:
                self.evictions[op.eviction.action if op.eviction else "unknown"] += 1
        for uid, rejects in result.fit_errors.items():
            job = result.snapshot.jobs.get(uid)
            if job is not None and rejects:
                self.reasons[job.key] = rejects[0].message
        self.cycle_seconds.append(result.seconds)
        self.action_seconds.update(result.action_seconds)
        self.idle_unusable = self._fragmentation.idle_unusable(result.snapshot) if has_pending else 0.0
        self._capture(now, result)

    def _capture(self, now: float, result: CycleResult) -> None:
        """The node × GPU map at peak allocation: the first cycle that reached it."""
        if self.allocated > 0 and (self._peak is None or self.allocated > self._peak_allocated + tolerance.SHARE):
            self._peak_allocated = self.allocated
            self._peak = occupancy(result.snapshot, now, PEAK)

    def sample(self, now: float, pending_jobs: int, running_jobs: int) -> None:
        """Record the state at `now` (replacing a row of the same instant; skipping an unchanged one)."""
        ratio = self.allocated / self.total_gpus if self.total_gpus else 0.0
        row = [
            self.allocated,
            ratio,
            self.idle_unusable,
            float(pending_jobs),
            float(running_jobs),
            self._fairness(),
            self.total_gpus,
        ]
        allocated = self._tree_allocated()
        s = self.series
        if s.time and s.time[-1] == now:
            self._drop_last()
        elif s.time and self._same_as_last(row, allocated):
            return
        s.time.append(now)
        for column, value in zip(CLUSTER_COLUMNS, row, strict=True):
            s.cluster[column].append(round(value, 9))
        for name, cols in s.queues.items():
            cols["allocated"].append(round(allocated.get(name, 0.0), 9))
            cols["fair_share"].append(round(self.fair_share.get(name, 0.0), 9))
            cols["deserved"].append(round(self.deserved.get(name, 0.0), 9))

    def _tree_allocated(self) -> dict[str, float]:
        """Per queue, what its pods hold plus what its descendants' pods hold."""
        out = dict.fromkeys(self.parents, 0.0)
        for queue, gpus in self.by_queue.items():
            seen: set[str] = set()
            while queue and queue not in seen:
                seen.add(queue)
                out[queue] = out.get(queue, 0.0) + gpus
                queue = self.parents.get(queue, "")
        return out

    def _fairness(self) -> float:
        xs = [self.by_queue.get(q, 0.0) / self.fair_share[q] for q in self.leaves if self.fair_share.get(q, 0) > 0]
        if not xs or not any(xs):
            return math.nan if not xs else 0.0
        return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))

    def _drop_last(self) -> None:
        s = self.series
        s.time.pop()
        for col in s.cluster.values():
            col.pop()
        for cols in s.queues.values():
            for col in cols.values():
                col.pop()

    def _same_as_last(self, row: list[float], allocated: dict[str, float]) -> bool:
        s = self.series
        last = [s.cluster[c][-1] for c in CLUSTER_COLUMNS]
        same = all(_eq(round(a, 9), b) for a, b in zip(row, last, strict=True))
        return same and all(
            _eq(round(src.get(name, 0.0), 9), cols[column][-1])
            for name, cols in s.queues.items()
            for column, src in (("allocated", allocated), ("fair_share", self.fair_share), ("deserved", self.deserved))
        )

    def add_map(self, snap: Snapshot, at: float, what: str = "") -> None:
        """The map at an instant (the replay hands the cluster as it was then); `what` says why that one."""
        self.maps.append(occupancy(snap, at, what))

    def occupancy_maps(self) -> list[OccupancyMap]:
        """The maps taken and the one at peak allocation, by time (one map per instant, its reasons joined)."""
        unique: dict[float, OccupancyMap] = {}
        for m in [*self.maps, *([self._peak] if self._peak is not None else [])]:
            seen = unique.get(m.time)
            unique[m.time] = m if seen is None else replace(seen, what=f"{seen.what}; {m.what}".strip("; "))
        return [unique[t] for t in sorted(unique)]


def _eq(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def time_weighted_mean(time: Sequence[float], values: Sequence[float], end: float) -> float:
    """Mean of a step function over [0, end] (0 before the first row; NaN rows are left out)."""
    if not time:
        return 0.0
    if end <= 0:
        return float(values[-1]) if not math.isnan(values[-1]) else 0.0
    t = np.append(np.asarray(time, dtype=float), end)
    v = np.asarray(values, dtype=float)
    if t[0] > 0:
        t, v = np.insert(t, 0, 0.0), np.insert(v, 0, 0.0)
    widths = np.clip(np.diff(t), 0.0, None)
    known = ~np.isnan(v)
    span = widths[known].sum()
    return float((v[known] * widths[known]).sum() / span) if span > 0 else 0.0


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None}
    p = np.percentile(np.asarray(values, dtype=float), [50, 90, 99])
    return {"p50": round(float(p[0]), 3), "p90": round(float(p[1]), 3), "p99": round(float(p[2]), 3)}


@dataclass(slots=True)
class Summary:
    """The figures of one replay; `to_json` is the `--output json` object, `details` everything else."""

    makespan: float
    end: float
    allocation_ratio: float
    submitted: int
    completed: int
    never_scheduled: list[str]
    unfinished: dict[str, str]  # job key → "running" or "waiting" at the end
    stopped_at: float | None  # `--until`, when the replay stopped there with work left
    lost: int
    wait: list[float]
    completion: list[float]
    gang_wait: list[float]
    evictions: dict[str, int]
    queues: dict[str, dict[str, Any]]
    idle_unusable_mean: float
    fairness_mean: float
    interruptions: int
    cycles: int
    cycle_seconds: list[float]
    action_seconds: dict[str, float]
    wall_seconds: float
    reasons: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "makespan_seconds": round(self.makespan, 3),
            "gpu_allocation_ratio": round(self.allocation_ratio, 6),
            "jobs": {
                "submitted": self.submitted,
                "completed": self.completed,
                "unfinished": len(self.unfinished),
                "never_scheduled": len(self.never_scheduled),
            },
            "wait_seconds": percentiles(self.wait),
            "evictions": dict(sorted(self.evictions.items())),
            "queues": {
                name: {
                    "wait_seconds": q["wait_seconds"],
                    "allocated_gpus": q["allocated_gpus"],
                    "fair_share_gpus": q["fair_share_gpus"],
                }
                for name, q in self.queues.items()
            },
        }

    def details(self) -> dict[str, Any]:
        cycle = np.asarray(self.cycle_seconds) if self.cycle_seconds else np.zeros(1)
        return {
            **self.to_json(),
            "end_seconds": round(self.end, 3),
            "stopped_at_seconds": self.stopped_at,
            "never_scheduled_jobs": {key: self.reasons.get(key, "") for key in self.never_scheduled},
            "unfinished_jobs": {
                key: state + (f": {self.reasons[key]}" if state == WAITING and key in self.reasons else "")
                for key, state in self.unfinished.items()
            },
            "lost_jobs": self.lost,
            "interruptions": self.interruptions,
            "completion_seconds": percentiles(self.completion),
            "gang_wait_seconds": percentiles(self.gang_wait),
            "idle_unusable_gpus_mean": round(self.idle_unusable_mean, 6),
            "fairness_mean": None if math.isnan(self.fairness_mean) else round(self.fairness_mean, 6),
            "queues_detail": self.queues,
            "cycles": self.cycles,
            "cycle_seconds": {
                "mean": round(float(cycle.mean()), 6),
                "p50": round(float(np.median(cycle)), 6),
                "p99": round(float(np.percentile(cycle, 99)), 6),
                "max": round(float(cycle.max()), 6),
            },
            "action_seconds": {k: round(v, 4) for k, v in sorted(self.action_seconds.items())},
            "wall_seconds": round(self.wall_seconds, 3),
        }


def summarize(
    recorder: Recorder, jobs: Iterable[Job], end: float, *, wall_seconds: float, stopped_at: float | None = None
) -> Summary:
    """The summary of a replay that ended at virtual `end`; `stopped_at`: `--until`, when it stopped there
    with events still due (so pending work may yet have run)."""
    jobs = [j for j in jobs if j.submitted is not None]
    live = [j for j in jobs if j.is_live]
    never = [] if stopped_at is not None else [j for j in live if j.started is None]
    unfinished = {j.key: RUNNING if j.phase is Phase.RUNNING else WAITING for j in live if j not in never}
    done = [j for j in jobs if j.phase is Phase.DONE and j.finished is not None]
    started = [j for j in jobs if j.started is not None]
    wait = [_wait(j) for j in started]
    s = recorder.series
    queues: dict[str, dict[str, Any]] = {}
    for name, cols in s.queues.items():
        queue_wait = [_wait(j) for j in started if j.meta.queue == name]
        queues[name] = {
            "wait_seconds": percentiles(queue_wait),
            "allocated_gpus": round(time_weighted_mean(s.time, cols["allocated"], end), 6),
            "fair_share_gpus": round(time_weighted_mean(s.time, cols["fair_share"], end), 6),
            "deserved_gpus": round(time_weighted_mean(s.time, cols["deserved"], end), 6),
            "completion_seconds": percentiles([_completion(j) for j in done if j.meta.queue == name]),
            "jobs": sum(1 for j in jobs if j.meta.queue == name),
        }
    return Summary(
        makespan=max((j.finished for j in done if j.finished is not None), default=0.0),
        end=end,
        allocation_ratio=time_weighted_mean(s.time, s.cluster["allocation_ratio"], end),
        submitted=len(jobs),
        completed=len(done),
        never_scheduled=sorted(j.key for j in never),
        unfinished=dict(sorted(unfinished.items())),
        stopped_at=stopped_at,
        lost=sum(1 for j in jobs if j.phase is Phase.LOST),
        wait=wait,
        completion=[_completion(j) for j in done],
        gang_wait=[_wait(j) for j in started if j.is_gang],
        evictions=dict(recorder.evictions),
        queues=queues,
        idle_unusable_mean=time_weighted_mean(s.time, s.cluster["idle_unusable_gpus"], end),
        fairness_mean=_nan_mean(s.time, s.cluster["fairness"], end),
        interruptions=sum(j.interruptions for j in jobs),
        cycles=len(recorder.cycle_seconds),
        cycle_seconds=list(recorder.cycle_seconds),
        action_seconds=dict(recorder.action_seconds),
        wall_seconds=wall_seconds,
        reasons=dict(recorder.reasons),
    )


def _wait(job: Job) -> float:
    assert job.started is not None and job.submitted is not None
    return job.started - job.submitted


def _completion(job: Job) -> float:
    assert job.finished is not None and job.submitted is not None
    return job.finished - job.submitted


def _nan_mean(time: Sequence[float], values: Sequence[float], end: float) -> float:
    if all(math.isnan(v) for v in values):
        return math.nan
    return time_weighted_mean(time, values, end)
