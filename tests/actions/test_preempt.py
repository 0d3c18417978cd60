"""preempt end to end, the preemption delay (§1.2), and bad PodGroup fields (issue 3: kept with defaults).

Rule-by-rule cases are scenario files (tests/scenarios/preempt, tests/scenarios/delay).
"""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.actions.common import preemptors
from kai_scheduler.api import PARSERS, constants
from kai_scheduler.api.fields import format_time
from kai_scheduler.api.podgroup import PodGroup
from kai_scheduler.framework.statement import Op
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
PREEMPT = {"actions": "allocate, preempt"}


def full_node(*urgent: JSON) -> list[JSON]:
    """One 1-GPU node running a priority-50 job; the urgent (priority 75) job asks for it."""
    return [
        b.node("n1", gpus=1),
        v.queue("team", gpu_quota=-1),
        *v.job("low", queue="team", node="n1", created=b.NOW - 7200),
        *urgent,
    ]


def urgent(**podgroup: Any) -> list[JSON]:
    return v.job("urgent", queue="team", priority_class="build-preemptible", **podgroup)


def test_preempt_evicts_the_lower_priority_job_with_a_message_naming_the_preemptor() -> None:
    cluster = v.cluster(full_node(*urgent()), config=PREEMPT)
    result = cluster.cycle()
    assert [(op.op, op.task.name) for op in result.operations] == [(Op.EVICT, "low-0"), (Op.PIPELINE, "urgent-0")]
    [event] = v.events(cluster, "Evict")
    assert event["message"] == "preempted by ns/urgent (priority 75) in queue team; this job's priority is 50"


@pytest.mark.parametrize(
    "created_ago, annotations, last_eviction_ago, want_evictions",
    [
        pytest.param(300, {}, None, 1, id="no delay: preempts at once"),
        pytest.param(
            300,
            {constants.ANNOTATION_PREEMPTION_DELAY: "10m"},
            None,
            0,
            id="the PodGroup annotation delays it: 5m < 10m",
        ),
        pytest.param(900, {constants.ANNOTATION_PREEMPTION_DELAY: "10m"}, None, 1, id="the delay has passed: 15m"),
        pytest.param(
            900,
            {constants.ANNOTATION_PREEMPTION_DELAY: "10m"},
            120,
            0,
            id="the delay counts from the last eviction when later than creation",
        ),
        pytest.param(
            300,
            {constants.ANNOTATION_PREEMPTION_DELAY: "ten minutes"},
            None,
            1,
            id="a malformed delay is ignored (default: none)",
        ),
    ],
)
def test_the_preemption_delay(
    created_ago: float, annotations: dict[str, str], last_eviction_ago: float | None, want_evictions: int
) -> None:
    notes = dict(annotations)
    if last_eviction_ago is not None:
        notes[constants.ANNOTATION_LAST_EVICTION_TIMESTAMP] = format_time(b.NOW - last_eviction_ago)
    cluster = v.cluster(full_node(*urgent(created=b.NOW - created_ago, annotations=notes)), config=PREEMPT)
    assert cluster.cycle().evictions == want_evictions


def test_a_delayed_job_says_why_it_waits() -> None:
    cluster = v.cluster(full_node(*urgent(created=b.NOW - 60, preemptionDelay="10m")), config=PREEMPT)
    result = cluster.cycle()
    reasons = [(r.reason, r.message) for errors in result.fit_errors.values() for r in errors]
    assert (
        constants.REASON_PREEMPTION_DELAY_NOT_ELAPSED,
        "may not evict other jobs for another 9m (preemption delay 10m)",
    ) in reasons
    [condition] = cluster.store.get("podgroups", "urgent", b.NAMESPACE)["status"]["schedulingConditions"]
    assert constants.REASON_PREEMPTION_DELAY_NOT_ELAPSED in [r["reason"] for r in condition["reasons"]]


def test_the_spec_delay_wins_over_the_annotation() -> None:
    raw = b.podgroup("pg", preemptionDelay="1m", annotations={constants.ANNOTATION_PREEMPTION_DELAY: "1h"})
    assert PodGroup.from_dict(raw).preemption_delay == 60.0


