"""Usage windows and decay (§5.5), shared by the Prometheus queries and the embedded recorder.

- sliding: the last `window_size` seconds before now;
- tumbling: consecutive windows of `window_size` from `tumbling_window_start`; the current one began at the
  latest boundary ≤ now;
- cron: a new window begins at every match of the cron expression.
A sample at time t weighs `0.5 ** ((now - t) / half_life)` (1 without a half-life).
"""

from __future__ import annotations

import math

from kai_scheduler.usagedb import cron
from kai_scheduler.usagedb.params import UsageParams, WindowType


def window_start(params: UsageParams, now: float) -> float:
    """When the window that `now` falls in began."""
    if params.window_type is WindowType.TUMBLING:
        origin = params.tumbling_window_start if params.tumbling_window_start is not None else 0.0
        if now <= origin:
            return now
        return origin + math.floor((now - origin) / params.window_size) * params.window_size
    if params.window_type is WindowType.CRON:
        return cron.parse(params.cron).last_match(now)
    return now - params.window_size


def decay(params: UsageParams, now: float, t: float) -> float:
    """Weight of a sample taken at `t`."""
    if params.half_life is None:
        return 1.0
    return float(0.5 ** ((now - t) / params.half_life))


def decayed_span(params: UsageParams, now: float, start: float, end: float) -> float:
    """∫ decay(t) dt over [start, end]: the weight of a value that held over that span."""
    if end <= start:
        return 0.0
    if params.half_life is None:
        return end - start
    h = params.half_life
    return float(h / math.log(2) * (0.5 ** ((now - end) / h) - 0.5 ** ((now - start) / h)))
