"""The victim-search machinery (actions/common: victims, scenario, solver, signatures), piece by piece."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kai_scheduler.actions.common import budget, scenario, signatures, solver, victims
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
WHY = Eviction("test", "", "")


def _session(objects: list[JSON]) -> Session:
    return b.session(b.snapshot([*v.priority_classes(), *objects]))


def _job(ssn: Session, name: str) -> Any:
    return next(j for j in ssn.snapshot.jobs.values() if j.name == name)


def _running(name: str, pods: int, *, min_member: int | None = None, **spec: Any) -> list[JSON]:
    return v.job(name, queue="q", pods=pods, node="n1", min_member=min_member, **spec)


# --- which tasks a victim gives ---------------------------------------------------------------------------------


def _subgroup_job() -> list[JSON]:
    """workers (minMember 1, 3 pods) and ps (minMember 1, 1 pod) under a root needing 1 of the 2 members."""
    group = b.podgroup(
        "sg",
        queue="q",
        min_member=None,
        min_sub_group=1,
        priority_class="train",
        sub_groups=[b.sub_group("ps", min_member=1), b.sub_group("workers", min_member=1)],
    )
    pods = [
        b.pod("ps-0", group="sg", subgroup="ps", gpus=1, node="n1"),
        *(b.pod(f"w-{i}", group="sg", subgroup="workers", gpus=1, node="n1") for i in range(3)),
    ]
    return [group, *pods]


@pytest.mark.parametrize(
    "objects, name, evict_first, want",
    [
        pytest.param(_running("gang", 3), "gang", [], ["gang-0", "gang-1", "gang-2"], id="a gang goes whole"),
        pytest.param(_running("el", 3, min_member=1), "el", [], ["el-2"], id="one elastic pod, the last in order"),
        pytest.param(
            _running("el", 3, min_member=1), "el", ["el-2", "el-1"], ["el-0"], id="at its minimum the rest goes whole"
        ),
        pytest.param(_running("opt", 2, min_member=0), "opt", [], ["opt-1"], id="minMember 0: every pod is surplus"),
        pytest.param(_subgroup_job(), "sg", [], ["w-2"], id="the deepest surplus first: a worker pod"),
        pytest.param(
            _subgroup_job(),
            "sg",
            ["w-2", "w-1"],
            ["w-0"],
            id="then a whole surplus member (workers, the last member in order)",
        ),
    ],
)
def test_tasks_to_evict(objects: list[JSON], name: str, evict_first: list[str], want: list[str]) -> None:
    ssn = _session([b.node("n1", gpus=8), v.queue("q"), *objects])
    stmt = ssn.statement()
    for task_name in evict_first:
        stmt.evict(b.task(ssn, task_name), WHY)
    assert [t.name for t in victims.tasks_to_evict(ssn, _job(ssn, name))] == want


def test_only_committed_running_jobs_are_victims() -> None:
    ssn = _session(
        [
            b.node("n1", gpus=8),
            v.queue("q"),
            *_running("run", 1),
            *_running("np", 1, priority_class="build"),
            *v.job("pending", queue="q"),
        ]
    )
    assert [victims.can_be_victim(_job(ssn, n)) for n in ("run", "np", "pending")] == [True, False, False]


# --- the victim queue ------------------------------------------------------------------------------------------


def _many_victims() -> list[JSON]:
    objects = [b.node("n1", gpus=100), v.queue("a", gpu_quota=0), v.queue("b", gpu_quota=0), v.queue("c", gpu_quota=0)]
    for i in range(60):
        objects += v.job(
            f"j{i:02d}",
            queue="abc"[i % 3],
            pods=1 + i % 2,
            min_member=1,
            node="n1",
            created=b.NOW - 100 * ((i * 37) % 60),
            priority_class="train" if i % 5 else "build-preemptible",
        )
    return objects


def _pop_all(ssn: Session, chunk: int) -> list[tuple[str, ...]]:
    pool = victims.victim_order(ssn, (j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)))
    stmt = ssn.statement()
    queue = victims.VictimQueue(ssn, pool, lambda job: WHY, chunk=chunk)
    order = []
    while (batch := queue.pop(stmt)) is not None:
        order.append(tuple(t.name for t in batch.tasks))
    stmt.discard()
    return order


def test_feeding_the_victim_queue_in_chunks_pops_the_same_order() -> None:
    ssn = _session(_many_victims())
    full = _pop_all(ssn, 10_000)
    assert len(full) == 90  # 60 jobs, 30 of them elastic with 2 pods: 30 more batches
    assert _pop_all(ssn, 1) == full
    assert _pop_all(ssn, 7) == full


def _pops(ssn: Session, pool: list[Any], stmt: Any, **options: Any) -> list[tuple[str, ...]]:
    checkpoint = stmt.checkpoint()
    queue = victims.VictimQueue(ssn, pool, lambda job: WHY, **options)
    order = []
    while (batch := queue.pop(stmt)) is not None:
        order.append(tuple(t.name for t in batch.tasks))
    stmt.rollback(checkpoint)
    return order


def test_a_victim_queue_sorts_again_only_the_queues_of_moved_victims() -> None:
    """An elastic victim evicted again down to its minimum (a recorded victim) moves in the job order: its
    queue is sorted again and the pops are those of a queue sorting every leaf; left unsorted, they differ."""
    ssn = _session(_many_victims())
    pool = victims.victim_order(ssn, (j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)))
    elastic = next(j for j in pool if len(j.tasks) == 2)
    stmt = ssn.statement()
    for task in victims.tasks_to_evict(ssn, elastic):
        stmt.evict(task, WHY)
    every_queue_sorted = _pops(ssn, pool, stmt)
    assert _pops(ssn, pool, stmt, moved=[elastic]) == every_queue_sorted
    assert _pops(ssn, pool, stmt, moved=[]) != every_queue_sorted
    stmt.discard()


def test_the_preemptee_cap_counts_distinct_jobs() -> None:
    ssn = _session(_many_victims())
    pool = victims.victim_order(ssn, (j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)))
    stmt = ssn.statement()
    queue = victims.VictimQueue(ssn, pool, lambda job: WHY, max_jobs=3)
    batches = []
    while (batch := queue.pop(stmt)) is not None:
        batches.append(batch.job.name)
    assert len(set(batches)) == 3 and len(batches) >= 3


# --- cheap filters ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "demands, free, want",
    [
        pytest.param([8.0], [4, 4], False, id="8 GPUs do not fit on two half-free nodes"),
        pytest.param([4.0, 4.0], [4, 4], True, id="two 4-GPU tasks do"),
        pytest.param([4.0, 2.0, 2.0], [4, 4], True, id="largest first onto the freest node"),
        pytest.param([3.0, 3.0, 2.0], [4, 4], False, id="greedy: 3 and 3 leave 1 and 1"),
        pytest.param([], [0, 0], True, id="no GPU demand always fits"),
        pytest.param([1.0] * 9, [8, 0, 1], True, id="many small on few nodes"),
    ],
)
def test_gpus_fit(demands: list[float], free: list[float], want: bool) -> None:
    assert scenario.gpus_fit(demands, np.array(free, dtype=float)) is want


def _fit_session(free: list[float], schedulable: list[bool]) -> Any:
    """What `Generators.accumulated_fit` reads of a session: the nodes' rows and their arrays."""
    arrays = SimpleNamespace(free=np.zeros((len(free), 4)), schedulable=np.array(schedulable, dtype=bool))
    arrays.free[:, GPU] = free
    by_name = {f"n{i}": SimpleNamespace(row=i) for i in range(len(free))}
    return SimpleNamespace(snapshot=SimpleNamespace(arrays=arrays, node_by_name=by_name))


