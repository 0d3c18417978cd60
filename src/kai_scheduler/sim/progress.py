"""The live progress bar of `kai simulate`: virtual time against the expected horizon, and the cluster now.

Drawn on standard error (standard output stays free for `--output json`) and redrawn at most ten times a wall
second so that it costs nothing next to a scheduling cycle. Off a terminal (a log, a pipe, CI) there is no bar:
once a replay has run for `PLAIN_AFTER` wall seconds, a line of its own at each tenth of the horizon says the
same, so a long replay is not silent and a short one prints nothing.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kai_scheduler.api.duration import describe_duration, format_duration
from kai_scheduler.sim.replay import Replay

REDRAW_SECONDS = 0.1
PLAIN_AFTER = 2.0  # wall seconds before the first line off a terminal


class Bar:
    """A context manager; call the instance with the replay after each event."""

    def __init__(self, label: str, horizon: float, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        console = Console(stderr=True) if stream is None else Console(file=stream)
        self.enabled = enabled and console.is_terminal
        self.plain = enabled and not console.is_terminal  # a line per tenth of the horizon instead of a bar
        self.label = label
        self.stream = stream
        self.horizon = max(horizon, 1.0)
        self._last = 0.0
        self._started = time.perf_counter()
        self._tenths = 0  # tenths of the horizon already reached (the first line says where the replay is)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[clock]}"),
            TextColumn("GPUs {task.fields[alloc]}"),
            TextColumn("jobs {task.fields[jobs]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not self.enabled,
        )
        self._task = self._progress.add_task(label, total=self.horizon, clock="0s", alloc="0 %", jobs="-")

    def __enter__(self) -> Bar:
        if self.enabled:
            self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.enabled:
            self._progress.stop()

    def __call__(self, replay: Replay) -> None:
        if self.plain:
            self._line(replay)
        if not self.enabled:
            return
        wall = time.perf_counter()
        if wall - self._last < REDRAW_SECONDS:
            return
        self._last = wall
        now = replay.engine.now
        alloc, jobs = _cluster_now(replay)
        self._progress.update(
            self._task, completed=min(now, self.horizon), clock=format_duration(round(now)), alloc=alloc, jobs=jobs
        )

    def _line(self, replay: Replay) -> None:
        now = replay.engine.now
        tenths = int(10 * now / self.horizon)
        if tenths <= self._tenths:
            return
        wall = time.perf_counter() - self._started
        if wall < PLAIN_AFTER:
            return
        self._tenths = tenths
        alloc, jobs = _cluster_now(replay)
        print(
            f"{self.label}: virtual time {describe_duration(now)} of about {describe_duration(self.horizon)}, "
            f"GPUs {alloc} allocated, jobs {jobs} ({wall:.0f}s)",
            file=self.stream or sys.stderr,
            flush=True,
        )


def _cluster_now(replay: Replay) -> tuple[str, str]:
    """The share of GPUs allocated ("42 %") and the jobs' progress ("3/10 done, 2 pending"), for both forms."""
    recorder = replay.recorder
    ratio = recorder.allocated / recorder.total_gpus if recorder.total_gpus else 0.0
    jobs = replay.workload
    return f"{100 * ratio:.0f} %", f"{jobs.done}/{len(jobs.jobs)} done, {jobs.pending} pending"
