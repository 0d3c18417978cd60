"""The session's one dispatcher per combination rule (§4): how answers on each extension point combine.

Cluster: nodes n1, n2, n3 with 8 GPUs each; job `a` (created first) and job `b` each have one pending pod;
queues `q1` and `q2`. Plugins here are stand-ins that register the callables of each test, in the order given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.scheduler.scheduler import load_config
from tests import builders as b

Hook = tuple[points.ExtensionPoint[Any], Callable[..., Any]]


class _Plugin:
    def __init__(self, name: str, *hooks: Hook) -> None:
        self.name = name
        self._hooks = hooks

    def on_session_open(self, ssn: Session) -> None:
        for point, fn in self._hooks:
            ssn.add(point, fn)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _session(*plugins: _Plugin) -> Session:
    snap = b.snapshot(
        [
            b.queue("q1"),
            b.queue("q2"),
            b.node("n1"),
            b.node("n2"),
            b.node("n3"),
            b.podgroup("a", queue="q1", created=b.NOW - 20),
            b.pod("a-0", group="a", gpus=1),
            b.podgroup("b", queue="q2", created=b.NOW - 10),
            b.pod("b-0", group="b", gpus=1),
        ]
    )
    config: SchedulerConfig = load_config(None)
    ssn = Session(snap, config, list(plugins))
    ssn.open()
    return ssn


def _jobs(ssn: Session) -> tuple[JobInfo, JobInfo]:
    by_name = {job.name: job for job in ssn.snapshot.jobs.values()}
    return by_name["a"], by_name["b"]


def _reject(plugin: str) -> points.Reject:
    return points.Reject(plugin, "Unschedulable", f"no ({plugin})")


# --- FIRST_NONZERO and its tie-breaks -------------------------------------------------------------------


def test_first_non_zero_answer_wins_in_tier_order() -> None:
    ssn = _session(
        _Plugin("zero", (points.JOB_ORDER, lambda x, y: 0)),
        _Plugin("first", (points.JOB_ORDER, lambda x, y: 1)),
        _Plugin("second", (points.JOB_ORDER, lambda x, y: -1)),
    )
    a, b_ = _jobs(ssn)
    assert ssn.compare_jobs(a, b_) == 1


def test_jobs_tie_break_on_creation_then_uid() -> None:
    ssn = _session(_Plugin("zero", (points.JOB_ORDER, lambda x, y: 0)))
    a, b_ = _jobs(ssn)
    assert ssn.compare_jobs(a, b_) == -1 and ssn.compare_jobs(b_, a) == 1  # a is older
    b_.creation = a.creation
    assert ssn.compare_jobs(a, b_) == (-1 if a.uid < b_.uid else 1)
    assert ssn.compare_jobs(a, a) == 0


def test_queues_tie_break_on_creation_then_name() -> None:
    ssn = _session()
    q1, q2 = ssn.snapshot.queues["q1"], ssn.snapshot.queues["q2"]
    q2.creation = q1.creation
    assert ssn.compare_queues(q1, q2, None, None) == -1
    ssn = _session(_Plugin("p", (points.QUEUE_ORDER, lambda x, y, lj, rj: 1)))
    assert ssn.compare_queues(ssn.snapshot.queues["q1"], ssn.snapshot.queues["q2"], None, None) == 1


def test_the_queue_comparator_is_a_tie_breaking_plugins_own_and_else_the_sessions() -> None:
    """A plugin that breaks its own ties is called alone; one that may answer 0 keeps the session's tie-break."""

    def order(left: Any, right: Any, _lj: Any, _rj: Any) -> int:
        return -1 if left.name < right.name else (1 if left.name > right.name else 0)

    ties = _session(_Plugin("p", (points.QUEUE_ORDER, lambda x, y, lj, rj: 0)))
    assert ties.queue_comparator() == ties.compare_queues
    assert ties.queue_comparator()(ties.snapshot.queues["q1"], ties.snapshot.queues["q2"], None, None) == -1
    breaking = _session(_Plugin("p", (points.QUEUE_ORDER, points.breaks_ties(order))))
    assert breaking.queue_comparator() is order
    both = _session(_Plugin("p", (points.QUEUE_ORDER, order)), _Plugin("r", (points.QUEUE_ORDER, order)))
    points.breaks_ties(order)
    assert both.queue_comparator() == both.compare_queues  # two plugins: the session combines them


def test_tasks_tie_break_on_creation_then_name() -> None:
    ssn = _session()
    t1, t2 = b.task(ssn, "a-0"), b.task(ssn, "b-0")
    t2.creation = t1.creation
    assert ssn.compare_tasks(t1, t2) == -1 and ssn.compare_tasks(t2, t1) == 1
    ssn = _session(_Plugin("p", (points.TASK_ORDER, lambda x, y: -1)))
    assert ssn.compare_tasks(b.task(ssn, "b-0"), b.task(ssn, "a-0")) == -1