@settings(max_examples=300, deadline=None)
@example(nodes=[(8.0, True), (8.0, True)], demands=[8.0], steps=[[(0, -1.0)]])
@example(nodes=[(8.0, True), (8.0, True)], demands=[8.0], steps=[[(1, -1.0)]])
@given(
    nodes=st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 8.0]), st.booleans()), min_size=1, max_size=12),
    demands=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 8.0]), max_size=4),
    steps=st.lists(
        st.lists(st.tuples(st.integers(0, 11), st.sampled_from([-8.0, -1.0, 0.0, 0.5, 1.0, 8.0])), max_size=3)
    ),
)
def test_accumulated_fit_is_gpus_fit(
    nodes: list[tuple[float, bool]], demands: list[float], steps: list[list[tuple[int, float]]]
) -> None:
    """Judged again from the newest batch's nodes alone, the accumulated fit answers as the fit over every node
    does, whether free GPUs grow (evictions) or, against the rule, shrink."""
    ssn = _fit_session([f for f, _ in nodes], [s for _, s in nodes])
    tasks = [SimpleNamespace(request=np.array([0.0, 0.0, d, 0.0])) for d in demands]
    generators = scenario.Generators(ssn, tasks, single_node=False)
    free = ssn.snapshot.arrays.free
    for changes in [[], *steps]:
        rows = {row % len(nodes) for row, _ in changes}
        for row, delta in changes:
            free[row % len(nodes), GPU] = max(free[row % len(nodes), GPU] + delta, 0.0)
        batch = SimpleNamespace(nodes=frozenset(f"n{r}" for r in rows))
        whole = np.where(ssn.snapshot.arrays.schedulable, free[:, GPU], 0.0)
        assert generators.accumulated_fit(batch) is scenario.gpus_fit(demands, whole)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0, 2.0 / 3.0, 8.0])), max_size=4),
        max_size=8,
    )
)
def test_freed_gpus_sums_as_the_array_would_to_the_bit(batches: list[list[tuple[int, float]]]) -> None:
    """Each node's freed GPUs summed in floats then written equal the additions made into the array, in order."""
    ssn = _fit_session([0.0] * 6, [True] * 6)
    ssn.snapshot.nodes = [None] * 6
    made = [
        SimpleNamespace(
            tasks=[SimpleNamespace(request=np.array([0.0, 0.0, gpus, 0.0])) for _, gpus in batch],
            origins=[SimpleNamespace(node=f"n{row}") for row, _ in batch],
        )
        for batch in batches
    ]
    want = np.zeros(6)
    for batch in batches:
        for row, gpus in batch:
            want[row] += gpus
    assert scenario.freed_gpus(ssn, made).tobytes() == want.tobytes()


