"""Jobs popped through the queue tree (§3.4): at each level the queue whose best job wins the queue order;
re-sorting after a pop; re-queueing; the per-queue depth cap; the same order whatever the input order.

The tree: org-a → a1, a2 and org-b → b1. Most tests register a small "fewest pops first" queue order so each
row says exactly which queue goes next; the last ones use KAI's default plugins.
"""

from __future__ import annotations

import heapq
import itertools
import random

import pytest

from kai_scheduler.actions.common import job_order
from kai_scheduler.actions.common.job_order import JobOrderByQueues
from kai_scheduler.cluster.job_info import JobInfo
from kai_scheduler.cluster.queue_info import QueueInfo
from kai_scheduler.framework import points
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from tests import builders as b

JOBS = {"a1": ["a1-x", "a1-y"], "a2": ["a2-x"], "b1": ["b1-x", "b1-y"]}


def _session(*, queues: tuple[tuple[str, str, int], ...] | None = None) -> Session:
    tree = queues or (
        ("org-a", "", 100),
        ("a1", "org-a", 100),
        ("a2", "org-a", 100),
        ("org-b", "", 100),
        ("b1", "org-b", 100),
    )
    objects = [b.node("n")] + [b.queue(name, parent=parent, priority=prio) for name, parent, prio in tree]
    for i, (queue, jobs) in enumerate(sorted(JOBS.items())):
        for j, job in enumerate(jobs):
            objects += [b.podgroup(job, queue=queue, created=10 * i + j), b.pod(f"{job}-0", group=job, gpus=1)]
    ssn = Session(b.snapshot(objects), SchedulerConfig(), [])
    ssn.open()
    return ssn


