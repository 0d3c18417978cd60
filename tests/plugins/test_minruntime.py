"""minruntime (§7.4): arguments, protection, where a min-runtime is read, what a protected elastic job may give,
and a queue with an unreadable min-runtime (issue 3: kept, with the default)."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api import PARSERS
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.queue import Queue
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.minruntime import MinRuntime, is_elastic, keeps_gang
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
STARTED = "kai.scheduler/last-start-timestamp"


@pytest.mark.parametrize(
    "arguments, want",
    [
        pytest.param({}, (0.0, 0.0, "lca"), id="defaults"),
        pytest.param(
            {"defaultPreemptMinRuntime": "10m", "defaultReclaimMinRuntime": "90s", "reclaimResolveMethod": "queue"},
            (600.0, 90.0, "queue"),
            id="all arguments",
        ),
    ],
)
def test_arguments(arguments: dict[str, str], want: tuple[float, float, str]) -> None:
    plugin = MinRuntime.from_args(arguments)
    assert (plugin.preempt_default, plugin.reclaim_default, plugin.resolve_method) == want


@pytest.mark.parametrize(
    "arguments, message",
    [
        pytest.param({"reclaimResolveMethod": "tree"}, "want lca or queue", id="an unknown method"),
        pytest.param({"defaultPreemptMinRuntime": "ten"}, "invalid duration", id="a bad duration"),
        pytest.param({"defaultReclaimMinRuntime": "-1m"}, "must not be negative", id="a negative duration"),
        pytest.param({"minRuntime": "1m"}, "unknown argument", id="an unknown argument"),
    ],
)
def test_bad_arguments_fail_at_load(arguments: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MinRuntime.from_args(arguments)


def _tree() -> list[JSON]:
    """org > {dept-a > a1, dept-b (reclaim 20m, preempt 5m) > {b1 (reclaim 1m), b2}}; top: other (reclaim 7m)."""
    return [
        v.queue("org"),
        v.queue("dept-a", parent="org"),
        v.queue("dept-b", parent="org", reclaimMinRuntime="20m", preemptMinRuntime="5m"),
        v.queue("a1", parent="dept-a"),
        v.queue("b1", parent="dept-b", reclaimMinRuntime="1m"),
        v.queue("b2", parent="dept-b"),
        v.queue("other", reclaimMinRuntime="7m"),
    ]


def _session(objects: list[JSON], **arguments: str) -> tuple[Session, MinRuntime]:
    plugin = MinRuntime.from_args(arguments)
    ssn = Session(b.snapshot([*v.priority_classes(), *objects]), v.load_config_for({}), [plugin])
    ssn.open()
    return ssn, plugin


def _job(ssn: Session, name: str) -> Any:
    return next(j for j in ssn.snapshot.jobs.values() if j.name == name)


@pytest.mark.parametrize(
    "reclaimer, victim, method, want",
    [
        pytest.param("a1", "b1", "lca", 1200.0, id="lca: the victim-side child of org is dept-b (20m)"),
        pytest.param("a1", "b1", "queue", 60.0, id="queue: b1's own 1m"),
        pytest.param("a1", "b2", "queue", 1200.0, id="queue: b2 has none, its parent dept-b's 20m"),
        pytest.param("b2", "b1", "lca", 60.0, id="lca inside dept-b: the child is b1 itself"),
        pytest.param("other", "b1", "lca", 0.0, id="different top-level trees: the victim's top (org, none): default"),
        pytest.param("a1", "other", "lca", 420.0, id="a top-level victim queue: its own"),
    ],
)
def test_reclaim_min_runtime_resolution(reclaimer: str, victim: str, method: str, want: float) -> None:
    objects = [*_tree(), *v.job("r", queue=reclaimer), *v.job("x", queue=victim)]
    ssn, plugin = _session(objects, reclaimResolveMethod=method)
    assert plugin.reclaim_min_runtime(_job(ssn, "r"), _job(ssn, "x")) == want


def test_a_reclaim_min_runtime_kept_for_a_queue_pair_is_read_again_in_the_next_session() -> None:
    """The plugin keeps each (reclaimer queue, victim queue) answer for the session; a queue's min-runtime
    changed before the next session is read there."""
    objects = [*_tree(), *v.job("r", queue="a1"), *v.job("x", queue="b1")]
    plugin = MinRuntime.from_args({})
    for minutes, want in ((20, 1200.0), (3, 180.0)):
        objects[2]["spec"]["reclaimMinRuntime"] = f"{minutes}m"  # dept-b
        ssn = Session(b.snapshot([*v.priority_classes(), *objects]), v.load_config_for({}), [plugin])
        ssn.open()
        assert plugin.reclaim_min_runtime(_job(ssn, "r"), _job(ssn, "x")) == want
        assert plugin.reclaim_min_runtime(_job(ssn, "r"), _job(ssn, "x")) == want


@pytest.mark.parametrize(
    "queue_name, default, want",
    [
        pytest.param("b1", "0s", 300.0, id="the parent's preemptMinRuntime"),
        pytest.param("a1", "2m", 120.0, id="none on the path: the plugin default"),
    ],
)
def test_preempt_min_runtime_resolution(queue_name: str, default: str, want: float) -> None:
    ssn, plugin = _session([*_tree(), *v.job("x", queue=queue_name)], defaultPreemptMinRuntime=default)
    assert plugin.preempt_min_runtime(_job(ssn, "x")) == want


@pytest.mark.parametrize(
    "started_ago, min_runtime, protected",
    [
        pytest.param(None, 600.0, False, id="never started: unprotected"),
        pytest.param(300.0, 600.0, True, id="within the min-runtime"),
        pytest.param(600.0, 600.0, False, id="exactly at the end: no longer"),
        pytest.param(900.0, 600.0, False, id="past it"),
    ],
)
def test_protection(started_ago: float | None, min_runtime: float, protected: bool) -> None:
    notes = {STARTED: format_time(b.NOW - started_ago)} if started_ago is not None else None
    ssn, plugin = _session([v.queue("q"), *v.job("x", queue="q", annotations=notes)])
    assert plugin.is_protected(_job(ssn, "x"), min_runtime) is protected


def _elastic_job(*, running: int, min_member: int) -> list[JSON]:
    return [b.node("n1"), v.queue("q"), *v.job("e", queue="q", pods=running, min_member=min_member, node="n1")]


@pytest.mark.parametrize(
    "running, min_member, taken, keeps",
    [
        pytest.param(4, 2, ["e-3", "e-2"], True, id="the surplus only"),
        pytest.param(4, 2, ["e-3", "e-2", "e-1"], False, id="into the minimum"),
        pytest.param(2, 2, ["e-0", "e-1"], False, id="the whole gang"),
    ],
)
def test_keeps_gang(running: int, min_member: int, taken: list[str], keeps: bool) -> None:
    ssn, _ = _session(_elastic_job(running=running, min_member=min_member))
    uids = {str(b.task(ssn, name).uid) for name in taken}
    assert keeps_gang(_job(ssn, "e"), uids) is keeps


@pytest.mark.parametrize(
    "pods, min_member, elastic",
    [
        pytest.param(4, 2, True, id="fewer required than pods"),
        pytest.param(4, 4, False, id="a gang"),
        pytest.param(1, 0, True, id="minMember 0"),
    ],
)
def test_is_elastic(pods: int, min_member: int, elastic: bool) -> None:
    ssn, _ = _session(_elastic_job(running=pods, min_member=min_member))
    assert is_elastic(_job(ssn, "e")) is elastic


def test_an_unreadable_queue_min_runtime_keeps_the_queue_with_the_default() -> None:
    """Issue 3, bad input: the queue is kept; its min-runtime falls back (parent, then plugin default); the
    snapshot reports the field on the Queue."""
    raw = v.queue("b1", parent="dept-b", reclaimMinRuntime="a while")
    queue: Queue = PARSERS["Queue"](raw)
    assert queue.reclaim_min_runtime is None
    assert queue.warnings == [
        "spec.reclaimMinRuntime: invalid duration 'a while': want a Go duration such as "
        '"90s", "10m" or "1h30m"; using the parent queue\'s or the default'
    ]
    objects = [
        v.queue("dept-b", reclaimMinRuntime="20m"),
        raw,
        v.queue("a1"),
        *v.job("r", queue="a1"),
        *v.job("x", queue="b1"),
    ]
    ssn, plugin = _session(objects, reclaimResolveMethod="queue")
    assert plugin.reclaim_min_runtime(_job(ssn, "r"), _job(ssn, "x")) == 1200.0
    [problem] = ssn.snapshot.problems
    assert (problem.kind, problem.key, problem.reason) == ("Queue", "b1", "InvalidField")
    assert "b1" in ssn.snapshot.queues