@pytest.mark.parametrize(
    "spec, annotations, field, want",
    [
        pytest.param(
            {"preemptibility": "sometimes"},
            {},
            "preemptibility",
            "",
            id="an unknown preemptibility falls back to the priority",
        ),
        pytest.param(
            {"preemptionDelay": "ten minutes"}, {}, "preemption_delay", None, id="a malformed preemptionDelay: no delay"
        ),
        pytest.param(
            {},
            {constants.ANNOTATION_PREEMPTION_DELAY: "ten minutes"},
            "preemption_delay",
            None,
            id="a malformed preemption-delay annotation: no delay",
        ),
        pytest.param(
            {"stalenessGracePeriod": "1d"},
            {},
            "staleness_grace_period",
            None,
            id="a grace period in days: the scheduler default",
        ),
    ],
)
def test_bad_podgroup_fields_fall_back_to_defaults(
    spec: JSON, annotations: dict[str, str], field: str, want: Any
) -> None:
    """Issue 3, bad input: the PodGroup is kept, the field takes its documented default, a warning names it."""
    podgroup = PARSERS["PodGroup"](b.podgroup("pg", annotations=annotations, **spec))
    assert getattr(podgroup, field) == want
    [warning] = podgroup.warnings
    assert warning.endswith("using the default") or "using the default" in warning
    assert podgroup.to_dict()["spec"].get("preemptibility") in (None, "preemptible", "non-preemptible")


def test_a_bad_field_is_reported_on_its_podgroup_and_nothing_else_is_affected() -> None:
    """The bad job still runs with defaults (a malformed delay = no delay: it preempts); a Warning event on the
    PodGroup names the field, once; the other job is untouched."""
    bad = urgent(annotations={constants.ANNOTATION_PREEMPTION_DELAY: "ten minutes"})
    bad[0]["spec"]["preemptibility"] = "sometimes"
    cluster = v.cluster(full_node(*bad), config=PREEMPT)
    result = cluster.cycle()
    assert result.evictions == 1
    assert {(p.kind, p.key, p.reason) for p in result.problems} == {("PodGroup", "ns/urgent", "InvalidField")}
    messages = sorted(e["message"] for e in v.events(cluster, "InvalidField"))
    assert messages == [
        "metadata.annotations.kai.scheduler/preemption-delay: invalid duration 'ten minutes': want a Go duration "
        'such as "90s", "10m" or "1h30m"; using the default',
        "spec.preemptibility: unknown value 'sometimes'; want preemptible or non-preemptible; using the default "
        "(from the priority)",
    ]
    cluster.between_cycles()
    cluster.cycle()
    assert len(v.events(cluster, "InvalidField")) == 2, "each warning is written once"


def test_preemption_delay_left() -> None:
    [group, *_] = v.job("j", queue="team", created=b.NOW - 100, preemptionDelay="5m")
    snap = b.snapshot([v.queue("team"), group])
    job = next(iter(snap.jobs.values()))
    assert preemptors.preemption_delay_left(job, b.NOW) == 200.0
    assert preemptors.preemption_delay_left(job, b.NOW + 200) is None


def test_a_job_larger_than_any_node_is_not_searched_for_victims(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16-GPU pod on an 8-GPU node: no eviction can help (a victim-invariant pre-predicate says so), so the
    job is skipped without a victim search; on a large cluster that search is what a cycle would spend its
    time on. The 1-GPU job behind it is searched for and preempts."""
    from kai_scheduler.actions.common import solver

    searched: list[str] = []
    real_solve = solver.solve

    def spy(ssn: Any, stmt: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        searched.append(job.name)
        return real_solve(ssn, stmt, job, *args, **kwargs)

    monkeypatch.setattr(solver, "solve", spy)
    objects = [b.node("n1", gpus=8), v.queue("team", gpu_quota=-1)]
    for i in range(8):
        objects += v.job(f"low{i}", queue="team", node="n1", created=b.NOW - 7200 + i)
    objects += v.job("huge", queue="team", gpus=16, priority_class="build-preemptible", created=b.NOW - 60)
    objects += v.job("small", queue="team", priority_class="build-preemptible", created=b.NOW - 30)
    result = v.cluster(objects, config=PREEMPT).cycle()
    assert searched == ["small"]
    assert result.evictions == 1
