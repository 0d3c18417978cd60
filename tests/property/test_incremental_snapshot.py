"""A snapshot built with what earlier cycles derived (`snapshot.Memo`) equals a full rebuild (hypothesis).

Three ways in: (1) random sequences of changes written to a store (pods created, bound, started, deleted and
finished, whole and shared GPUs, BindRequests, PodGroups and nodes changed), each followed by a scheduler cycle
whose own writes change the cluster too; after every change the scheduler's snapshot is compared, record by
record and bit for bit in its ledgers, with one built from nothing, and a snapshot a reader keeps reads the
same after later cycles. (2) Random sessions (allocate, pipeline, evict, checkpoints rolled back, statements
committed or discarded) on a kept model: the next build puts back everything they changed. (3) Whole simulated
workloads replayed with the memo and without it make the same decisions at the same instants.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cluster import pod_affinity, queue_charge
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.job_info import PodSet, SubGroupSet
from kai_scheduler.cluster.snapshot import derive, incremental
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.statement import Eviction
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.sim import replay, sources
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b
from tests.property.test_sim_skipping import workloads

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
NODES = ("n0", "n1", "n2")


def _view(snap: snapshots.Snapshot) -> dict[str, Any]:
    """Everything a session reads from a snapshot, as plain values."""

    def task(t: Any) -> tuple[Any, ...]:
        return (
            t.uid,
            t.job_uid,
            t.placement,
            t.request.tolist(),
            t.subgroup,
            t.task_priority,
            t.creation,
            t.memory_portion,
            t.pod,
        )

    return {
        "ledgers": {k: v.tolist() for k, v in b.ledgers(snap).items()},
        "shared_free": snap.arrays.shared_free.tolist(),
        "schedulable": snap.arrays.schedulable.tolist(),
        "gpu_memory_mib": snap.arrays.gpu_memory.tolist(),
        "name_rank": snap.arrays.name_rank.tolist(),
        "nodes": [
            (
                n.name,
                n.row,
                n.node,
                [task(t) for t in n.tasks.values()],
                {g: (dict(x.sharers), set(x.releasing), x.opened_pipelined) for g, x in n.gpu_groups.items()},
            )
            for n in snap.nodes
        ],
        "tasks": {uid: task(t) for uid, t in snap.tasks.items()},
        "order": (
            list(snap.tasks),
            list(snap.jobs),
            [j.uid for j in snap.waiting],
            [j.uid for j in snap.stale_watch],
            [list(n.tasks) for n in snap.nodes],
        ),
        "jobs": {
            uid: (
                j.name,
                j.namespace,
                id(j.podgroup),  # the PodGroup object of these objects, not an earlier version of it
                j.queue,
                j.priority,
                j.preemptible,
                j.creation,
                j.last_start,
                j.last_eviction,
                j.stale_since,
                [t.uid for t in j.tasks],
                [t.uid for t in j.unassigned],
                {name: (ps.min_available, [t.uid for t in ps.tasks]) for name, ps in j.pod_sets.items()},
                _tree(j.root),
                j.min_available(),
            )
            for uid, j in snap.jobs.items()
        },
        "problems": snap.problems,
        "job_problems": snap.job_problems,
        "queue_charges": _charges(snap),
        "anti_affine": sorted(t.uid for t in pod_affinity.anti_affine_pods(snap)),
        "soft_affine": sorted(t.uid for t in pod_affinity.soft_affine_pods(snap)),
        "bind_requests": {k: br.meta.key for k, br in snap.bind_requests.items()},
        "stale_bind_requests": [br.meta.key for br in snap.stale_bind_requests],
        "other_usage": snap.other_usage.tolist(),
        "axis": snap.axis.names,
        "gpu_memory": (snap.min_gpu_memory, snap.max_gpu_memory),
    }


def _tree(member: PodSet | SubGroupSet) -> tuple[Any, ...]:
    """A job's subgroup tree as plain values, from the root down."""
    if isinstance(member, PodSet):
        return (member.name, member.min_available, member.topology_constraint, member.parent is not None)
    children = tuple(_tree(c) for c in member.children)
    assert all(c.parent is member for c in member.children)
    return (member.name, member.min_sub_group, member.topology_constraint, children)


def _records_shared(snap: snapshots.Snapshot) -> None:
    """Every job holds the snapshot's task records, in its tasks and on its leaves, and names itself on them."""
    for job in snap.jobs.values():
        for task in (*job.tasks, *job.unassigned, *(t for ps in job.pod_sets.values() for t in ps.tasks)):
            assert snap.tasks[str(task.uid)] is task
            assert task.job_uid == job.uid