# --- FIRST_REJECT: the first rejection, named after its plugin ------------------------------------------


@pytest.mark.parametrize(
    ("point", "call"),
    [
        (points.PRE_PREDICATE, lambda ssn, job, task: ssn.pre_predicate(task, job)),
        (points.JOB_OVER_CAPACITY, lambda ssn, job, task: ssn.job_over_capacity(job, [task])),
        (points.VICTIM_INVARIANT_PRE_PREDICATE, lambda ssn, job, task: ssn.victim_invariant_pre_predicate(task, job)),
        (points.CAN_RECLAIM, lambda ssn, job, task: ssn.can_reclaim(job, [task])),
        (points.RECLAIM_VALIDATOR, lambda ssn, job, task: ssn.validate(points.RECLAIM_VALIDATOR, job, [task], None)),
        (points.PREEMPT_VALIDATOR, lambda ssn, job, task: ssn.validate(points.PREEMPT_VALIDATOR, job, [task], None)),
    ],
)
def test_first_rejection_wins_and_names_its_plugin(
    point: points.ExtensionPoint[Any], call: Callable[..., points.Reject | None]
) -> None:
    calls: list[str] = []

    def answer(name: str, reject: points.Reject | None) -> Callable[..., points.Reject | None]:
        def fn(*_: Any) -> points.Reject | None:
            calls.append(name)
            return reject

        return fn

    ssn = _session(
        _Plugin("yes", (point, answer("yes", None))),
        _Plugin("no", (point, answer("no", _reject("mislabelled")))),
        _Plugin("later", (point, answer("later", _reject("later")))),
    )
    a, _ = _jobs(ssn)
    reject = call(ssn, a, b.task(ssn, "a-0"))
    assert reject == points.Reject("no", "Unschedulable", "no (mislabelled)")
    assert calls == ["yes", "no"]  # the rejection stops the walk
    assert call(_session(), a, b.task(ssn, "a-0")) is None


# --- FIRST_ANSWER, ALL_TRUE, ALL --------------------------------------------------------------------------


def test_queue_share_is_the_first_answer() -> None:
    share: Any = object()
    ssn = _session(
        _Plugin("none", (points.QUEUE_SHARE, lambda q: None)),
        _Plugin("one", (points.QUEUE_SHARE, lambda q: share)),
        _Plugin("two", (points.QUEUE_SHARE, lambda q: object())),
    )
    assert ssn.queue_share("q1") is share
    assert _session().queue_share("q1") is None


@pytest.mark.parametrize("point", [points.RECLAIM_VICTIM_FILTER, points.PREEMPT_VICTIM_FILTER])
def test_victim_filters_and_their_booleans(point: points.ExtensionPoint[points.VictimFilter]) -> None:
    assert point.combine is points.Combine.ALL_TRUE
    ssn = _session(_Plugin("t", (point, lambda p, v: True)), _Plugin("f", (point, lambda p, v: False)))
    a, b_ = _jobs(ssn)
    assert ssn.is_victim(point, a, b_) is False
    ssn = _session(_Plugin("t", (point, lambda p, v: True)), _Plugin("t2", (point, lambda p, v: True)))
    assert ssn.is_victim(point, a, b_) is True
    assert _session().is_victim(point, a, b_) is True


def test_a_victim_filter_fetched_once_answers_as_is_victim_and_stops_at_the_first_refusal() -> None:
    point = points.RECLAIM_VICTIM_FILTER
    asked: list[str] = []

    def answer(name: str, value: bool) -> Any:
        return lambda p, v: asked.append(name) or value

    ssn = _session(_Plugin("t", (point, answer("t", True))), _Plugin("f", (point, answer("f", False))))
    ssn2 = _session(_Plugin("f", (point, answer("f", False))), _Plugin("t", (point, answer("t", True))))
    a, b_ = _jobs(ssn)
    assert ssn.victim_filter(point)(a, b_) is False and asked == ["t", "f"]
    asked.clear()
    assert ssn2.victim_filter(point)(a, b_) is False and asked == ["f"]
    assert _session().victim_filter(point)(a, b_) is True


def test_events_all_run_in_order() -> None:
    seen: list[str] = []
    ssn = _session(
        _Plugin(
            "p1",
            (points.PRE_JOB_ALLOCATION, lambda job: seen.append("p1")),
            (points.ON_JOB_SOLUTION_START, lambda job: seen.append("s1")),
        ),
        _Plugin(
            "p2",
            (points.PRE_JOB_ALLOCATION, lambda job: seen.append("p2")),
            (points.ON_JOB_SOLUTION_START, lambda job: seen.append("s2")),
        ),
    )
    a, _ = _jobs(ssn)
    ssn.pre_job_allocation(a)
    ssn.job_solution_start(a)
    assert seen == ["p1", "p2", "s1", "s2"]


