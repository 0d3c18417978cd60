"""Every scheduling cycle of a `kai` process, one JSON line each: `python bench/cycle_log.py LOG kai-args...`.

Runs `python -m kai_scheduler.cli kai-args...` with `Scheduler.run_once` wrapped so that each cycle appends
`{"end", "wall", "cpu", "placed", "evicted", "phases", "changed", "gc"}` to the file LOG: the end (Unix time), the
cycle's wall seconds, the CPU seconds of the thread that ran it (`time.thread_time`: the cycle alone, not the
process's other components), and how many tasks it placed (allocated or pipelined) and evicted. The scheduler's own
metrics are gauges of the last cycle only; a benchmark over a real API server needs every cycle's figure.

`phases`: the cycle's CPU seconds by step (the same thread clock): `sync` (the watches' events taken into the
cache, parsed), `objects` (the cache's objects in key order), `snapshot` (the incremental build), `open`, each
action by name, `close`, `commit` (the writes) and `take_in` (its own BindRequests put into the cache); the rest
of `cpu` is the cycle's other work and the collection after it. `changed`: per resource, how many keys the cache's
change log took in during the cycle ("relist" when it started over). `gc`: the collections that ran on the
scheduling thread within the cycle, as (generation, CPU seconds).

With `KAI_CYCLE_PROFILE=DIR` each cycle also runs under `cProfile` (the scheduling thread only, timed by its CPU
clock, whose reading costs a system call per function call and return: call-heavy code reads several times its
cost), and a cycle that placed or evicted something, or took more than `KAI_CYCLE_PROFILE_MIN` (0.05) CPU-seconds,
leaves its profile in DIR as `cycle-N.prof` (its line in LOG gets `"profile": N`).
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


class _Phases:
    """CPU seconds of the scheduling thread by step, for the cycle under way."""

    def __init__(self) -> None:
        self.cycling: int | None = None  # the thread running a cycle
        self.seconds: dict[str, float] = {}
        self.collections: list[tuple[int, float]] = []  # (generation, seconds)
        self._gc_started = 0.0

    def wrap(self, owner: Any, attr: str, name: Callable[[Any], str] | str) -> None:
        """Time `owner.attr` (a function or method) as the phase `name` (or `name(self)` of a method)."""
        inner = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.cycling:
                return inner(*args, **kwargs)
            started = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                phase = name if isinstance(name, str) else name(args[0])
                self.seconds[phase] = self.seconds.get(phase, 0.0) + time.thread_time() - started

        setattr(owner, attr, timed)

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self.cycling:
            return
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self.collections.append((info["generation"], time.thread_time() - self._gc_started))


def install(log_path: str) -> None:
    from kai_scheduler.actions.registry import ACTIONS
    from kai_scheduler.cluster import snapshot as snapshots
    from kai_scheduler.framework.session import Session
    from kai_scheduler.framework.statement import Op
    from kai_scheduler.scheduler import scheduler

    lock = threading.Lock()
    out = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    run_once = scheduler.Scheduler.run_once
    profile_dir = os.environ.get("KAI_CYCLE_PROFILE", "")
    profile_min = float(os.environ.get("KAI_CYCLE_PROFILE_MIN", "0.05"))
    profiled = [0]
    phases = _Phases()
    gc.callbacks.append(phases.on_gc)
    phases.wrap(scheduler.Scheduler, "_sync", "sync")
    phases.wrap(scheduler.Scheduler, "cluster_objects", "objects")
    phases.wrap(snapshots, "build", "snapshot")
    phases.wrap(Session, "open", "open")
    phases.wrap(Session, "close", "close")
    phases.wrap(scheduler.Scheduler, "_commit", "commit")
    phases.wrap(scheduler.Scheduler, "_take_in_own_bind_requests", "take_in")
    for action in {*ACTIONS.values()}:
        phases.wrap(action, "execute", lambda a: str(a.name))

    def logged(self: scheduler.Scheduler, *args: Any, **kwargs: Any) -> Any:
        phases.seconds, phases.collections = {}, []
        phases.cycling = threading.get_ident()
        marks = {r: self.cache.mark(r) for r in self.cache.resources}
        profiler = cProfile.Profile(time.thread_time) if profile_dir else None
        wall, cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            result = run_once(self, *args, **kwargs)
        finally:
            if profiler is not None:
                profiler.disable()
            phases.cycling = None
        line: dict[str, Any] = {
            "end": time.time(),
            "wall": time.perf_counter() - wall,
            "cpu": time.thread_time() - cpu,
            "placed": sum(1 for op in result.operations if op.op in (Op.ALLOCATE, Op.PIPELINE)),
            "evicted": sum(1 for op in result.operations if op.op is Op.EVICT),
            "phases": {k: round(v, 4) for k, v in phases.seconds.items()},
            "changed": _changed(self, marks),
            "gc": [[g, round(s, 4)] for g, s in phases.collections],
        }
        if profiler is not None and (line["placed"] or line["evicted"] or line["cpu"] > profile_min):
            profiled[0] += 1
            profiler.dump_stats(os.path.join(profile_dir, f"cycle-{profiled[0]}.prof"))
            line["profile"] = profiled[0]
        with lock:
            out.write(json.dumps(line) + "\n")
        return result

    scheduler.Scheduler.run_once = logged  # type: ignore[method-assign]


def _changed(sched: Any, marks: dict[str, tuple[int, int]]) -> dict[str, int | str]:
    out: dict[str, int | str] = {}
    for resource, (epoch, at) in marks.items():
        now_epoch, now_at = sched.cache.mark(resource)
        if now_epoch != epoch:
            out[resource] = "relist"
        elif now_at != at:
            out[resource] = now_at - at
    return out


def read(log_path: str) -> list[dict[str, Any]]:
    """The cycles logged so far (a line being written is left out)."""
    try:
        with open(log_path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def main() -> None:
    log, args = sys.argv[1], sys.argv[2:]
    install(log)
    sys.argv = ["kai", *args]
    runpy.run_module("kai_scheduler.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