def _charges(snap: snapshots.Snapshot) -> dict[str, list[list[float]]]:
    """Each leaf queue's sums as the proportion plugin opens with them: a kept model's, or summed from the jobs."""
    charges = snap.queue_charges
    if charges is None:
        charges = {
            name: queue_charge.charge(queue_charge.job_rows(j) for j in snap.jobs.values() if j.queue == name)
            for name in snap.queues
        }
    none = queue_charge.charge(())
    return {
        name: [c.allocated.tolist(), c.non_preemptible.tolist(), c.pending.tolist()]
        for name, q in snap.queues.items()
        if q.is_leaf
        for c in [charges.get(name, none)]
    }


@contextmanager
def _checked_builds() -> Iterator[list[int]]:
    """Compare every memo build with a build from nothing of the same objects; yields the count of builds and
    of those that changed a kept model in place."""
    build, count, update = snapshots.build, [0, 0], incremental.apply_changes

    def counted(*args: Any) -> bool:
        reused = update(*args)
        count[1] += reused
        return reused

    def both(
        objects: snapshots.ClusterObjects, params: snapshots.SnapshotParams, memo: snapshots.Memo | None = None
    ) -> snapshots.Snapshot:
        fresh = build(objects, params)
        kept = build(objects, params, memo)
        assert _view(kept) == _view(fresh)
        _records_shared(kept)
        assert np.array_equal(kept.arrays.idle, fresh.arrays.idle)
        count[0] += 1
        return kept

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snapshots, "build", both)
        patch.setattr(incremental, "apply_changes", counted)
        yield count


change = st.tuples(
    st.sampled_from(
        ["create", "bind", "run", "delete", "finish", "gone", "bindrequest", "relabel", "podgroup", "cordon", "cycle"]
    ),
    st.integers(0, 3),
    st.sampled_from(NODES),
    st.sampled_from([0, 1, 2]),
    st.booleans(),
)


def _apply(store: MemoryStore, clock: ManualClock, step: tuple[str, int, str, int, bool]) -> None:
    what, i, node, gpus, shared = step
    name = f"p{i}"
    try:
        if what == "create":
            fraction = 0.5 if shared else None
            store.create(b.podgroup(f"g{i % 3}", queue="q", min_member=1))
            store.create(
                b.pod(
                    name,
                    group=f"g{i % 3}",
                    gpus=0 if shared else gpus,
                    fraction=fraction,
                    cpu=f"{100 + 7 * i}m",
                    pod_anti_affinity=[{"topologyKey": "kubernetes.io/hostname"}] if i % 2 else (),
                    preferred_pod_affinity=[b.weighted(3, {"topologyKey": "kubernetes.io/hostname"})] if i % 3 else (),
                )
            )
        elif what == "bind":
            store.bind(b.NAMESPACE, name, node)
        elif what == "run":
            if shared:
                store.patch(
                    "pods", name, b.NAMESPACE, {"metadata": {"labels": {constants.LABEL_GPU_GROUP: f"{node}-g{gpus}"}}}
                )
            if store.get("pods", name, b.NAMESPACE)["spec"].get("nodeName"):
                store.patch("pods", name, b.NAMESPACE, {"status": {"phase": "Running"}}, "status")
        elif what == "delete":
            store.evict(b.NAMESPACE, name)
        elif what == "finish":
            store.patch("pods", name, b.NAMESPACE, {"status": {"phase": "Succeeded"}}, "status")
        elif what == "gone":
            store.finish_deletion(b.NAMESPACE, name)
        elif what == "bindrequest":
            store.create(b.bind_request(name, node))
        elif what == "relabel":
            store.patch("pods", name, b.NAMESPACE, {"metadata": {"labels": {constants.LABEL_SUBGROUP_NAME: "x"}}})
        elif what == "podgroup":
            grace = "soon" if shared else "1m"  # a PodGroup with a warning (a problem of the snapshot), or without
            spec = {"minMember": gpus + 1, "stalenessGracePeriod": grace}
            store.patch("podgroups", f"g{i % 3}", b.NAMESPACE, {"spec": spec})
        elif what == "cordon":
            store.patch("nodes", node, "", {"spec": {"unschedulable": shared}})
    except StoreError:
        pass  # a change that does not apply to the cluster as it is now: skipped
    clock.advance(30 if what == "cycle" else 1)


