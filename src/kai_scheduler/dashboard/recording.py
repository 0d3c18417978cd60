"""A simulation's dashboard pictures along virtual time (`kai simulate --dashboard`).

After each scheduling cycle of the replay, `Recording` builds the dashboard document of that instant from the
cycle's own result (its snapshot and queue shares, the decisions it made) and keeps it serialised. At most
`max_frames` pictures are kept: when more come, every other one is dropped and the spacing between kept
pictures doubles, so a long replay keeps an even spread of instants from start to end. `write` puts them in
one JSON file, `{"frames": [document, ...]}`, that `kai dashboard FILE.json` shows with a slider.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import orjson

from kai_scheduler.dashboard import view
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.sim.replay import Replay

MAX_FRAMES = 300
DECISIONS = 100
_REASONS = {Op.ALLOCATE: "Scheduled", Op.EVICT: "Evict", Op.PIPELINE: "Pipelined"}


class Recording:
    def __init__(self, config: SchedulerConfig, name: str, *, max_frames: int = MAX_FRAMES) -> None:
        self.config = config
        self.name = name
        self.max_frames = max_frames
        self.frames: list[bytes] = []
        self.every = 0.0  # virtual seconds between kept pictures (0: every cycle)
        self._last: float | None = None
        self._decisions: deque[view.Decision] = deque(maxlen=DECISIONS)

    def attach(self, replay: Replay) -> Recording:
        replay.observers.append(self.observe)
        return self

    def observe(self, elapsed: float, result: CycleResult) -> None:
        """Take in the cycle's decisions; keep its picture unless it is too close to the last one kept.

        `elapsed` is the replay's virtual seconds; the pictures carry the cluster's clock (`result.now`)."""
        now = result.now
        for op in result.operations:
            reason = _REASONS.get(op.op)
            if reason is None:
                continue
            if op.op is Op.EVICT:
                message = op.eviction.message if op.eviction is not None else ""
            else:
                message = f"{op.task.key} to {op.after.node}"
            self._decisions.appendleft(view.Decision(now, reason, op.task.key, message))
        if self._last is not None and now - self._last < self.every:
            return
        document = view.build(
            result.snapshot,
            self.config,
            decisions=list(self._decisions),
            source=self.name,
            shares=result.queue_shares,
        )
        self.frames.append(orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY))
        self._last = now
        if len(self.frames) > self.max_frames:
            self.frames = self.frames[::2]
            first, last = orjson.loads(self.frames[0])["now"], orjson.loads(self.frames[-1])["now"]
            self.every = max(self.every * 2, (last - first) / self.max_frames)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b'{"frames":[' + b",".join(self.frames) + b"]}")
        return path