# --- SUM, CHAIN, AND_MASKS ----------------------------------------------------------------------------------


def test_node_scores_sum_and_ties_go_to_the_lower_node_name() -> None:
    """A plugin may answer with a read-only array it keeps for the session: it is never added into."""
    frozen = np.array([1.0, 0.0, 1.0])
    frozen.flags.writeable = False
    ssn = _session(
        _Plugin("s1", (points.NODE_ORDER, lambda t, c: frozen)),
        _Plugin("none", (points.NODE_ORDER, lambda t, c: None)),
        _Plugin("s2", (points.NODE_ORDER, lambda t, c: np.array([0.0, 2.0, 1.0]))),
        _Plugin("s3", (points.NODE_ORDER, lambda t, c: frozen)),
    )
    task, everywhere = b.task(ssn, "a-0"), np.ones(3, dtype=bool)
    assert ssn.node_scores(task, everywhere).tolist() == [2.0, 2.0, 3.0]
    assert ssn.best_node(task, everywhere) == 2
    assert ssn.best_node(task, np.array([True, True, False])) == 0  # n1 and n2 tie: the lower name
    assert frozen.tolist() == [1.0, 0.0, 1.0]  # a plugin's array is never added into
    assert _session().node_scores(task, everywhere).tolist() == [0.0, 0.0, 0.0]


def test_gpu_scores_sum_per_group() -> None:
    ssn = _session(
        _Plugin("g1", (points.GPU_ORDER, lambda t, row, groups: [1.0] * len(groups))),
        _Plugin("g2", (points.GPU_ORDER, lambda t, row, groups: [float(i) for i in range(len(groups))])),
    )
    task = b.task(ssn, "a-0")
    assert ssn.gpu_scores(task, 0, ["x", "y", "z"]) == [1.0, 2.0, 3.0]
    assert _session().gpu_scores(task, 0, ["x", "y"]) == [0.0, 0.0]


def test_subset_nodes_chain_splits_every_set() -> None:
    def halves(job: Any, member: Any, tasks: Any, nodes: points.Mask) -> list[points.Mask] | None:
        rows = np.flatnonzero(nodes)
        if len(rows) < 2:
            return None
        first = np.zeros_like(nodes)
        first[rows[:1]] = True
        return [first, nodes & ~first]

    ssn = _session(_Plugin("h1", (points.SUBSET_NODES, halves)), _Plugin("h2", (points.SUBSET_NODES, halves)))
    a, _ = _jobs(ssn)
    sets = ssn.subset_nodes(a, a.root, [b.task(ssn, "a-0")], np.ones(3, dtype=bool))
    assert [s.tolist() for s in sets] == [[True, False, False], [False, True, False], [False, False, True]]
    assert len(_session().subset_nodes(a, a.root, [], np.ones(3, dtype=bool))) == 1


def test_predicates_and_masks_and_name_the_plugin_that_removed_nodes() -> None:
    calls: list[str] = []

    def only(name: str, keep: list[bool]) -> Callable[..., points.NodeFilter]:
        def fn(task: Any, candidates: points.Mask) -> points.NodeFilter:
            calls.append(name)
            return points.NodeFilter(np.array(keep), f"node(s) refused by {name}")

        return fn

    ssn = _session(
        _Plugin("left", (points.PREDICATE, only("left", [True, True, False]))),
        _Plugin("right", (points.PREDICATE, only("right", [False, True, True]))),
        _Plugin("none", (points.PREDICATE, only("none", [False, False, True]))),
    )
    task = b.task(ssn, "a-0")
    mask, report = ssn.feasible_nodes(task)
    assert mask.tolist() == [False, False, False]
    assert calls == ["left", "right", "none"]
    assert report.removed_by == [
        ("left", "node(s) refused by left", 1),
        ("right", "node(s) refused by right", 1),
        ("none", "node(s) refused by none", 1),
    ]
    assert report.plugins == ("left", "right", "none")
    assert report.message() == (
        "0/3 nodes are available: 1 node(s) refused by left, 1 node(s) refused by right, 1 node(s) refused by none"
    )
    calls.clear()
    mask, _ = ssn.feasible_nodes(task, np.array([True, False, False]))
    assert calls == ["left", "right"]  # an empty mask stops the walk