@SETTINGS
@given(st.lists(change, min_size=1, max_size=25))
def test_kept_snapshot_equals_a_full_rebuild(steps: list[tuple[str, int, str, int, bool]]) -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q", gpu_quota=8), *(b.node(n, gpus=4) for n in NODES)])
    scheduler = Scheduler(store, load_config(None), clock)
    held: list[tuple[snapshots.Snapshot, dict[str, Any]]] = []
    with _checked_builds() as builds:
        for step in steps:
            _apply(store, clock, step)
            scheduler.snapshot()
            if step[0] == "cycle":
                result = scheduler.run_once()
                if step[4] and not held:  # a reader keeps this one: later builds must not change it
                    held.append((result.snapshot, _view(result.snapshot)))
                del result
    for snap, seen in held:
        assert _view(snap) == seen
    assert builds[0] >= len(steps)


def test_the_model_is_kept_while_nobody_holds_its_snapshot() -> None:
    """Cycles on an unchanged cluster change the kept model in place; a held snapshot makes the next build
    start from nothing, and leaves the held one as it was."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("q", gpu_quota=8),
            b.node("n0", gpus=4),
            b.podgroup("g"),
            b.pod("p", group="g", gpus=1),
            b.podgroup("r"),
            b.pod("running", group="r", gpus=1, node="n0"),
        ]
    )
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds:
        scheduler.run_once()
        scheduler.run_once()
        assert builds == [2, 1]
        result = scheduler.run_once()
        held = _view(result.snapshot)
        scheduler.run_once()
        assert builds == [4, 2]
        assert _view(result.snapshot) == held


session_step = st.tuples(
    st.sampled_from(["allocate", "pipeline", "evict", "checkpoint", "rollback", "commit", "discard"]),
    st.integers(0, 11),
    st.sampled_from(NODES),
)


@SETTINGS
@given(st.lists(session_step, max_size=30))
def test_the_next_build_puts_back_what_a_session_changed(steps: list[tuple[str, int, str]]) -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    objects = [
        b.queue("q", gpu_quota=8),
        *(b.node(n, gpus=4) for n in NODES),
        *(b.podgroup(f"g{g}", min_member=2 if g == 4 else 1) for g in range(5)),
    ]
    for i in range(12):
        node, shared = NODES[i % 3] if i % 2 else "", i % 4 == 1
        objects += [
            b.pod(
                f"p{i:02d}",
                group=f"g{i % 5}",
                gpus=0 if shared else i % 3,
                node=node,
                fraction=0.5 if shared else None,
                gpu_groups=(f"{node}-s",) if shared and node else (),
            )
        ]
    store.add_many(objects)
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds:
        _random_session(scheduler.snapshot(), steps)
        scheduler.snapshot()
    assert builds == [2, 1]


def _random_session(snap: snapshots.Snapshot, steps: list[tuple[str, int, str]]) -> None:
    ssn = Session(snap, load_config(None), [])
    stmt, marks = ssn.statement(), [0]
    tasks = sorted(snap.tasks.values(), key=lambda t: t.name)
    for what, i, node in steps:
        task = tasks[i]
        groups = (f"{node}-s",) if task.gpu.is_shared else ()
        try:
            if what == "allocate" and task.is_pending:
                stmt.allocate(task, node, groups)
            elif what == "pipeline" and (task.is_pending or task.is_releasing):
                stmt.pipeline(task, node, groups)
            elif what == "evict" and task.is_on_node and not task.is_releasing:
                stmt.evict(task, Eviction("test", "", "evicted"))
            elif what == "checkpoint":
                marks.append(stmt.checkpoint())
            elif what == "rollback":
                stmt.rollback(marks.pop() if len(marks) > 1 else 0)
            elif what in ("commit", "discard"):
                stmt.commit() if what == "commit" else stmt.discard()
                stmt, marks = ssn.statement(), [0]
        except ValueError:
            pass
    for job in snap.stale_candidates():  # as stalegangeviction marks and clears jobs
        snap.set_stale_since(job, b.NOW if job.stale_since is None else None)
    snap.set_stale_since(snap.jobs[tasks[0].job_uid], b.NOW - 1)  # any job's, through the snapshot's change log
    ssn.release()


def _decisions(text: str) -> tuple[list[tuple[Any, ...]], int]:
    loaded = sources.loads(text, "workload.yaml")
    run = replay.Replay(loaded, load_config(loaded.config), replay.Options(schedule_period=5.0)).run()
    return [(j.key, j.phase, j.started, j.finished) for j in run.jobs], run.summary.cycles


@SETTINGS
@given(workloads())
def test_replays_decide_the_same_with_and_without_the_memo(text: str) -> None:
    kept = _decisions(text)
    build = snapshots.build
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snapshots, "build", lambda objects, params, memo=None: build(objects, params))
        assert _decisions(text) == kept


@pytest.mark.parametrize(
    "arrivals",
    [
        pytest.param(["p1", "p3", "p5"], id="named in order: appended to tasks and jobs in place"),
        pytest.param(["p5", "p1", "p3"], id="named out of order: put in their place"),
    ],
)
def test_arrivals_keep_tasks_and_jobs_in_key_order(arrivals: list[str]) -> None:
    """A kept model changes `tasks` and `jobs` in place when the new keys come last, and reorders them when
    they do not; either way they are in the order a build from nothing gives (the check in `_checked_builds`)."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many([b.queue("q", gpu_quota=8), b.node("n0", gpus=4), b.podgroup("p0"), b.pod("p0", group="p0")])
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds:
        scheduler.snapshot()
        for name in arrivals:
            store.create(b.podgroup(name, queue="q", min_member=1))
            store.create(b.pod(name, group=name, gpus=1))
            keys = [job.key for job in scheduler.snapshot().jobs.values()]
            assert keys == sorted(keys)
    assert builds == [1 + len(arrivals), len(arrivals)]


