"""NodeInfo ledgers (§3.2): adding a task charges allocatable/idle/used/releasing by its status; removing is
the exact inverse; shared GPUs are charged one whole device per GPU group, by the group's state (§6).

One node `n` (8 GPUs of 40000 MiB, 64 CPU, 512Gi), every pod Pending so the ledgers start clean.
"""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.cluster.node_info import NodeInfo, charge_nodes
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY, PODS
from kai_scheduler.cluster.snapshot import Snapshot, TaskLog
from tests import builders as b

S = PodStatus


def _snapshot() -> Snapshot:
    return b.snapshot(
        [
            b.queue("q"),
            b.node("n", gpus=8, gpu_memory=40000),
            b.pod("t", gpus=1, cpu="2", memory="4Gi"),
            b.pod("u", gpus=2, cpu="500m", memory="1Gi"),
            *(b.pod(f"f{i}", fraction=0.5, cpu="1", memory="1Gi") for i in (1, 2, 3)),
        ]
    )


def _node(snap: Snapshot) -> NodeInfo:
    return snap.node_by_name["n"]


def test_a_clean_node_is_all_idle() -> None:
    snap = _snapshot()
    a = snap.arrays
    assert np.array_equal(a.idle, a.allocatable)
    assert not a.used.any() and not a.releasing.any()
    assert a.allocatable[0, [CPU, GPU, PODS]].tolist() == [64000, 8, 110]
    assert a.allocatable[0, MEMORY] == 512 * 2**30


@pytest.mark.parametrize(
    "placement, used, idle, releasing",
    [
        pytest.param(Placement(S.RUNNING, "n"), 1, -1, 0, id="Running takes idle"),
        pytest.param(Placement(S.ALLOCATED, "n"), 1, -1, 0, id="Allocated takes idle"),
        pytest.param(Placement(S.BINDING, "n"), 1, -1, 0, id="Binding takes idle"),
        pytest.param(Placement(S.BOUND, "n"), 1, -1, 0, id="Bound takes idle"),
        pytest.param(Placement(S.RELEASING, "n"), 1, -1, 1, id="Releasing is used and releasing, not idle"),
        pytest.param(
            Placement(S.STUCK_IN_RELEASING, "n"),
            1,
            -1,
            0,
            id="StuckInReleasing holds its resources: nothing to count on being released",
        ),
        pytest.param(Placement(S.PIPELINED, "n"), 1, 0, -1, id="Pipelined consumes releasing, not idle"),
        pytest.param(
            Placement(S.PIPELINED, "n", holds_idle=True),
            1,
            -1,
            0,
            id="a Pipelined task converted from Allocated keeps its idle charge",
        ),
    ],
)
def test_ledger_rules(placement: Placement, used: int, idle: int, releasing: int) -> None:
    snap = _snapshot()
    node, task = _node(snap), b.task(snap, "t")
    before = b.ledgers(snap)
    node.add_task(task, placement)
    r = task.request
    assert np.array_equal(snap.arrays.used[0] - before["used"][0], used * r)
    assert np.array_equal(snap.arrays.idle[0] - before["idle"][0], idle * r)
    assert np.array_equal(snap.arrays.releasing[0] - before["releasing"][0], releasing * r)
    assert np.array_equal(snap.arrays.allocatable, before["allocatable"])
    assert node.tasks == {str(task.uid): task}
    assert node.pod_count() == 1
    node.remove_task(task, placement)
    assert b.same_ledgers(b.ledgers(snap), before), "removal is the exact inverse of adding"
    assert node.tasks == {}


def test_remove_is_the_exact_inverse_in_any_order() -> None:
    snap = _snapshot()
    node = _node(snap)
    before = b.ledgers(snap)
    placed = [
        (b.task(snap, "t"), Placement(S.RELEASING, "n")),
        (b.task(snap, "u"), Placement(S.PIPELINED, "n")),
        (b.task(snap, "f1"), Placement(S.RUNNING, "n", ("g1",))),
        (b.task(snap, "f2"), Placement(S.PIPELINED, "n", ("g1",), holds_idle=True)),
    ]
    for task, placement in placed:
        node.add_task(task, placement)
    for task, placement in (placed[1], placed[3], placed[0], placed[2]):
        node.remove_task(task, placement)
    assert b.same_ledgers(b.ledgers(snap), before)
    assert node.tasks == {} and node.gpu_groups == {}


