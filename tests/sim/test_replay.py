"""Replays as timelines: arrivals held back, a job runs exactly its duration, evicted work comes back."""

from __future__ import annotations

from pathlib import Path

from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim import replay, sources
from kai_scheduler.sim.engine import Event, Kind
from kai_scheduler.sim.workload import Phase
from tests.sim.helpers import make, scenario, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_job_arrives_at_submit_at_and_runs_exactly_its_duration() -> None:
    run_ = make(
        scenario("""
        - {name: train, queue: a, submitAt: 10s, duration: 100s, owner: {kind: Job}, replicas: 2,
           template: {gpus: 1, cpu: "1", memory: 1Gi}}
    """)
    )
    result = run_.run()
    assert run_.timeline == [
        (10.0, "arrive", "default/train"),
        (10.0, "cycle", "2 binds"),
        (10.0, "start", "default/train"),  # bound, started by the kubelet in the same instant
        (110.0, "finish", "default/train"),
        (110.0, "cycle", ""),  # the final look: nothing left to do
    ]
    job = result.jobs[0]
    assert (job.submitted, job.started, job.finished, job.phase) == (10.0, 10.0, 110.0, Phase.DONE)
    assert result.summary.makespan == 110.0


def test_objects_of_a_job_do_not_exist_before_its_arrival() -> None:
    text = scenario("""
        - {name: early, queue: a, duration: 50s, replicas: 1, template: {gpus: 1}}
        - {name: late, queue: a, submitAt: 1h, duration: 50s, replicas: 1, template: {gpus: 1}}
    """)
    before = make(text, until=60.0)
    before.run()
    pods = {p["metadata"]["name"] for p in before.store.list("pods")[0]}
    groups = {g["metadata"]["name"] for g in before.store.list("podgroups")[0]}
    assert pods == set() and groups == set()  # early finished and went; late is not there yet
    after = make(text, until=3601.0)
    after.run()
    assert {p["metadata"]["name"] for p in after.store.list("pods")[0]} == {"late-0"}
    pg = after.store.get("podgroups", "late", "default")
    assert pg["metadata"]["creationTimestamp"] == "2026-01-01T01:00:00Z"  # created at arrival


class _Evicting(replay.Replay):
    """Evicts one pod at the WAKE keyed `evict`, as a preemptor would."""

    def _handle(self, event: Event) -> None:
        if event.kind is Kind.WAKE and event.key == "evict":
            self.store.evict("default", "train-0")
            self._observe()
            return
        super()._handle(event)


def test_an_evicted_pod_is_recreated_and_the_job_runs_again_from_the_start() -> None:
    loaded = sources.loads(
        scenario("""
        - {name: train, queue: a, duration: 100s, owner: {kind: PyTorchJob}, replicas: 2,
           template: {gpus: 1}}
    """),
        "test.yaml",
    )
    run_ = _Evicting(loaded, load_config(None), replay.Options(timeline=True))
    run_.engine.at(50.0, Kind.WAKE, "evict")
    result = run_.run()
    assert run_.timeline == [
        (0.0, "arrive", "default/train"),
        (0.0, "cycle", "2 binds"),
        (0.0, "start", "default/train"),
        (50.0, "terminating", "default/train-0"),  # 30 s grace: it still holds its GPU
        (80.0, "gone", "default/train-0"),
        (80.0, "recreate", "default/train-0"),  # Pending again, same name
        (80.0, "cycle", "1 binds"),
        (80.0, "start", "default/train"),  # the run starts over
        (180.0, "finish", "default/train"),
        (180.0, "cycle", ""),
    ]
    job = result.jobs[0]
    assert (job.runs, job.interruptions, job.started, job.finished) == (2, 1, 0.0, 180.0)
    assert result.summary.interruptions == 1
    series = result.series  # the terminating pod holds its GPU until it is gone
    assert {v for t, v in zip(series.time, series.cluster["allocated_gpus"], strict=True) if t < 180} == {2.0}


def test_a_job_that_can_never_fit_is_reported_and_the_replay_ends() -> None:
    result = simulate(
        scenario("""
        - {name: small, queue: a, duration: 10s, replicas: 1, template: {gpus: 1}}
        - {name: huge, queue: a, duration: 10s, replicas: 1, template: {gpus: 8}}
    """)
    )
    s = result.summary
    assert s.never_scheduled == ["default/huge"]
    assert s.to_json()["jobs"] == {"submitted": 2, "completed": 1, "unfinished": 0, "never_scheduled": 1}
    assert s.end == 10.0 and s.cycles <= 3


