"""The live progress bar of `kai simulate`: virtual time against the expected horizon, and the cluster now.

Drawn on standard error (standard output stays free for `--output json`), only on a terminal, and redrawn
at most ten times a wall second so that it costs nothing next to a scheduling cycle.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kai_scheduler.api.duration import format_duration
from kai_scheduler.sim.replay import Replay

REDRAW_SECONDS = 0.1


class Bar:
    """A context manager; call the instance with the replay after each event."""

    def __init__(self, label: str, horizon: float, *, enabled: bool = True) -> None:
        console = Console(stderr=True)
        self.enabled = enabled and console.is_terminal
        self.horizon = max(horizon, 1.0)
        self._last = 0.0
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
        if not self.enabled:
            return
        wall = time.perf_counter()
        if wall - self._last < REDRAW_SECONDS:
            return
        self._last = wall
        now = replay.engine.now
        recorder = replay.recorder
        ratio = recorder.allocated / recorder.total_gpus if recorder.total_gpus else 0.0
        jobs = replay.workload
        self._progress.update(
            self._task,
            completed=min(now, self.horizon),
            clock=format_duration(round(now)),
            alloc=f"{100 * ratio:.0f} %",
            jobs=f"{jobs.done}/{len(jobs.jobs)} done, {jobs.pending} pending",
        )
