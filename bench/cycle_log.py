"""Every scheduling cycle of a `kai` process, one JSON line each: `python bench/cycle_log.py LOG kai-args...`.

Runs `python -m kai_scheduler.cli kai-args...` with `Scheduler.run_once` wrapped so that each cycle appends
`{"end", "wall", "cpu", "placed", "evicted"}` to the file LOG: the end (Unix time), the cycle's wall seconds, the
CPU seconds of the thread that ran it (`time.thread_time`: the cycle alone, not the process's other components),
and how many tasks it placed (allocated or pipelined) and evicted. The scheduler's own metrics are gauges of the
last cycle only; a benchmark over a real API server needs every cycle's figure.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
import time
from typing import Any


def install(log_path: str) -> None:
    from kai_scheduler.framework.statement import Op
    from kai_scheduler.scheduler import scheduler

    lock = threading.Lock()
    out = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    run_once = scheduler.Scheduler.run_once

    def logged(self: scheduler.Scheduler, *args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        result = run_once(self, *args, **kwargs)
        line = {
            "end": time.time(),
            "wall": time.perf_counter() - wall,
            "cpu": time.thread_time() - cpu,
            "placed": sum(1 for op in result.operations if op.op in (Op.ALLOCATE, Op.PIPELINE)),
            "evicted": sum(1 for op in result.operations if op.op is Op.EVICT),
        }
        with lock:
            out.write(json.dumps(line) + "\n")
        return result

    scheduler.Scheduler.run_once = logged  # type: ignore[method-assign]


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