def test_owner_labels_follow_the_workload_kind() -> None:
    run_ = make(
        scenario("""
        - {name: pt, queue: a, owner: {kind: PyTorchJob}, replicas: 2, template: {gpus: 1}}
    """),
        until=0.0,
    )
    run_.run()
    roles = {
        p["metadata"]["name"]: p["metadata"]["labels"]["training.kubeflow.org/job-role"]
        for p in run_.store.list("pods")[0]
    }
    assert roles == {"pt-0": "master", "pt-1": "worker"}


def test_a_bare_pod_is_not_recreated() -> None:
    loaded = sources.loads(
        scenario("""
        - {name: train, queue: a, duration: 100s, owner: {kind: Pod}, replicas: 1, template: {gpus: 1}}
    """),
        "test.yaml",
    )
    run_ = _Evicting(loaded, load_config(None), replay.Options(timeline=True))
    run_.store.evict = _evict_train(run_)  # type: ignore[method-assign]
    run_.engine.at(50.0, Kind.WAKE, "evict")
    result = run_.run()
    assert result.jobs[0].phase is Phase.LOST
    assert result.summary.to_json()["jobs"]["completed"] == 0


def _evict_train(run_: replay.Replay):  # type: ignore[no-untyped-def]
    original = run_.store.evict

    def evict(namespace: str, name: str, uid: str = "") -> None:
        original(namespace, "train-0")  # whichever pod was named, and so whatever its uid

    return evict


def test_knavigator_burst_reaches_the_optimum_makespan_within_ten_percent() -> None:
    loaded = sources.load(EXAMPLES / "knavigator-gang-burst.yaml")
    assert len(loaded.jobs) == 53
    assert {len(j.task_names) for j in loaded.jobs} <= set(range(1, 33))
    result = replay.Replay(loaded, load_config(loaded.config)).run()
    assert result.summary.completed == 53
    assert result.summary.makespan <= 270 * 1.10
    assert result.summary.allocation_ratio >= 0.9


def test_a_replay_stopped_at_until_reports_unfinished_jobs_apart_from_never_scheduled_ones() -> None:
    text = scenario(
        """
        - {name: long, queue: a, duration: 1h, replicas: 1, template: {gpus: 4}}
        - {name: next, queue: b, submitAt: 1m, duration: 10m, replicas: 1, template: {gpus: 2}}
        - {name: huge, queue: a, submitAt: 1m, duration: 10m, replicas: 1, template: {gpus: 8}}
    """,
        quota_a=4,
        quota_b=0,
    )  # b has no quota to reclaim: `next` waits for `long`
    stopped = simulate(text, until=1800.0).summary
    assert stopped.stopped_at == 1800.0
    assert stopped.never_scheduled == []  # `next` would run at 1h: nothing is known to never fit
    assert stopped.unfinished == {"default/huge": "waiting", "default/long": "running", "default/next": "waiting"}
    assert stopped.to_json()["jobs"] == {"submitted": 3, "completed": 0, "unfinished": 3, "never_scheduled": 0}
    ended = simulate(text).summary
    assert ended.stopped_at is None
    assert ended.never_scheduled == ["default/huge"] and ended.unfinished == {}
    assert ended.to_json()["jobs"] == {"submitted": 3, "completed": 2, "unfinished": 0, "never_scheduled": 1}


def test_a_job_without_duration_is_unfinished_not_never_scheduled() -> None:
    summary = simulate(
        scenario("""
        - {name: service, queue: a, replicas: 1, template: {gpus: 1}}
        - {name: batch, queue: a, duration: 10s, replicas: 1, template: {gpus: 1}}
    """)
    ).summary
    assert summary.never_scheduled == [] and summary.unfinished == {"default/service": "running"}
    assert summary.completed == 1


def test_a_releasing_pod_holds_its_gpus_until_its_termination_ends() -> None:
    """`terminatesAfter: 5m`: the pod frees its 4 GPUs 5 minutes in, and the job waiting for them runs then."""
    result = simulate(
        scenario("""
        - {name: leaving, queue: a, deleted: true,
           tasks: [{status: Releasing, node: n-0, gpus: 4, terminatesAfter: 5m}]}
        - {name: train, queue: a, duration: 60s, replicas: 1, template: {gpus: 4}}
    """)
    )
    train = next(j for j in result.jobs if j.meta.name == "train")
    assert (train.started, train.finished) == (300.0, 360.0)


def test_a_pod_that_never_terminates_keeps_its_gpus() -> None:
    """`terminatesAfter: never`: stuck terminating; the job that needs its GPUs is never scheduled."""
    result = simulate(
        scenario("""
        - {name: stuck, queue: a, deleted: true,
           tasks: [{status: Releasing, node: n-0, gpus: 4, terminatesAfter: never}]}
        - {name: train, queue: a, duration: 60s, replicas: 1, template: {gpus: 4}}
    """),
        until=3600.0,
    )
    assert "default/train" in result.summary.never_scheduled