def _recording_recharges(patch: pytest.MonkeyPatch) -> list[set[str]]:
    """The node names each later build recomputes (`derive._recharge`), recomputed still."""
    recomputed: list[set[str]] = []
    recharge = derive._recharge

    def recorded(model: Any, names: set[str]) -> None:
        recomputed.append(set(names))
        recharge(model, names)

    patch.setattr(derive, "_recharge", recorded)
    return recomputed


def test_a_pod_charged_again_alike_keeps_its_nodes_row() -> None:
    """A pod bound where its BindRequest put it is a new object charged as before: its node's row is kept (not
    recomputed) and its tasks hold the new record; a pod whose charge changed has its node recomputed. Both as a
    build from nothing."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("q", gpu_quota=8),
            *(b.node(n, gpus=4) for n in ("n0", "n1")),
            *(b.podgroup(g) for g in ("a", "b", "c")),
            b.pod("a", group="a", gpus=1, cpu="300m", node="n0"),
            b.pod("b", group="b", gpus=1, cpu="700m"),
            b.bind_request("b", "n0"),
            b.pod("c", group="c", gpus=1, node="n1"),
        ]
    )
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds, pytest.MonkeyPatch.context() as patch:
        scheduler.snapshot()
        recomputed = _recording_recharges(patch)
        store.bind(b.NAMESPACE, "b", "n0")
        store.evict(b.NAMESPACE, "c")
        snap = scheduler.snapshot()
        assert builds == [2, 1]
    assert recomputed == [{"n1"}]
    task = next(t for t in snap.tasks.values() if t.name == "b")
    assert task.placement.status.name == "BOUND"
    assert snap.node_by_name["n0"].tasks[str(task.uid)] is task


@pytest.mark.parametrize(("name", "kept"), [("b", True), ("0", False)])
def test_a_task_the_session_added_last_keeps_its_nodes_row(name: str, kept: bool) -> None:
    """A pending pod allocated on a node comes back Binding (its BindRequest taken in): its node's row, which the
    session charged it onto after the others, is kept when the pod's key comes after every other pod's there
    (a recomputation adds it last too), and recomputed otherwise. Both as a build from nothing."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("q", gpu_quota=8),
            b.node("n0", gpus=4),
            *(b.podgroup(g) for g in ("a", name)),
            b.pod("a", group="a", gpus=1, cpu="300m", node="n0"),
            b.pod(name, group=name, gpus=1, cpu="700m"),
        ]
    )
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds, pytest.MonkeyPatch.context() as patch:
        placed = scheduler.run_once()
        assert [op.task.name for op in placed.operations] == [name]
        del placed
        recomputed = _recording_recharges(patch)
        snap = scheduler.snapshot()
        assert builds == [2, 1]
    assert recomputed == ([] if kept else [{"n0"}])
    task = next(t for t in snap.tasks.values() if t.name == name)
    assert task.placement.status.name == "BINDING"
    assert snap.node_by_name["n0"].tasks[str(task.uid)] is task