def test_a_victim_queue_of_a_pool_split_by_queue_pops_as_of_the_pool() -> None:
    ssn = _session(_many_victims())
    pool = victims.victim_order(ssn, (j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)))
    stmt = ssn.statement()
    assert _pops(ssn, victims.by_queue(pool), stmt, chunk=3) == _pops(ssn, pool, stmt, chunk=3)
    stmt.discard()


# --- the solver -------------------------------------------------------------------------------------------------


def _probe_sizes(objects: list[JSON], job: str, *, victim_queue: str = "q") -> tuple[list[int], solver.Result]:
    ssn = _session(objects)
    preemptor = _job(ssn, job)
    pool = [
        j
        for j in victims.victim_order(ssn, ssn.snapshot.jobs.values())
        if victims.can_be_victim(j) and j.queue == victim_queue
    ]
    sizes: list[int] = []
    original = solver._JobSolver._probe

    def spy(self: Any, size: int, *, keep: bool) -> bool:
        sizes.append(size)
        return bool(original(self, size, keep=keep))

    solver._JobSolver._probe = spy  # type: ignore[method-assign]
    try:
        search = solver.VictimSearch("test", pool, lambda _: WHY, lambda *_: None)
        job_budget = budget.ActionBudget(budget.SearchBudgets(), "test").next_job()
        result = solver.solve(ssn, ssn.statement(), preemptor, search, job_budget).result
    finally:
        solver._JobSolver._probe = original  # type: ignore[method-assign]
    return sizes, result


def _gang_against(victim_gpus: int, gang: int) -> list[JSON]:
    """A full node of 1-GPU victims (victim_gpus of them) and a pending gang of `gang` 1-GPU pods."""
    objects = [b.node("n1", gpus=victim_gpus), v.queue("q", gpu_quota=-1), v.queue("p", gpu_quota=-1, priority=200)]
    for i in range(victim_gpus):
        objects += v.job(f"v{i}", queue="q", node="n1")
    return objects + v.job("gang", queue="p", pods=gang)


@pytest.mark.parametrize(
    "victim_gpus, gang, want_sizes, want",
    [
        pytest.param(8, 4, [1, 2, 4], solver.Result.SOLVED, id="doubling up to the whole job"),
        pytest.param(8, 6, [1, 2, 4, 6], solver.Result.SOLVED, id="the last probe is the whole job"),
        pytest.param(
            3,
            5,
            [1, 2, 4, 3, 5],
            solver.Result.UNSOLVED,
            id="binary search below the first failure, then the whole job once more",
        ),
    ],
)
def test_prefix_probing(victim_gpus: int, gang: int, want_sizes: list[int], want: solver.Result) -> None:
    assert _probe_sizes(_gang_against(victim_gpus, gang), "gang") == (want_sizes, want)


def test_a_failed_search_leaves_the_model_as_it_was() -> None:
    ssn = _session(_gang_against(3, 5))
    before = b.ledgers(ssn.snapshot)
    statuses = {t.name: t.placement for t in ssn.snapshot.tasks.values()}
    pool = [j for j in victims.victim_order(ssn, ssn.snapshot.jobs.values()) if victims.can_be_victim(j)]
    stmt = ssn.statement()
    job_budget = budget.ActionBudget(budget.SearchBudgets(), "test").next_job()
    search = solver.VictimSearch("test", pool, lambda _: WHY, lambda *_: None)
    assert solver.solve(ssn, stmt, _job(ssn, "gang"), search, job_budget).result is solver.Result.UNSOLVED
    assert stmt.operations == ()
    assert b.same_ledgers(before, b.ledgers(ssn.snapshot))
    assert {t.name: t.placement for t in ssn.snapshot.tasks.values()} == statuses