def test_a_running_pod_in_the_snapshot_is_charged_to_its_node() -> None:
    snap = b.snapshot([b.queue("q"), b.node("n"), b.pod("t", gpus=2, cpu="3", node="n")])
    task = b.task(snap, "t")
    assert np.array_equal(snap.arrays.idle[0], snap.arrays.allocatable[0] - task.request)
    assert np.array_equal(snap.arrays.used[0], task.request)


def test_a_shared_gpu_task_asks_no_whole_device() -> None:
    snap = _snapshot()
    task = b.task(snap, "f1")
    assert task.request[GPU] == 0
    assert task.gpus_accepted == 0.5
    assert _node(snap).task_gpu_memory(task) == 20000


# (pods, statuses, groups) added in order → GPU column (used, idle, releasing) and each group's state
GROUPS = [
    pytest.param([("f1", S.RUNNING, ("g1",))], (1, 7, 0), {"g1": "used"}, id="one sharer holds one device"),
    pytest.param(
        [("f1", S.RUNNING, ("g1",)), ("f2", S.RUNNING, ("g1",))],
        (1, 7, 0),
        {"g1": "used"},
        id="a second sharer of the same group takes no other device",
    ),
    pytest.param(
        [("f1", S.RUNNING, ("g1",)), ("f2", S.RUNNING, ("g2",))],
        (2, 6, 0),
        {"g1": "used", "g2": "used"},
        id="two groups hold two devices",
    ),
    pytest.param(
        [("f1", S.RUNNING, ("g1", "g2"))],
        (2, 6, 0),
        {"g1": "used", "g2": "used"},
        id="a multi-device fraction opens one group per device",
    ),
    pytest.param(
        [("f1", S.RELEASING, ("g1",))],
        (1, 7, 1),
        {"g1": "releasing"},
        id="a group whose only sharer is releasing is releasing",
    ),
    pytest.param(
        [("f1", S.RELEASING, ("g1",)), ("f2", S.RUNNING, ("g1",))],
        (1, 7, 0),
        {"g1": "used"},
        id="a group with one live sharer is not releasing",
    ),
    pytest.param(
        [("f1", S.RELEASING, ("g1",)), ("f2", S.RELEASING, ("g1",))],
        (1, 7, 1),
        {"g1": "releasing"},
        id="a group whose sharers all release is releasing",
    ),
    pytest.param(
        [("f1", S.RELEASING, ("g1",)), ("f2", S.STUCK_IN_RELEASING, ("g1",))],
        (1, 7, 0),
        {"g1": "used"},
        id="a sharer stuck in releasing keeps its group used",
    ),
    pytest.param(
        [("f1", S.PIPELINED, ("g1",))],
        (1, 8, -1),
        {"g1": "pipelined"},
        id="a group opened by a pipelined task draws on releasing",
    ),
]


@pytest.mark.parametrize("adds, gpu, states", GROUPS)
def test_shared_gpu_groups(
    adds: list[tuple[str, PodStatus, tuple[str, ...]]], gpu: tuple[int, int, int], states: dict[str, str]
) -> None:
    snap = _snapshot()
    node = _node(snap)
    before = b.ledgers(snap)
    placements: list[tuple[PodInfo, Placement]] = []
    for name, status, groups in adds:
        task = b.task(snap, name)
        placement = Placement(status, "n", groups)
        node.add_task(task, placement)
        placements.append((task, placement))
    a = snap.arrays
    assert (a.used[0, GPU], a.idle[0, GPU], a.releasing[0, GPU]) == gpu
    assert {gid: g.state().value for gid, g in node.gpu_groups.items()} == states
    for task, placement in reversed(placements):
        node.remove_task(task, placement)
    assert b.same_ledgers(b.ledgers(snap), before)
    assert node.gpu_groups == {}, "a group without sharers is gone"


def test_a_group_frees_its_device_when_the_last_sharer_leaves() -> None:
    snap = _snapshot()
    node = _node(snap)
    f1, f2 = b.task(snap, "f1"), b.task(snap, "f2")
    node.add_task(f1, Placement(S.RUNNING, "n", ("g1",)))
    node.add_task(f2, Placement(S.RUNNING, "n", ("g1",)))
    node.remove_task(f1, Placement(S.RUNNING, "n", ("g1",)))
    assert snap.arrays.used[0, GPU] == 1 and list(node.gpu_groups) == ["g1"]
    node.remove_task(f2, Placement(S.RUNNING, "n", ("g1",)))
    assert snap.arrays.used[0, GPU] == 0 and node.gpu_groups == {}


