"""gpufrag never over-commits a GPU: over random small clusters (those of test_sharing_topology: shared GPUs
already in use, pending fractions, memory requests, multi-device fractions, whole GPUs), one and three cycles
with gpufrag in place of gpupack leave every shared GPU within its memory, every node within its whole GPUs,
and every fractional task on as many groups as it asks devices."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import DEFAULT_PLUGINS
from kai_scheduler.plugins.gpufrag import memory, shapes, state
from kai_scheduler.plugins.gpufrag.plugin import GpuFrag
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b
from tests.plugins import builders as pb
from tests.property.test_sharing_topology import SETTINGS, Cluster, assert_shared_gpus_hold_their_sharers, clusters

EPS = 1e-6
_REPLACED = {"gpupack", "gpusharingorder", "nodeplacement"}
CONFIG = {
    "tiers": [
        {
            "plugins": [{"name": name, "arguments": args} for name, args in DEFAULT_PLUGINS if name not in _REPLACED]
            + [{"name": "gpufrag"}]
        }
    ]
}


def _check(snap: Snapshot) -> None:
    assert_shared_gpus_hold_their_sharers(snap)
    free = snap.arrays.free[:, GPU]
    assert (free >= -EPS).all(), f"whole GPUs over-committed: {free.tolist()}"


@SETTINGS
@given(cluster=clusters())
def test_one_cycle(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(CONFIG), now=b.NOW)
    _check(embedded.cycle().snapshot)


@SETTINGS
@given(cluster=clusters())
def test_three_cycles_with_the_embedded_binder(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(CONFIG), now=b.NOW)
    for result in embedded.run(3):
        _check(result.snapshot)
    _check(embedded.view())


# --- the kept scores (plugin.GpuFrag.growth) against a fresh computation -------------------------------------

_NODE_KINDS = [(gpus, cpu) for gpus in (0, 1, 2, 4) for cpu in ("8", "16")]  # few kinds: many identical nodes
_TASK_KINDS = [  # (GPUs, GPU fraction, CPU, memory)
    (gpus, fraction, cpu, memory)
    for gpus, fraction in ((0, None), (1, None), (2, None), (0, 0.5))
    for cpu, memory in (("1", "1Gi"), ("3", "1Gi"), ("1", "9Gi"))
]


@SETTINGS
@example(  # two whole-GPU tasks alike but for memory, on one 4-GPU node: kept apart
    node_kinds=[6], task_kinds=[3, 5], running=[], steps=[(0, 0, 1, False), (1, 0, 1, False)]
)
@example(  # the same for two half-GPU tasks
    node_kinds=[6], task_kinds=[9, 11], running=[], steps=[(0, 0, 1, False), (1, 0, 1, False)]
)
@example(node_kinds=[6, 6, 2], task_kinds=[0, 4, 9], running=[(1, 9)], steps=[(0, 0, 7, True), (1, 1, 7, False)])
@given(
    node_kinds=st.lists(st.integers(0, len(_NODE_KINDS) - 1), min_size=1, max_size=12),
    task_kinds=st.lists(st.integers(0, len(_TASK_KINDS) - 1), min_size=1, max_size=10),
    running=st.lists(st.tuples(st.integers(0, 11), st.integers(0, len(_TASK_KINDS) - 1)), max_size=8),
    steps=st.lists(
        st.tuples(st.integers(0, 9), st.integers(0, 11), st.integers(1, 4095), st.booleans()), min_size=1, max_size=12
    ),
)
def test_kept_scores_equal_a_fresh_computation_after_random_placements(
    node_kinds: list[int],
    task_kinds: list[int],
    running: list[tuple[int, int]],
    steps: list[tuple[int, int, int, bool]],
) -> None:
    nodes, pods = _cluster(node_kinds, task_kinds, running)
    plugin = GpuFrag.from_args({})
    ssn = pb.session(pb.snapshot(nodes=nodes, pods=pods), plugin)
    snap = ssn.snapshot
    every = np.arange(len(nodes), dtype=np.intp)
    stmt = ssn.statement()
    for which, at, subset, place in steps:
        task = pb.task(ssn, f"p{which % len(task_kinds)}")
        # A random candidate set (bit i of `subset`: node i), as the predicates leave.
        rows = np.array([i for i in range(len(nodes)) if subset >> (i % 12) & 1] or [0], dtype=np.intp)
        kept = plugin.growth(task, rows)
        # Fresh: the node state from the snapshot, each node's fragmentation before and after computed over every
        # node at once, and the growth over the candidates in reverse order and one by one.
        assert np.array_equal(plugin._free, state.matrix(snap, plugin._free.shape[1]))
        fresh = plugin._expected(state.matrix(snap, plugin._free.shape[1]), slice(None))
        assert np.array_equal(plugin.before(every), fresh), "the kept fragmentation per node differs from a fresh one"
        assert np.array_equal(kept, plugin.growth_afresh(task, rows[::-1])[::-1]), "kept scores differ from fresh"
        alone = np.concatenate([plugin.growth_afresh(task, rows[i : i + 1]) for i in range(rows.size)])
        assert np.array_equal(kept, alone), "a node's score depends on the nodes scored with it"
        for row in range(len(nodes)):  # one class: the same measure inputs, bit for bit
            same = plugin._class == plugin._class[row]
            assert (plugin._free[same] == plugin._free[row]).all()
            assert (snap.arrays.free[same][:, (CPU, MEMORY)] == snap.arrays.free[row, (CPU, MEMORY)]).all()
        if place and task.is_pending:  # else: the next task meets the same state
            finite = np.flatnonzero(np.isfinite(kept))
            if finite.size:
                node = snap.nodes[int(rows[finite[at % finite.size]])].name
                stmt.allocate(task, node, (f"g-new-{len(stmt.operations)}",) if task.gpu.is_shared else ())


def _cluster(
    node_kinds: list[int], task_kinds: list[int], running: list[tuple[int, int]]
) -> tuple[list[Node], list[Pod]]:
    """Nodes of the kinds given, running pods (node index, task kind) and pending pods p0… of the task kinds."""
    nodes = [
        pb.node(f"n{i}", gpus=_NODE_KINDS[k][0], cpu=_NODE_KINDS[k][1], memory="16Gi", gpu_memory=40000)
        for i, k in enumerate(node_kinds)
    ]
    pods = []
    for i, (at, kind) in enumerate(running):
        gpus, fraction, cpu, memory = _TASK_KINDS[kind]
        on = f"n{at % len(nodes)}"
        labels = {"runai-gpu-group": f"g{i}"} if fraction else None
        pods.append(pb.pod(f"r{i}", gpus=gpus, fraction=fraction, cpu=cpu, memory=memory, node=on, labels=labels))
    for i, kind in enumerate(task_kinds):
        gpus, fraction, cpu, memory = _TASK_KINDS[kind]
        pods.append(pb.pod(f"p{i}", gpus=gpus, fraction=fraction, cpu=cpu, memory=memory))
    return nodes, pods


@SETTINGS
@given(
    node_kinds=st.lists(st.integers(0, len(_NODE_KINDS) - 1), min_size=1, max_size=12),
    task_kinds=st.lists(st.integers(0, len(_TASK_KINDS) - 1), min_size=1, max_size=10),
    first=st.lists(st.tuples(st.integers(0, 11), st.integers(0, len(_TASK_KINDS) - 1)), max_size=8),
    then=st.lists(st.tuples(st.integers(0, 11), st.integers(0, len(_TASK_KINDS) - 1)), max_size=8),
    placements=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 11)), max_size=6),
    maximum=st.sampled_from([1, 3, 64]),
)
def test_values_kept_across_sessions_equal_a_fresh_session(
    node_kinds: list[int],
    task_kinds: list[int],
    first: list[tuple[int, int]],
    then: list[tuple[int, int]],
    placements: list[tuple[int, int]],
    maximum: int,
) -> None:
    """A session whose snapshot hands it the plugin memo of an earlier session (over other running pods, with
    tasks scored and placed) scores every pending task on every node as a session with an empty memo does."""
    arguments = {"maxShapes": str(maximum)}
    nodes, pods = _cluster(node_kinds, task_kinds, first)
    earlier = GpuFrag.from_args(arguments)
    ssn = pb.session(pb.snapshot(nodes=nodes, pods=pods), earlier)
    every = np.arange(len(nodes), dtype=np.intp)
    stmt = ssn.statement()
    for which, at in placements:
        task = pb.task(ssn, f"p{which % len(task_kinds)}")
        scores = earlier.growth(task, every)
        finite = np.flatnonzero(np.isfinite(scores))
        if task.is_pending and finite.size:
            node = ssn.snapshot.nodes[int(finite[at % finite.size])].name
            stmt.allocate(task, node, (f"g-new-{len(stmt.operations)}",) if task.gpu.is_shared else ())
    memo = ssn.snapshot.plugin_memo
    assert memo, "the session kept nothing"
    nodes, pods = _cluster(node_kinds, task_kinds, then + first[: len(first) // 2])
    later, fresh = GpuFrag.from_args(arguments), GpuFrag.from_args(arguments)
    kept_snapshot, fresh_snapshot = pb.snapshot(nodes=nodes, pods=pods), pb.snapshot(nodes=nodes, pods=pods)
    kept_snapshot.plugin_memo = memo
    kept_ssn, fresh_ssn = pb.session(kept_snapshot, later), pb.session(fresh_snapshot, fresh)
    assert np.array_equal(later._shapes.weight, fresh._shapes.weight)
    assert np.array_equal(later.before(every), fresh.before(every))
    for i in range(len(task_kinds)):
        kept = later.growth(pb.task(kept_ssn, f"p{i}"), every)
        assert np.array_equal(kept, fresh.growth(pb.task(fresh_ssn, f"p{i}"), every)), "kept across sessions"


@SETTINGS
@given(draws=st.lists(st.lists(st.integers(0, 11), max_size=12), min_size=1, max_size=6))
def test_learned_counts_follow_the_task_records_seen(draws: list[list[int]]) -> None:
    """`memory.Learned` counts each set of task records handed to it as a fresh pass over them would, whichever
    records it met before (records come and go, and a record may be handed again)."""
    kinds = [_TASK_KINDS[i % len(_TASK_KINDS)] for i in range(12)]
    pods = [pb.pod(f"t{i}", gpus=g, fraction=f, cpu=c, memory=m) for i, (g, f, c, m) in enumerate(kinds)]
    snap = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=pods)
    records = [pb.task(snap, f"t{i}") for i in range(12)]
    learned = memory.Learned()
    for draw in draws:
        tasks = {str(records[i].uid): records[i] for i in draw}
        want = Counter(shapes.fields(t, snap.max_gpu_memory) for t in tasks.values())
        assert learned.counts_of(tasks, snap.max_gpu_memory) == want