def test_a_solution_without_any_victim_is_not_the_victim_actions_business() -> None:
    """Room for the job already (allocate would place it): the solver reports no solution."""
    objects = [
        b.node("n1", gpus=4),
        v.queue("q", gpu_quota=-1),
        *v.job("v0", queue="q", node="n1"),
        *v.job("j", queue="q", pods=2),
    ]
    ssn = _session(objects)
    pool = [j for j in ssn.snapshot.jobs.values() if victims.can_be_victim(j)]
    job_budget = budget.ActionBudget(budget.SearchBudgets(), "test").next_job()
    search = solver.VictimSearch("test", pool, lambda _: WHY, lambda *_: None)
    assert solver.solve(ssn, ssn.statement(), _job(ssn, "j"), search, job_budget).result is solver.Result.UNSOLVED


def test_a_job_that_fits_as_things_are_is_not_searched() -> None:
    """Room on releasing GPUs: no scenario is simulated, nothing is evicted or moved."""
    objects = [
        b.node("n1", gpus=1),
        b.node("n2", gpus=1),
        v.queue("q", gpu_quota=-1),
        *v.job("gone", queue="q", node="n1"),
        *v.job("v0", queue="q", node="n2"),
        *v.job("j", queue="q"),
    ]
    ssn = _session(objects)
    stmt = ssn.statement()
    stmt.evict(next(t for t in ssn.snapshot.tasks.values() if t.name == "gone-0"), WHY)
    pool = [_job(ssn, "v0")]
    job_budget = budget.ActionBudget(budget.SearchBudgets(), "test").next_job()
    search = solver.VictimSearch("test", pool, lambda _: WHY, lambda *_: None)
    solution = solver.solve(ssn, stmt, _job(ssn, "j"), search, job_budget)
    assert (solution.result, solution.simulations) == (solver.Result.UNSOLVED, 0)
    assert [op.task.name for op in stmt.operations] == ["gone-0"]


# --- signatures ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "candidate, failed, easier",
    [
        pytest.param([(0, 0, 1)], [(0, 0, 1), (0, 0, 1)], True, id="fewer tasks"),
        pytest.param([(0, 0, 1), (0, 0, 1)], [(0, 0, 1), (0, 0, 1)], False, id="the same"),
        pytest.param([(0, 0, 2), (0, 0, 1)], [(0, 0, 2), (0, 0, 2)], True, id="a smaller task"),
        pytest.param([(0, 0, 4), (0, 0, 2)], [(0, 0, 2), (0, 0, 2)], False, id="larger tasks"),
        pytest.param([(0, 0, 2), (0, 0, 2), (0, 0, 2)], [(0, 0, 2), (0, 0, 2)], False, id="more tasks"),
    ],
)
def test_a_job_is_easier_with_fewer_or_smaller_tasks(
    candidate: list[tuple[float, ...]], failed: list[tuple[float, ...]], easier: bool
) -> None:
    assert signatures._easier(candidate, failed) is easier


def test_the_signature_is_the_placement_constraints() -> None:
    a = v.job("a", queue="q", pods=2)
    c = v.job("c", queue="q", pods=3)
    d = v.job("d", queue="q", pods=1)
    d[1]["spec"]["nodeSelector"] = {"pool": "x"}
    ssn = _session([b.node("n1"), v.queue("q"), *a, *c, *d])
    assert signatures.signature(_job(ssn, "a")) == signatures.signature(_job(ssn, "c"))
    assert signatures.signature(_job(ssn, "a")) != signatures.signature(_job(ssn, "d"))


def test_the_signature_includes_the_namespace_selector_of_affinity_terms() -> None:
    """Jobs alike but for the namespaces their anti-affinity terms choose by label do not share failures."""
    jobs = {}
    for name, chosen in (("a", {"matchLabels": {"team": "a"}}), ("b", {"matchLabels": {"team": "b"}}), ("c", None)):
        job = v.job(name, queue="q", pods=1)
        job[1]["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    b.pod_term("kubernetes.io/hostname", namespace_selector=chosen, app="web")
                ]
            }
        }
        jobs[name] = job
    ssn = _session([b.node("n1"), v.queue("q"), *jobs["a"], *jobs["b"], *jobs["c"]])
    found = {name: signatures.signature(_job(ssn, name)) for name in jobs}
    assert len(set(found.values())) == 3