def test_shared_gpu_fit() -> None:
    """A half fits beside one half and not beside two; a releasing sharer's memory counts as free."""
    snap = _snapshot()
    node = _node(snap)
    f1, f2, f3 = (b.task(snap, n) for n in ("f1", "f2", "f3"))
    node.add_task(f1, Placement(S.RUNNING, "n", ("g1",)))
    assert [g.id for g in node.shared_gpu_fit(f3)] == ["g1"]
    node.add_task(f2, Placement(S.RUNNING, "n", ("g1",)))
    assert node.shared_gpu_fit(f3) == []
    node.remove_task(f2, Placement(S.RUNNING, "n", ("g1",)))
    node.add_task(f2, Placement(S.RELEASING, "n", ("g1",)))
    assert [g.id for g in node.shared_gpu_fit(f3)] == ["g1"]


def test_a_row_changed_by_a_task_gets_a_new_stamp_and_a_copy_keeps_them() -> None:
    """`NodeArrays.stamps`: adding or removing a task (whole or shared), and `charge_nodes`, give the row a
    stamp no row had; a copy keeps the stamps; new arrays start new ones."""
    snap = _snapshot()
    node, a = _node(snap), snap.arrays
    seen = set(a.stamps.tolist())
    kept = a.copy()
    assert kept.stamps.tolist() == a.stamps.tolist()
    for task, placement in (
        (b.task(snap, "t"), Placement(S.RUNNING, "n")),
        (b.task(snap, "f1"), Placement(S.RUNNING, "n", ("g1",))),
        (b.task(snap, "f2"), Placement(S.RUNNING, "n", ("g1",))),  # joins a group: no whole-GPU change
    ):
        node.add_task(task, placement)
        assert int(a.stamps[node.row]) not in seen
        seen.add(int(a.stamps[node.row]))
        node.remove_task(task, placement)
        assert int(a.stamps[node.row]) not in seen
        seen.add(int(a.stamps[node.row]))
    charge_nodes(a, [(node, b.task(snap, "u"), Placement(S.RUNNING, "n"))])
    assert int(a.stamps[node.row]) not in seen
    assert kept.stamps.tolist() != a.stamps.tolist()
    assert not set(_snapshot().arrays.stamps.tolist()) & (seen | set(a.stamps.tolist()))


def test_a_task_log_answers_only_what_it_reaches() -> None:
    log = TaskLog()
    log.add(["a", "b"], limit=10)
    mark = log.end
    log.add(["c"], limit=10)
    assert log.since(mark, log.end) == ["c"]
    assert log.since(0, mark) == ["a", "b"]
    assert log.since(log.end, mark) is None  # a mark past the snapshot's end
    assert log.since(0, log.end + 1) is None  # an end the log has not reached
    log.add([str(i) for i in range(20)], limit=10)  # drops the older entries
    assert log.since(mark, log.end) is None
    assert log.since(log.start, log.end) == log.uids


@pytest.mark.parametrize(
    "placement",
    [Placement(S.RUNNING, "n"), Placement(S.RELEASING, "n"), Placement(S.PIPELINED, "n")],
    ids=["running", "releasing", "pipelined"],
)
def test_a_moved_task_leaves_its_row_derived_from_its_ledgers(placement: Placement) -> None:
    """`free` and `free_now` follow the ledgers on every change of a row (written in place), an eviction and its
    undoing in one pass included."""
    snap = _snapshot()
    node, task, other = _node(snap), b.task(snap, "t"), b.task(snap, "u")
    a = snap.arrays

    def derived_as_the_rule_says() -> None:
        assert np.array_equal(a.free, a.idle + a.releasing)
        assert np.array_equal(a.free_now, np.maximum(a.idle + np.minimum(a.releasing, 0.0), 0.0))

    node.add_task(other, Placement(S.PIPELINED, "n"))  # releasing below zero: free_now takes it from idle
    derived_as_the_rule_says()
    node.add_task(task, placement)
    derived_as_the_rule_says()
    assert node.move_task(task, placement, Placement(S.RELEASING, "n"))
    derived_as_the_rule_says()
    assert a.free[0, GPU] == 6  # idle 8 - 1 (t, releasing); releasing 1 (t) - 2 (u, pipelined)
    assert node.move_task(task, Placement(S.RELEASING, "n"), placement)
    derived_as_the_rule_says()
