"""subgrouporder: needy members first, required before optional, then by progress; ties left to the name."""

from __future__ import annotations

import pytest

from kai_scheduler.api import constants
from kai_scheduler.cluster.job_info import JobInfo, Member
from kai_scheduler.plugins.subgrouporder import SubGroupOrder
from tests.plugins import builders as b
from tests.plugins.builders import node, pod, podgroup, sub_group

# member: (minMember, running pods); "pair" is a SubGroupSet of two PodSets needing both.
MEMBERS = {
    "short": (2, 1),
    "done": (1, 1),
    "ahead": (2, 3),
    "idle-opt": (0, 0),
    "busy-opt": (0, 2),
    "done-b": (1, 1),
    "pair-x": (1, 1),
    "pair-y": (1, 0),
}


def _job() -> JobInfo:
    groups = [sub_group("pair", min_sub_group=2)]
    groups += [
        sub_group(name, min_member=need, parent="pair" if name.startswith("pair-") else None)
        for name, (need, _) in MEMBERS.items()
    ]
    pods = [
        pod(f"{name}-{i}", group="job", node="n1" if i < running else "", labels={constants.LABEL_SUBGROUP_NAME: name})
        for name, (_, running) in MEMBERS.items()
        for i in range(4)
    ]
    snap = b.snapshot(nodes=[node("n1", cpu="64")], pods=pods, podgroups=[podgroup("job", sub_groups=groups)])
    return snap.jobs["pg-job"]


def _member(job: JobInfo, name: str) -> Member:
    return next(c for c in job.root.children if c.name == name)


@pytest.mark.parametrize(
    "left, right, want",
    [
        pytest.param("short", "done", -1, id="below threshold before satisfied"),
        pytest.param("pair", "done", -1, id="a SubGroupSet with an unsatisfied child is below threshold"),
        pytest.param("done", "idle-opt", -1, id="required before optional"),
        pytest.param("idle-opt", "busy-opt", -1, id="optional ones by fewer allocated"),
        pytest.param("done", "ahead", -1, id="satisfied ones by lower allocated/threshold"),
        pytest.param("ahead", "done", 1, id="higher allocated/threshold later"),
        pytest.param("done", "done-b", 0, id="equal progress is a tie"),
    ],
)
def test_subgroup_order(left: str, right: str, want: int) -> None:
    job = _job()
    assert SubGroupOrder().subgroup_order(_member(job, left), _member(job, right)) == want


def test_session_sorts_members_with_name_as_tie_break() -> None:
    job = _job()
    ssn = b.session(b.snapshot(nodes=[node("n1")]), SubGroupOrder())
    ordered = sorted(job.root.children, key=ssn.member_key)
    assert [m.name for m in ordered] == ["pair", "short", "done", "done-b", "ahead", "idle-opt", "busy-opt"]
