"""cProfile of every thread of a `kai` process, each on its own CPU clock: `python bench/thread_cprofile.py OUT
kai-args...`.

Runs `python -m kai_scheduler.cli kai-args...` with a `cProfile.Profile(time.thread_time)` in each thread (the main
one and every thread started after), so a thread's time blocked on a socket or a lock is not counted. Every 5 s and
at exit the threads' statistics, merged, go to OUT (pstats' marshal format: `python -m pstats OUT`, or
`report OUT` here for the functions by their own and cumulative time). cProfile inflates call-heavy code: read the
shares, not the seconds.
"""

from __future__ import annotations

import atexit
import cProfile
import os
import pstats
import runpy
import sys
import threading
import time
from types import FrameType
from typing import Any

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _start_profile(frame: FrameType, event: str, arg: Any) -> None:
    """The `threading.setprofile` hook: a new thread's first event puts a profiler of its own in its place."""
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append(profile)
    profile.enable()


def dump(out: str) -> None:
    with _lock:
        profiles = list(_profiles)
    snapshots = []
    for profile in profiles:
        profile.snapshot_stats()  # reads the counters without stopping the profiler
        snapshots.append(_Snapshot(profile.stats))  # type: ignore[attr-defined]
    stats = pstats.Stats(*snapshots)  # type: ignore[arg-type]
    tmp = f"{out}.tmp"
    stats.dump_stats(tmp)
    os.replace(tmp, out)


class _Snapshot:
    """What `pstats.Stats.add` takes: an object with `create_stats` and `stats`."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = dict(stats)

    def create_stats(self) -> None:
        pass


def _dumper(out: str) -> None:
    while True:
        time.sleep(5)
        dump(out)


def report(path: str, top: int = 50) -> None:
    stats = pstats.Stats(path)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"CPU seconds under the profiler: {total:.2f}")
    for key in ("tottime", "cumulative"):
        print(f"by {key}:")
        stats.sort_stats(key).print_stats(top)


def main() -> None:
    if sys.argv[1] == "report":
        report(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 50)
        return
    out, args = sys.argv[1], sys.argv[2:]
    main_profile = cProfile.Profile(time.thread_time)
    _profiles.append(main_profile)
    threading.setprofile(_start_profile)
    threading.Thread(target=_dumper, args=(out,), name="bench-cprofile", daemon=True).start()
    atexit.register(dump, out)
    sys.argv = ["kai", *args]
    main_profile.enable()
    runpy.run_module("kai_scheduler.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
