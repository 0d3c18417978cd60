"""The snapshot's node memo: what plugins derive from the node objects is kept across cycles while those
objects stay the same, and derived again when a node object is replaced."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.framework.config import SchedulerConfig
from kai_scheduler.framework.session import Session
from kai_scheduler.plugins.nodeplacement import NodePlacement
from kai_scheduler.plugins.podaffinity import PodAffinity
from kai_scheduler.plugins.predicates import plugin as predicates
from kai_scheduler.plugins.predicates.plugin import Predicates
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

QUEUE = Queue.from_dict({"metadata": {"name": b.QUEUE}, "spec": {}})


def build(nodes: list[Node], pods: list[Pod], memo: snapshots.Memo) -> snapshots.Snapshot:
    groups = [b.podgroup(p.name) for p in pods]
    objects = snapshots.ClusterObjects(nodes=nodes, pods=pods, podgroups=groups, queues=[QUEUE])
    return snapshots.build(objects, snapshots.SnapshotParams(now=0), memo)


def spread_scores(snap: snapshots.Snapshot) -> tuple[NodePlacement, dict[str, float]]:
    plugin = NodePlacement.from_args({"gpu": "spread"})
    ssn = Session(snap, SchedulerConfig(), [plugin])
    ssn.open()
    got = ssn.node_scores(b.task(ssn, "p"), ssn.all_nodes())
    return plugin, {n.name: round(float(got[n.row]), 6) for n in snap.nodes}


def test_the_memo_is_kept_while_the_node_objects_are_and_renewed_when_one_is_replaced() -> None:
    nodes, memo = [node("a"), node("b")], snapshots.Memo()
    first = build(nodes, [pod("p", gpus=1)], memo)
    first.node_memo.get("probe", lambda: "kept")
    again = build(nodes, [pod("p", gpus=1), pod("q", gpus=2, node="a")], memo)
    assert again.node_memo is first.node_memo  # pods changed, nodes did not
    changed = build([node("a", labels={"zone": "z"}), nodes[1]], [pod("p", gpus=1)], memo)
    assert changed.node_memo is not first.node_memo
    assert changed.node_memo.get("probe", lambda: "new") == "new"


def test_a_new_resource_column_renews_the_memo() -> None:
    nodes, memo = [node("a")], snapshots.Memo()  # a pod asking for a resource no node has adds a column
    first = build(nodes, [pod("p", gpus=1)], memo)
    second = build(nodes, [pod("p", gpus=1, extended={"example.com/fpga": "1"})], memo)
    assert second.node_memo is not first.node_memo


def test_nodeplacement_derives_node_totals_once_per_node_set() -> None:
    nodes, memo = [node("a", labels={constants.LABEL_GPU_COUNT: "16"}), node("b")], snapshots.Memo()
    one, scores = spread_scores(build(nodes, [pod("p", gpus=1)], memo))
    two, again = spread_scores(build(nodes, [pod("p", gpus=1), pod("q", gpus=4, node="b")], memo))
    assert scores == {"a": 0.5, "b": 1.0}  # 8 allocatable of 16 devices counted by the label
    assert again == {"a": 0.5, "b": 0.5}
    assert two._totals is one._totals


def test_nodeplacement_reads_a_replaced_node_object() -> None:
    memo = snapshots.Memo()
    spread_scores(build([node("a", labels={constants.LABEL_GPU_COUNT: "16"})], [pod("p", gpus=1)], memo))
    _, scores = spread_scores(build([node("a", labels={constants.LABEL_GPU_COUNT: "32"})], [pod("p", gpus=1)], memo))
    assert scores == {"a": 0.25}


def feasible(snap: snapshots.Snapshot, plugin: Predicates) -> tuple[list[str], dict[str, int]]:
    ssn = Session(snap, SchedulerConfig(), [plugin])
    ssn.open()
    mask, report = ssn.feasible_nodes(b.task(ssn, "p"))
    return b.names(ssn, mask), dict(report.removed)


def test_predicates_keep_their_node_view_and_constraint_masks_across_sessions() -> None:
    nodes, memo = [node("a", labels={"zone": "x"}), node("b", labels={"zone": "y"})], snapshots.Memo()
    picky = pod("p", node_selector={"zone": "y"})
    first, second = Predicates(), Predicates()
    assert feasible(build(nodes, [picky], memo), first)[0] == ["b"]
    assert feasible(build(nodes, [picky], memo), second)[0] == ["b"]
    assert first.constraint_evaluations == 1
    assert second.constraint_evaluations == 0  # the mask of zone=y was kept with the node view
    assert second._labels is first._labels


def test_predicates_and_podaffinity_read_one_set_of_label_columns_per_node_set() -> None:
    nodes, memo = [node("a", labels={"zone": "x"}), node("b", labels={"zone": "y"})], snapshots.Memo()
    first, again = build(nodes, [pod("p")], memo), build(nodes, [pod("p"), pod("q")], memo)
    filters, scores = Predicates(), PodAffinity()
    Session(first, SchedulerConfig(), [filters]).open()
    Session(again, SchedulerConfig(), [scores]).open()
    assert filters._labels is scores._labels is again.node_labels()
    renewed = build([node("a", labels={"zone": "z"}), nodes[1]], [pod("p")], memo)
    assert renewed.node_labels() is not first.node_labels()
    assert renewed.node_labels().column("zone").index == {"z": 0, "y": 1}


def test_predicates_see_a_node_cordoned_between_cycles() -> None:
    memo = snapshots.Memo()
    assert feasible(build([node("a"), node("b")], [pod("p")], memo), Predicates())[0] == ["a", "b"]
    names, removed = feasible(build([node("a", unschedulable=True), node("b")], [pod("p")], memo), Predicates())
    assert names == ["b"]
    assert removed == {predicates.REASON_UNSCHEDULABLE_NODE: 1}


def test_shared_node_values_are_read_only() -> None:
    snap = build([node("a")], [pod("p", gpus=1)], snapshots.Memo())
    plugin = NodePlacement.from_args({})
    Session(snap, SchedulerConfig(), [plugin]).open()
    assert not any(array.flags.writeable for array in (*plugin._totals.values(), *plugin._has.values()))
