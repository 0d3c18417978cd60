"""JobInfo: which tasks the next allocation attempt places (§3.5), readiness (§3.4) and staleness (§3.11).

Tasks and subgroup members are ordered by name here, so each row states which ones are picked.
"""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.cluster.job_info import DEFAULT_POD_SET, JobInfo, PodSet, SubGroupSet
from tests import builders as b
from tests.builders import sub_group

JSON = dict[str, Any]


def _by_name(item: Any) -> str:
    return str(item.name)


def _job(pods: list[JSON], **podgroup: Any) -> JobInfo:
    snap = b.snapshot([b.queue("q"), b.node("n", gpus=64, cpu="512", pods=500), b.podgroup("j", **podgroup), *pods])
    return snap.jobs["pg-j"]


def _pods(spec: str) -> list[JSON]:
    """Pods of job j from a compact spec: "a0:R a1:P b0:G" → name:status (R running, P pending, G gated,
    S succeeded, X releasing); the subgroup is the name without its trailing digits."""
    out = []
    for item in spec.split():
        name, _, status = item.partition(":")
        subgroup = name.rstrip("0123456789")
        kwargs: dict[str, Any] = {"group": "j", "subgroup": subgroup if subgroup != "p" else ""}
        if status in ("R", "X"):
            kwargs["node"] = "n"
        if status == "X":
            kwargs["deleted_at"] = b.NOW
        if status == "G":
            kwargs["gated"] = True
        if status == "S":
            kwargs["phase"] = "Succeeded"
        out.append(b.pod(name, **kwargs))
    return out


def _to_allocate(job: JobInfo) -> list[str]:
    return sorted(t.name for t in job.tasks_to_allocate(_by_name, _by_name))


FLAT = [
    pytest.param("p0:P p1:P p2:P p3:P", 3, ["p0", "p1", "p2"], id="a gang gets its minimum all at once"),
    pytest.param("p0:R p1:P p2:P p3:P", 3, ["p1", "p2"], id="a partly running gang gets the rest of its minimum"),
    pytest.param("p0:R p1:R p2:P p3:P", 2, ["p2"], id="a satisfied gang gets one elastic task per attempt"),
    pytest.param("p0:P p1:P p2:P", 0, ["p0"], id="minMember 0 is fully elastic: one at a time"),
    pytest.param("p0:P p1:P p2:P", None, ["p0"], id="a nil minMember is 1"),
    pytest.param("p0:R p1:R", 2, [], id="nothing pending, nothing to allocate"),
    pytest.param("p0:P p1:P p2:G", 2, ["p0", "p1"], id="gated pods are never allocated"),
]


@pytest.mark.parametrize("pods, min_member, want", FLAT)
def test_flat_gang(pods: str, min_member: int | None, want: list[str]) -> None:
    assert _to_allocate(_job(_pods(pods), min_member=min_member)) == want


def test_a_flat_podgroup_is_one_default_pod_set() -> None:
    job = _job(_pods("p0:P p1:P"), min_member=2)
    assert list(job.pod_sets) == [DEFAULT_POD_SET]
    assert job.pod_sets[DEFAULT_POD_SET].min_available == 2
    assert job.min_available() == 2


SUBGROUPS = [
    pytest.param(
        "a0:P a1:P b0:P b1:P",
        1,
        [sub_group("a", min_member=2), sub_group("b", min_member=2)],
        ["a0", "a1"],
        id="minSubGroup 1 takes the first member's minimum",
    ),
    pytest.param(
        "a0:R a1:R a2:P b0:P b1:P",
        1,
        [sub_group("a", min_member=2), sub_group("b", min_member=2)],
        ["a2"],
        id="once minSubGroup is met, one elastic task from the first member that has one",
    ),
    pytest.param(
        "a0:R b0:P c0:P",
        2,
        [sub_group(n, min_member=1) for n in "abc"],
        ["b0"],
        id="satisfied members are skipped when picking the K still missing",
    ),
    pytest.param(
        "a0:P b0:P",
        None,
        [sub_group("a", min_member=1), sub_group("b", min_member=1)],
        ["a0", "b0"],
        id="a nil minSubGroup needs every member",
    ),
    pytest.param(
        "m0:P w0:P w1:P x0:P x1:P",
        None,
        [
            sub_group("m", min_member=1),
            sub_group("workers", min_sub_group=1),
            sub_group("w", min_member=2, parent="workers"),
            sub_group("x", min_member=2, parent="workers"),
        ],
        ["m0", "w0", "w1"],
        id="nested: the master and one worker group",
    ),
    pytest.param(
        "m0:R w0:R w1:R x0:P x1:P",
        None,
        [
            sub_group("m", min_member=1),
            sub_group("workers", min_sub_group=1),
            sub_group("w", min_member=2, parent="workers"),
            sub_group("x", min_member=2, parent="workers"),
        ],
        ["x0", "x1"],
        id="nested: an optional member beyond minSubGroup comes whole, as its own gang",
    ),
    pytest.param(
        "m0:R w0:R w1:R x0:R x1:R x2:P",
        None,
        [
            sub_group("m", min_member=1),
            sub_group("workers", min_sub_group=1),
            sub_group("w", min_member=2, parent="workers"),
            sub_group("x", min_member=2, parent="workers"),
        ],
        ["x2"],
        id="nested and every member satisfied: elastic extras one at a time",
    ),
]