class FewestPops:
    """A queue order: the queue (and, above it, the parent) popped fewer times goes first."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.pops: dict[str, int] = {}
        ssn.add(points.QUEUE_ORDER, self.compare)

    def compare(self, left: QueueInfo, right: QueueInfo, _lj: JobInfo | None, _rj: JobInfo | None) -> int:
        return self.pops.get(left.name, 0) - self.pops.get(right.name, 0)

    def popped(self, job: JobInfo) -> None:
        name = job.queue
        while name:
            self.pops[name] = self.pops.get(name, 0) + 1
            name = self.ssn.snapshot.queues[name].parent


def _drain(tree: JobOrderByQueues, order: FewestPops | None = None) -> list[str]:
    out = []
    while (job := tree.pop()) is not None:
        out.append(job.name)
        if order is not None:
            order.popped(job)
    return out


def _jobs(ssn: Session) -> list[JobInfo]:
    return list(ssn.snapshot.jobs.values())


def test_pop_order_follows_the_queue_order_at_every_level() -> None:
    """Each pop re-sorts the popped path: org-a and org-b alternate, and inside org-a, a1 and a2."""
    ssn = _session()
    order = FewestPops(ssn)
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn)), order) == ["a1-x", "b1-x", "a2-x", "b1-y", "a1-y"]


def test_without_a_queue_order_queues_tie_break_by_creation_then_name() -> None:
    """All queues are equal: org-a before org-b, a1 before a2, and jobs by creation time."""
    ssn = _session()
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn))) == ["a1-x", "a1-y", "a2-x", "b1-x", "b1-y"]


def test_job_order_inside_a_leaf_follows_the_job_order_hooks() -> None:
    ssn = _session()
    ssn.add(
        points.JOB_ORDER,
        lambda left, right: (
            -1
            if left.name.endswith("y") and right.name.endswith("x")
            else (1 if left.name.endswith("x") and right.name.endswith("y") else 0)
        ),
    )
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn)))[:2] == ["a1-y", "a1-x"]


def test_a_pushed_job_is_popped_again_in_order() -> None:
    ssn = _session()
    order = FewestPops(ssn)
    tree = JobOrderByQueues(ssn, _jobs(ssn))
    first = tree.pop()
    assert first is not None and first.name == "a1-x"
    order.popped(first)
    tree.push(first)  # an elastic job with pending pods goes back to compete again
    assert _drain(tree, order) == ["b1-x", "a2-x", "b1-y", "a1-x", "a1-y"]


def test_a_job_pushed_into_an_emptied_queue_comes_back() -> None:
    ssn = _session()
    tree = JobOrderByQueues(ssn, [j for j in _jobs(ssn) if j.queue == "a2"])
    job = tree.pop()
    assert job is not None and tree.pop() is None and tree.empty()
    tree.push(job)
    assert not tree.empty()
    assert _drain(tree) == ["a2-x"]


@pytest.mark.parametrize(
    "depth, want",
    [
        pytest.param(1, ["a1-x", "a2-x", "b1-x"], id="depth 1 keeps each leaf's best job"),
        pytest.param(2, ["a1-x", "a1-y", "a2-x", "b1-x", "b1-y"], id="depth 2 keeps all here"),
        pytest.param(None, ["a1-x", "a1-y", "a2-x", "b1-x", "b1-y"], id="no depth keeps all"),
    ],
)
def test_depth_caps_each_leaf(depth: int | None, want: list[str]) -> None:
    ssn = _session()
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn), depth=depth)) == want


def test_jobs_of_unknown_or_parent_queues_are_not_inserted() -> None:
    ssn = _session()
    jobs = _jobs(ssn)
    jobs[0].queue = "org-a"
    jobs[1].queue = "nowhere"
    assert sorted(_drain(JobOrderByQueues(ssn, jobs))) == sorted(j.name for j in jobs[2:])


def test_victim_order_reverses_every_comparison() -> None:
    ssn = _session()
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn), reverse=True)) == ["b1-y", "b1-x", "a2-x", "a1-y", "a1-x"]


@pytest.mark.parametrize("seed", range(5))
def test_the_order_does_not_depend_on_input_order(seed: int) -> None:
    ssn = _session()
    order = FewestPops(ssn)
    jobs = _jobs(ssn)
    random.Random(seed).shuffle(jobs)
    assert _drain(JobOrderByQueues(ssn, jobs), order) == ["a1-x", "b1-x", "a2-x", "b1-y", "a1-y"]


@pytest.mark.parametrize("reverse", [False, True])
def test_jobs_given_by_queue_pop_as_the_same_jobs_given_flat(reverse: bool) -> None:
    """A mapping from queue to its jobs builds the tree the flat list builds; an empty queue makes no node."""
    flat, split = _session(), _session()
    by_queue: dict[str, list[JobInfo]] = {"a2": [], "zz": []}
    for job in _jobs(split):
        by_queue.setdefault(job.queue, []).append(job)
    tree = JobOrderByQueues(split, by_queue, reverse=reverse)
    assert "zz" not in tree._nodes and "a2" in tree._nodes
    assert _drain(tree) == _drain(JobOrderByQueues(flat, _jobs(flat), reverse=reverse))
    empty_a2 = {queue: jobs for queue, jobs in by_queue.items() if queue != "a2"} | {"a2": []}
    assert "a2" not in JobOrderByQueues(_session(), empty_a2)._nodes


def test_every_permutation_of_queue_creation_gives_one_order() -> None:
    orders = set()
    for permutation in itertools.permutations(JOBS):
        ssn = _session()
        jobs = [j for queue in permutation for j in _jobs(ssn) if j.queue == queue]
        orders.add(tuple(_drain(JobOrderByQueues(ssn, jobs))))
    assert len(orders) == 1


# --- with KAI's default plugins (proportion's queue order, priority and elastic job order) ----------------


def test_the_parent_queue_priority_decides_at_the_top_level() -> None:
    """org-hi (priority 150) goes first although its child's priority is lower than org-lo's child's."""
    ssn = b.session(
        b.snapshot(
            [
                b.node("n"),
                b.queue("org-hi", priority=150),
                b.queue("x", parent="org-hi", priority=100),
                b.queue("org-lo", priority=100),
                b.queue("y", parent="org-lo", priority=500),
                b.podgroup("jx", queue="x", created=5),
                b.pod("jx-0", group="jx", gpus=1),
                b.podgroup("jy", queue="y", created=1),
                b.pod("jy-0", group="jy", gpus=1),
            ]
        )
    )
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn))) == ["jx", "jy"]