def test_a_job_with_the_same_rows_leaves_its_queues_sums() -> None:
    """A PodGroup's annotation written leaves its job's rows as they were: its queue's sums are not summed again
    (and stay as a build from nothing gives them); a pending pod bound sums them again."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("q", gpu_quota=8),
            b.node("n0", gpus=4),
            b.podgroup("a"),
            b.pod("a", group="a", gpus=1, cpu="300m", node="n0"),
            b.podgroup("b"),
            b.pod("b", group="b", gpus=1, cpu="700m"),
        ]
    )
    scheduler = Scheduler(store, load_config(None), clock)
    summed: list[int] = []
    update = queue_charge.PrefixSums.update

    def recorded(self: queue_charge.PrefixSums, start: int, rows: Any) -> queue_charge.QueueCharge:
        summed.append(start)
        return update(self, start, rows)

    with _checked_builds() as builds, pytest.MonkeyPatch.context() as patch:
        scheduler.snapshot()
        patch.setattr(queue_charge.PrefixSums, "update", recorded)
        store.patch("podgroups", "a", b.NAMESPACE, {"metadata": {"annotations": {"x": "y"}}})
        scheduler.snapshot()
        assert summed == []
        store.bind(b.NAMESPACE, "b", "n0")
        scheduler.snapshot()
        assert summed == [1]
        assert builds == [3, 2]


def _podgroup_patch(store: MemoryStore, name: str, patch: dict[str, Any], subresource: str = "") -> None:
    store.patch("podgroups", name, b.NAMESPACE, patch, subresource)


_BACKOFF = {"status": {"schedulingConditions": [{"type": constants.CONDITION_UNSCHEDULABLE_ON_NODE_POOL}]}}
_JOB_CHANGES: list[Any] = [
    pytest.param(
        "a", "kept", lambda s: _podgroup_patch(s, "a", {"status": {"phase": "Running"}}, "status"), id="status written"
    ),
    pytest.param(
        "a",
        "kept",
        lambda s: _podgroup_patch(
            s, "a", {"metadata": {"annotations": {constants.ANNOTATION_LAST_START_TIMESTAMP: "2026-12-07T12:00:00Z"}}}
        ),
        id="start annotation written: the job takes its time",
    ),
    pytest.param(
        "a",
        "kept",
        lambda s: _podgroup_patch(s, "a", {"spec": {"priorityClassName": "high"}}),
        id="priority class named: the job takes its priority and preemptibility",
    ),
    pytest.param("b", "kept", lambda s: s.bind(b.NAMESPACE, "b", "n0"), id="pod bound where its BindRequest put it"),
    pytest.param("a", "kept", lambda s: s.create(b.pod("a2", group="a", gpus=1)), id="pod added"),
    pytest.param("a", "kept", lambda s: s.evict(b.NAMESPACE, "a"), id="pod deleted"),
    pytest.param(
        "a",
        "kept",
        lambda s: s.patch("pods", "a", b.NAMESPACE, {"metadata": {"labels": {constants.LABEL_SUBGROUP_NAME: "x"}}}),
        id="pod naming a subgroup not declared",
    ),
    pytest.param(
        "a", "made again", lambda s: _podgroup_patch(s, "a", {"spec": {"minMember": 2}}), id="minMember changed"
    ),
    pytest.param(
        "a",
        "made again",
        lambda s: _podgroup_patch(s, "a", {"spec": {"subGroups": [{"name": "x", "minMember": 1}]}}),
        id="subgroups declared",
    ),
    pytest.param("a", "made again", lambda s: _podgroup_patch(s, "a", {"spec": {"queue": "q2"}}), id="queue changed"),
    pytest.param(
        "a",
        "gone",
        lambda s: (
            _podgroup_patch(s, "a", {"spec": {"schedulingBackoff": 1}}),
            _podgroup_patch(s, "a", _BACKOFF, "status"),
        ),
        id="backed off",
    ),
]


@pytest.mark.parametrize(("group", "expected", "change"), _JOB_CHANGES)
def test_a_job_whose_podgroup_names_the_same_tree_is_kept(group: str, expected: str, change: Any) -> None:
    """A job whose PodGroup still names it alike (its uid, queue and what its subgroup tree is built from) is kept,
    its tree with it, and takes its PodGroup's other fields and its pods' records as they are now; any other job
    is made again. Either way as a build from nothing makes it."""
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(
        [
            b.queue("q", gpu_quota=8),
            b.queue("q2", gpu_quota=8),
            b.priority_class("high", 200),
            b.node("n0", gpus=4),
            b.podgroup("a"),
            b.pod("a", group="a", gpus=1, node="n0", phase="Running"),
            b.podgroup("b"),
            b.pod("b", group="b", gpus=1),
            b.bind_request("b", "n0"),
        ]
    )
    scheduler = Scheduler(store, load_config(None), clock)
    with _checked_builds() as builds:
        job = next(j for j in scheduler.snapshot().jobs.values() if j.name == group)
        change(store)
        snap = scheduler.snapshot()
        assert builds == [2, 1]
    now = next((j for j in snap.jobs.values() if j.name == group), None)
    assert expected == ("gone" if now is None else "kept" if now is job else "made again")
