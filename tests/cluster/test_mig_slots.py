"""Which MIG instance a task holds on its node: taken with the ledger, given back with it, never two active
holders on one instance; a pipelined task waits on an instance whose holder is releasing."""

from __future__ import annotations

from kai_scheduler.cluster.node_info import NodeInfo
from kai_scheduler.cluster.pod_info import Placement, PodInfo
from kai_scheduler.cluster.pod_status import PodStatus
from kai_scheduler.cluster.snapshot import Snapshot
from tests import builders as b

S = PodStatus
ONE = {"nvidia.com/mig-1g.10gb": "1"}


def _snapshot(*pods: str) -> Snapshot:
    node = b.node("n", gpus=0, extended={"nvidia.com/mig-1g.10gb": "3", "nvidia.com/mig-3g.40gb": "1"})
    return b.snapshot([b.queue("q"), node, *(b.pod(p, extended=ONE) for p in pods)])


def _task(snap: Snapshot, name: str) -> PodInfo:
    return next(t for t in snap.tasks.values() if t.name == name)


def _move(snap: Snapshot, name: str, status: PodStatus) -> PodInfo:
    task = _task(snap, name)
    snap.move(task, Placement(status, "n"))
    return task


def _held(node: NodeInfo, task: PodInfo) -> tuple[tuple[str, int], ...]:
    return node.mig_held.get(str(task.uid), ())


def test_tasks_take_the_lowest_free_instances_and_give_them_back() -> None:
    snap = _snapshot("a", "b", "c")
    node = snap.node_by_name["n"]
    a, bb = _move(snap, "a", S.ALLOCATED), _move(snap, "b", S.ALLOCATED)
    assert _held(node, a) == (("1g.10gb", 0),) and _held(node, bb) == (("1g.10gb", 1),)
    snap.move(a, Placement(S.PENDING))
    assert _held(node, a) == ()
    c = _move(snap, "c", S.ALLOCATED)
    assert _held(node, c) == (("1g.10gb", 0),), "the instance a gave back"


def test_an_evicted_task_keeps_its_instance_while_releasing() -> None:
    snap = _snapshot("a", "b")
    node = snap.node_by_name["n"]
    _move(snap, "a", S.ALLOCATED)
    bb = _move(snap, "b", S.ALLOCATED)
    _move(snap, "b", S.RELEASING)
    assert _held(node, bb) == (("1g.10gb", 1),)


def test_a_pipelined_task_waits_on_the_releasing_instance_not_a_free_one() -> None:
    snap = _snapshot("a", "b", "c", "d")
    node = snap.node_by_name["n"]
    _move(snap, "a", S.ALLOCATED)
    _move(snap, "b", S.RELEASING)
    d = _move(snap, "d", S.PIPELINED)
    assert _held(node, d) == (("1g.10gb", 1),), "b's instance, being released"
    c = _move(snap, "c", S.ALLOCATED)
    assert _held(node, c) == (("1g.10gb", 2),), "the free one stays free for an allocation"


def test_a_rebuilt_node_gives_each_task_the_instance_it_held() -> None:
    snap = _snapshot("a", "b")
    node = snap.node_by_name["n"]
    a, bb = _move(snap, "a", S.RUNNING), _move(snap, "b", S.RUNNING)
    snap.move(a, Placement(S.PENDING))
    node.clear_tasks()
    node.add_task(bb, bb.placement)
    assert _held(node, bb) == (("1g.10gb", 1),)