def test_higher_job_priority_first_within_a_queue() -> None:
    pcs = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in (("train", 50), ("build", 100))
    ]
    ssn = b.session(
        b.snapshot(
            [
                b.node("n"),
                b.queue("q"),
                *pcs,
                b.podgroup("old", created=1, priority_class="train"),
                b.pod("old-0", group="old", gpus=1),
                b.podgroup("new", created=9, priority_class="build"),
                b.pod("new-0", group="new", gpus=1),
                b.podgroup("mid", created=5, priority_class="train"),
                b.pod("mid-0", group="mid", gpus=1),
            ]
        )
    )
    assert _drain(JobOrderByQueues(ssn, _jobs(ssn))) == ["new", "old", "mid"]


# --- cost: comparisons grow linearly with the jobs popped ----------------------------------------------------


def _counted(ssn: Session) -> list[int]:
    """Count the session's job comparisons from now on."""
    calls = [0]
    compare = ssn.compare_jobs

    def counting(left: JobInfo, right: JobInfo) -> int:
        calls[0] += 1
        return compare(left, right)

    ssn.compare_jobs = counting  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("n", [500, 4000])
def test_popping_every_job_of_a_leaf_costs_about_one_comparison_each(n: int) -> None:
    """The leaf sorts once; popping then compares only against jobs put back (a heap of all of them compared
    2·log n times per pop: some 20 at 4,000 jobs)."""
    objects = [b.node("n"), b.queue("q")]
    for i in range(n):
        objects += [b.podgroup(f"j{i}", queue="q", created=i), b.pod(f"j{i}-0", group=f"j{i}", gpus=1)]
    ssn = b.session(b.snapshot(objects))
    order = JobOrderByQueues(ssn, _jobs(ssn))
    calls = _counted(ssn)
    popped = _drain(order)
    assert popped == [f"j{i}" for i in range(n)]
    assert calls[0] <= 2 * n


def test_jobs_put_back_meet_the_sorted_ones_in_order() -> None:
    """A job put back is popped between the sorted ones by the job order (here: older first)."""
    objects = [b.node("n"), b.queue("q")]
    for i in range(6):
        objects += [b.podgroup(f"j{i}", queue="q", created=i), b.pod(f"j{i}-0", group=f"j{i}", gpus=1)]
    ssn = b.session(b.snapshot(objects))
    order = JobOrderByQueues(ssn, _jobs(ssn))
    first, second = order.pop(), order.pop()
    assert first is not None and second is not None
    order.push(second)
    order.push(first)
    assert _drain(order) == ["j0", "j1", "j2", "j3", "j4", "j5"]


class _Entry:
    """A heap entry ordered by `key` alone: entries with equal keys show where the heap keeps each."""

    def __init__(self, key: int) -> None:
        self.key = key

    def __lt__(self, other: _Entry) -> bool:
        return self.key < other.key


def _heaps(seed: int) -> list[_Entry]:
    rng = random.Random(seed)
    heap = [_Entry(rng.randrange(6)) for _ in range(rng.randrange(1, 40))]
    heapq.heapify(heap)
    return heap


@pytest.mark.parametrize("seed", range(40))
def test_the_queue_heaps_are_changed_as_heapq_changes_them(seed: int) -> None:
    """A node's heap entry is taken out and put back as heapq's pop and push would move it, entries with equal
    keys included (their places decide which of two equal queues goes first)."""
    heap = _heaps(seed)
    popped, want = list(heap), list(heap)
    heapq.heappop(want)
    job_order._remove(popped, popped[0])
    assert [id(e) for e in popped] == [id(e) for e in want]
    pushed, want = list(heap), list(heap)
    entry = _Entry(random.Random(seed).randrange(6))
    heapq.heappush(want, entry)
    pushed.append(entry)
    job_order._move_up(pushed, len(pushed) - 1)
    assert [id(e) for e in pushed] == [id(e) for e in want]
    for i in range(len(heap)):  # any entry: the rest stays a heap
        rest = list(heap)
        job_order._remove(rest, heap[i])
        assert sorted(id(e) for e in rest) == sorted(id(e) for e in heap if e is not heap[i])
        assert all(not rest[k] < rest[(k - 1) // 2] for k in range(1, len(rest)))
