"""The simulator skips cycles in which nothing can change; what it reports must be what a scheduler cycling
every period would show (hypothesis): the same fair share, deserved share and allocation per queue, the same
fairness index, pending and running counts at every instant, and the same job outcomes.

Workloads: one or two 4- or 8-GPU nodes, two queues with GPU quotas, 1-6 jobs of 1-3 pods of 1-4 GPUs (a
Job, a PyTorchJob or a bare pod) arriving and running on the 5 s cycle grid, so that an event and the cycle
that follows it share an instant in both replays.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import metrics, replay, sources
from tests.sim.helpers import scenario

PERIOD = 5.0
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def workloads(draw: st.DrawFn) -> str:
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        queue = draw(st.sampled_from("ab"))
        kind = draw(st.sampled_from(["Job", "PyTorchJob", "Pod"]))
        replicas = 1 if kind == "Pod" else draw(st.integers(1, 3))
        submit = PERIOD * draw(st.integers(0, 12))
        duration = PERIOD * draw(st.integers(1, 24))
        gpus = draw(st.integers(1, 4))
        jobs.append(
            f"- {{name: j{i}, queue: {queue}, submitAt: {submit:g}s, duration: {duration:g}s, "
            f"owner: {{kind: {kind}}}, replicas: {replicas}, template: {{gpus: {gpus}}}}}\n"
        )
    return scenario(
        "".join(jobs),
        nodes=draw(st.integers(1, 2)),
        gpus=draw(st.sampled_from([4, 8])),
        quota_a=draw(st.integers(0, 4)),
        quota_b=draw(st.integers(0, 4)),
    )


def _replay(text: str, *, every_period: bool) -> replay.Run:
    loaded = sources.loads(text, "workload.yaml")
    options = replay.Options(schedule_period=PERIOD, every_period=every_period)
    return replay.Replay(loaded, load_config(loaded.config), options).run()


def _at(series: metrics.Series, values: list[float], t: float) -> float:
    """A step-function column at instant `t`."""
    return values[bisect_right(series.time, t) - 1]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, abs_tol=1e-6)


@SETTINGS
@given(workloads())
def test_skipping_idle_cycles_changes_no_figure(text: str) -> None:
    skipped, every = _replay(text, every_period=False), _replay(text, every_period=True)
    assert every.summary.cycles >= skipped.summary.cycles
    assert skipped.summary.end == every.summary.end
    outcome = [(j.key, j.phase, j.started, j.finished) for j in skipped.jobs]
    assert outcome == [(j.key, j.phase, j.started, j.finished) for j in every.jobs]
    s, e = skipped.series, every.series
    for t in sorted(set(s.time) | set(e.time)):
        for column in metrics.CLUSTER_COLUMNS:
            assert _same(_at(s, s.cluster[column], t), _at(e, e.cluster[column], t)), (t, column)
        for queue, columns in s.queues.items():
            for column, values in columns.items():
                assert _same(_at(s, values, t), _at(e, e.queues[queue][column], t)), (t, queue, column)