@pytest.mark.parametrize("pods, min_sub_group, groups, want", SUBGROUPS)
def test_subgroups(pods: str, min_sub_group: int | None, groups: list[JSON], want: list[str]) -> None:
    job = _job(_pods(pods), min_member=None, min_sub_group=min_sub_group, sub_groups=groups)
    assert _to_allocate(job) == want


def test_subgroup_tree_shape() -> None:
    groups = [
        sub_group("m", min_member=1),
        sub_group("workers", min_sub_group=1),
        sub_group("w", min_member=2, parent="workers"),
        sub_group("x", min_member=2, parent="workers"),
    ]
    job = _job(_pods("m0:P w0:P"), min_member=None, sub_groups=groups)
    assert [c.name for c in job.root.children] == ["m", "workers"]
    workers = job.root.children[1]
    assert isinstance(workers, SubGroupSet) and workers.required() == 1
    assert [c.name for c in workers.children] == ["w", "x"]
    assert all(isinstance(c, PodSet) and c.parent is workers for c in workers.children)
    assert sorted(job.pod_sets) == ["m", "w", "x"]


def test_a_pod_naming_an_unknown_subgroup_is_set_aside() -> None:
    job = _job(_pods("a0:P zz0:P"), min_member=None, sub_groups=[sub_group("a", min_member=1)])
    assert [t.name for t in job.tasks] == ["a0"]
    assert [t.name for t in job.unassigned] == ["zz0"]


READY = [
    pytest.param("p0:P p1:P p2:P", {"min_member": 3}, True, id="enough pending pods"),
    pytest.param("p0:R p1:R p2:P", {"min_member": 3}, True, id="running pods count"),
    pytest.param("p0:P p1:P p2:G", {"min_member": 3}, False, id="gated pods do not count"),
    pytest.param("p0:S p1:P", {"min_member": 2}, False, id="succeeded pods do not count"),
    pytest.param("p0:X p1:P", {"min_member": 2}, False, id="releasing pods do not count"),
    pytest.param(
        "a0:P b0:G",
        {
            "min_member": None,
            "min_sub_group": 1,
            "sub_groups": [sub_group("a", min_member=1), sub_group("b", min_member=1)],
        },
        True,
        id="one ready member is enough for minSubGroup 1",
    ),
    pytest.param(
        "a0:P b0:G",
        {
            "min_member": None,
            "min_sub_group": 2,
            "sub_groups": [sub_group("a", min_member=1), sub_group("b", min_member=1)],
        },
        False,
        id="minSubGroup 2 needs both members ready",
    ),
]


@pytest.mark.parametrize("pods, podgroup, ready", READY)
def test_readiness(pods: str, podgroup: dict[str, Any], ready: bool) -> None:
    assert _job(_pods(pods), **podgroup).is_ready() is ready


STALE = [
    pytest.param("p0:P p1:P p2:P", 3, False, id="nothing running is not stale"),
    pytest.param("p0:R p1:R p2:P", 3, True, id="a running gang below its minimum is stale"),
    pytest.param("p0:R p1:R", 2, False, id="a gang at its minimum is not stale"),
    pytest.param("p0:S p1:R p2:P", 3, False, id="a job with a succeeded pod is not stale"),
    pytest.param("p0:R p1:X", 2, False, id="releasing pods count as used"),
]


@pytest.mark.parametrize("pods, min_member, stale", STALE)
def test_staleness(pods: str, min_member: int, stale: bool) -> None:
    assert _job(_pods(pods), min_member=min_member).is_stale() is stale


def test_gang_satisfaction() -> None:
    assert not _job(_pods("p0:R p1:P"), min_member=2).is_gang_satisfied()
    assert _job(_pods("p0:R p1:R p2:P"), min_member=2).is_gang_satisfied()


@pytest.mark.parametrize(
    "spec, pending",
    [("p0:R p1:G p2:S", False), ("p0:R p1:P", True), ("p0:X", False), ("p0:P", True)],
)
def test_a_job_has_pending_tasks_when_one_is_pending_not_gated_or_releasing(spec: str, pending: bool) -> None:
    job = _job(_pods(spec))
    assert job.has_pending() is pending
    assert job.has_pending() == any(t.is_pending for t in job.tasks)