def test_the_session_fits_resources_when_no_predicate_did() -> None:
    ssn = _session(_Plugin("all", (points.PREDICATE, lambda t, c: points.NodeFilter(np.ones(3, dtype=bool), "x"))))
    task = b.task(ssn, "a-0")
    task.request = task.request.copy()
    task.request[:] = 1e9  # fits nowhere
    mask, report = ssn.feasible_nodes(task)
    assert not mask.any()
    assert report.removed_by == [("session", "insufficient resources", 3)]
    fitted = _session(
        _Plugin("fits", (points.PREDICATE, lambda t, c: points.NodeFilter(c.copy(), "x", fits_resources=True)))
    )
    assert fitted.feasible_nodes(task)[0].all()  # the plugin said it applied the fit: not repeated


# --- what actions record through the session -----------------------------------------------------------


def test_fit_errors_changed_inside_a_provisional_block_are_undone() -> None:
    ssn = _session()
    a, b_ = _jobs(ssn)
    ssn.record_fit_error(a, _reject("before"))
    with ssn.provisional_fit_errors():
        ssn.record_fit_error(a, _reject("inside"))
        ssn.record_fit_error(b_, _reject("inside"))
        ssn.clear_fit_errors(a)
    assert ssn.job_fit_errors == {a.uid: [_reject("before")]}
    with pytest.raises(RuntimeError), ssn.provisional_fit_errors():
        ssn.record_fit_error(b_, _reject("inside"))
        raise RuntimeError
    assert b_.uid not in ssn.job_fit_errors


def test_a_summary_goes_in_front_of_the_reasons() -> None:
    ssn = _session()
    a, _ = _jobs(ssn)
    ssn.record_fit_error(a, _reject("task"))
    ssn.record_fit_error(a, _reject("summary"), first=True)
    assert [r.plugin for r in ssn.job_fit_errors[a.uid]] == ["summary", "task"]
    ssn.record_started(a)
    assert ssn.started_jobs == {a.uid}


# --- values derived from the placements -------------------------------------------------------------------


def test_a_derived_value_is_computed_once_until_a_task_moves() -> None:
    ssn = b.session(b.snapshot([b.node("n1"), b.queue("q"), b.podgroup("a"), b.pod("a-0", group="a", gpus=1)]))
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert [ssn.derived("x", compute) for _ in range(5)] == [1] * 5
    stmt = ssn.statement()
    stmt.allocate(b.task(ssn, "a-0"), "n1", ())
    assert ssn.derived("x", compute) == 2  # the placement changed: computed again
    stmt.discard()
    assert ssn.derived("x", compute) == 3  # and again after the rollback
    assert ssn.derived("x", compute) == 3


# --- the job order as a sort key ------------------------------------------------------------------------


def test_job_key_orders_as_compare_jobs_with_the_default_plugins() -> None:
    """Priority, then elastic band (below, at, above the minimum), then creation (with ties), then uid."""
    raw: list[dict[str, Any]] = [b.priority_class("low", 10), b.priority_class("high", 100), b.queue("q")]
    raw += [b.node(f"n{i}") for i in range(4)]
    for i in range(24):
        name = f"j{(i * 7) % 24:02d}"
        raw.append(
            b.podgroup(name, min_member=1 + i % 3, priority_class=("low", "high")[i % 2], created=b.NOW - 10 * (i % 4))
        )
        raw += [b.pod(f"{name}-{k}", group=name, node=f"n{k}", phase="Running") for k in range(i % 4)]
        raw.append(b.pod(f"{name}-pending", group=name))
    ssn = b.session(b.snapshot(raw))
    jobs = list(ssn.snapshot.jobs.values())
    by_comparison = sorted(jobs, key=functools.cmp_to_key(ssn.compare_jobs))
    assert isinstance(ssn.job_key(jobs[0]), tuple)  # the keyed path, not the comparison
    assert [j.name for j in sorted(jobs, key=ssn.job_key)] == [j.name for j in by_comparison]
    assert len({(j.priority, j.creation) for j in jobs}) < len(jobs)  # ties left to the band and the uid


def test_job_key_compares_when_a_job_order_plugin_gives_no_key() -> None:
    by_name_reversed = _Plugin("p", (points.JOB_ORDER, lambda x, y: (x.name < y.name) - (x.name > y.name)))
    ssn = _session(by_name_reversed)
    a, b_ = _jobs(ssn)
    assert sorted([a, b_], key=ssn.job_key) == [b_, a]  # a is older: a key of the tie-break alone puts it first


def test_job_key_is_the_plugins_keys_then_the_tie_break() -> None:
    def never(left: JobInfo, right: JobInfo) -> int:
        raise AssertionError("a keyed sort calls no comparison")

    ssn = _session(_Plugin("p", (points.JOB_ORDER, never), (points.JOB_ORDER_KEY, lambda job: -len(job.name))))
    a, b_ = _jobs(ssn)
    assert ssn.job_key(a) == (-1, a.creation, a.uid)
    assert sorted([b_, a], key=ssn.job_key) == [a, b_]
