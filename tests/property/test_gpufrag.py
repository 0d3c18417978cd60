"""gpufrag never over-commits a GPU: over random small clusters (those of test_sharing_topology: shared GPUs
already in use, pending fractions, memory requests, multi-device fractions, whole GPUs), one and three cycles
with gpufrag in place of gpupack leave every shared GPU within its memory, every node within its whole GPUs,
and every fractional task on as many groups as it asks devices."""

from __future__ import annotations

import contextlib
import gc
from collections import Counter
from collections.abc import Iterator

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from kai_scheduler.api import constants
from kai_scheduler.api.node import Node
from kai_scheduler.api.pod import Pod
from kai_scheduler.api.queue import Queue
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.resources import CPU, GPU, MEMORY
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import DEFAULT_PLUGINS
from kai_scheduler.plugins.gpufrag import carried, measure, shapes, state
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
    assert np.array_equal(later._weight, fresh._weight)
    assert np.array_equal(_ranked(later, "per_device"), _ranked(fresh, "per_device"))
    assert np.array_equal(later.before(every), fresh.before(every))
    for i in range(len(task_kinds)):
        kept = later.growth(pb.task(kept_ssn, f"p{i}"), every)
        assert np.array_equal(kept, fresh.growth(pb.task(fresh_ssn, f"p{i}"), every)), "kept across sessions"


@SETTINGS
@given(draws=st.lists(st.lists(st.integers(0, 11), max_size=12), min_size=1, max_size=6))
def test_learned_counts_follow_the_task_records_seen(draws: list[list[int]]) -> None:
    """`carried.Learned` counts each set of task records handed to it as a fresh pass over them would, whichever
    records it met before (records come and go, and a record may be handed again)."""
    kinds = [_TASK_KINDS[i % len(_TASK_KINDS)] for i in range(12)]
    pods = [pb.pod(f"t{i}", gpus=g, fraction=f, cpu=c, memory=m) for i, (g, f, c, m) in enumerate(kinds)]
    snap = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=pods)
    records = [pb.task(snap, f"t{i}") for i in range(12)]
    learned = carried.Learned()
    for draw in draws:
        tasks = {str(records[i].uid): records[i] for i in draw}
        want = Counter(shapes.fields(t, snap.max_gpu_memory) for t in tasks.values())
        assert learned.counts_of(tasks, snap.max_gpu_memory) == want


# --- what a session open keeps (node rows, learned shapes) across kept builds against a fresh session ---------

_CHANGE = st.tuples(st.sampled_from(["run", "stop", "arrive", "leave"]), st.integers(0, 11), st.integers(0, 11))


@SETTINGS
@example(  # a shared GPU filled, then a sharer gone: its node's row and class move
    node_kinds=[6, 6], task_kinds=[9], builds=[[("run", 0, 9), ("run", 0, 9)], [("stop", 0, 0)]], placements=[]
)
@given(
    node_kinds=st.lists(st.integers(0, len(_NODE_KINDS) - 1), min_size=1, max_size=10),
    task_kinds=st.lists(st.integers(0, len(_TASK_KINDS) - 1), min_size=1, max_size=6),
    builds=st.lists(st.lists(_CHANGE, max_size=5), min_size=2, max_size=5),
    placements=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 11)), max_size=4),
)
def test_open_kept_across_kept_builds_equals_a_fresh_session(
    node_kinds: list[int],
    task_kinds: list[int],
    builds: list[list[tuple[str, int, int]]],
    placements: list[tuple[int, int]],
) -> None:
    """Builds of one kept model (`snapshot.Memo`), with running and pending pods added and removed between them
    and each session placing tasks it does not commit: every session opened on the kept snapshot (its node
    rows, classes and learned shapes partly kept) has the node state, shape weights, fragmentation and scores
    of a session on a snapshot built from nothing with an empty memo."""
    with _only_this_examples_objects_collected():
        _open_kept_across_kept_builds(node_kinds, task_kinds, builds, placements)


@contextlib.contextmanager
def _only_this_examples_objects_collected() -> Iterator[None]:
    """`gc.freeze()` for the block: the `gc.collect()` after each build (which frees the last snapshot, so the
    next build may keep the model) walks only what the block made, not the whole heap of the test process
    (hundreds of thousands of objects after the rest of the suite: a quarter of a second a collection, 70 ms
    alone). The frozen objects predate the example and so cannot hold its snapshot in a garbage cycle; a
    snapshot still held is not freed either way, and `kept_builds` fails the example."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _open_kept_across_kept_builds(
    node_kinds: list[int],
    task_kinds: list[int],
    builds: list[list[tuple[str, int, int]]],
    placements: list[tuple[int, int]],
) -> None:
    nodes, pods = _cluster(node_kinds, task_kinds, [])
    params, memo = snapshots.SnapshotParams(now=0), snapshots.Memo()
    running: list[Pod] = []
    made, kept_builds = 0, 0
    for changes in builds:
        for what, at, kind in changes:
            gpus, fraction, cpu, mem = _TASK_KINDS[kind % len(_TASK_KINDS)]
            made += 1
            if what == "run":
                labels = {"runai-gpu-group": f"x{made}"} if fraction else None
                on = f"n{at % len(nodes)}"
                pod = pb.pod(f"x{made}", gpus=gpus, fraction=fraction, cpu=cpu, memory=mem, node=on, labels=labels)
                running.append(pod)
            elif what == "stop" and running:
                running.pop(at % len(running))
            elif what == "arrive":
                pods.append(pb.pod(f"w{made}", gpus=gpus, fraction=fraction, cpu=cpu, memory=mem))
            elif what == "leave" and len(pods) > len(task_kinds):  # one of the arrived, never p0…
                pods.pop(len(task_kinds) + at % (len(pods) - len(task_kinds)))
        objects = _objects(nodes, [*pods, *running])
        before = memo.carried
        snap = snapshots.build(objects, params, memo)
        kept_builds += memo.carried is before and before is not None
        plugin, fresh = GpuFrag.from_args({}), GpuFrag.from_args({})
        ssn = pb.session(snap, plugin)
        fresh_ssn = pb.session(snapshots.build(objects, params), fresh)
        every = np.arange(len(nodes), dtype=np.intp)
        for name in ("cpu", "memory", "devices", "per_device"):
            assert np.array_equal(_ranked(plugin, name), _ranked(fresh, name)), f"shapes' {name}"
        assert np.array_equal(plugin._weight, fresh._weight), "shapes' weights"
        assert np.array_equal(plugin._free, fresh._free), "kept node rows differ from fresh ones"
        assert np.array_equal(plugin._free, state.matrix(snap, plugin._free.shape[1]))
        assert np.array_equal(plugin.before(every), fresh.before(every)), "kept fragmentation differs"
        for row in range(len(nodes)):  # a kept class holds rows of the same measure inputs
            same = plugin._class == plugin._class[row]
            assert (plugin._free[same] == plugin._free[row]).all()
            assert (snap.arrays.free[same][:, (CPU, MEMORY)] == snap.arrays.free[row, (CPU, MEMORY)]).all()
        for i in range(len(task_kinds)):
            mine, theirs = pb.task(ssn, f"p{i}"), pb.task(fresh_ssn, f"p{i}")
            assert np.array_equal(plugin.growth(mine, every), fresh.growth(theirs, every)), f"p{i} scored"
        stmt = ssn.statement()
        for which, at in placements:  # moves the next build puts back
            task = pb.task(ssn, f"p{which % len(task_kinds)}")
            finite = np.flatnonzero(np.isfinite(plugin.growth(task, every)))
            if task.is_pending and finite.size:
                node = snap.nodes[int(finite[at % finite.size])].name
                stmt.allocate(task, node, (f"g-new-{len(stmt.operations)}",) if task.gpu.is_shared else ())
        for each in (ssn, fresh_ssn):
            each.release()
        del snap, ssn, fresh_ssn, plugin, fresh, stmt  # nobody holds the snapshot: the model is kept
        gc.collect()
    assert kept_builds == len(builds) - 1, "the model was not kept: nothing kept was tested"


def _ranked(plugin: GpuFrag, name: str) -> np.ndarray:
    """A field of the session's shapes in their rank order (the table's columns are in shape order)."""
    values: np.ndarray = getattr(plugin._shapes, name)
    return values if plugin._perm is None else values[plugin._perm]


def _objects(nodes: list[Node], pods: list[Pod]) -> snapshots.ClusterObjects:
    """As `pb.snapshot` builds them: a queue and a PodGroup per pod group the pods name."""
    groups = {}
    for p in pods:
        name = p.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME, "")
        if name:
            groups.setdefault(name, pb.podgroup(name, queue=pb.QUEUE))
    queue = Queue.from_dict({"metadata": {"name": pb.QUEUE}, "spec": {}})
    return snapshots.ClusterObjects(nodes=nodes, pods=list(pods), podgroups=list(groups.values()), queues=[queue])


@SETTINGS
@given(draws=st.lists(st.lists(st.integers(0, 11), max_size=12), min_size=1, max_size=6), skip=st.booleans())
def test_learned_counts_follow_a_task_log(draws: list[list[int]], skip: bool) -> None:
    """With a `TaskLog`, `carried.Learned` looks only at the uids logged since its mark and counts as a fresh pass
    would; a mark the log does not reach (`skip`: the log dropped it) makes it match every record."""
    kinds = [_TASK_KINDS[i % len(_TASK_KINDS)] for i in range(12)]
    pods = [pb.pod(f"t{i}", gpus=g, fraction=f, cpu=c, memory=m) for i, (g, f, c, m) in enumerate(kinds)]
    snap = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=pods)
    records = [pb.task(snap, f"t{i}") for i in range(12)]
    learned, log, tasks = carried.Learned(), snapshots.TaskLog(), {}
    for draw in draws:
        now = {str(records[i].uid): records[i] for i in draw}
        log.add(sorted(now.keys() ^ tasks.keys()), limit=1 << 20)
        if skip:
            log.add(["dropped"] * 4, limit=2)  # the log drops what this reader had not read
        tasks = now
        want = Counter(shapes.fields(t, snap.max_gpu_memory) for t in tasks.values())
        assert learned.counts_of(tasks, snap.max_gpu_memory, log, log.end) == want


def test_learned_counts_read_only_the_logged_uids() -> None:
    """A record changed without being logged is not looked at (the log is what makes the open cost what
    changed); one logged is."""
    pods = [pb.pod(f"t{i}", gpus=1 if i else 0) for i in range(3)]
    snap = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=pods)
    tasks = {str(t.uid): t for t in snap.tasks.values()}
    learned, log = carried.Learned(), snapshots.TaskLog()
    learned.counts_of(tasks, snap.max_gpu_memory, log, log.end)
    other = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=[pb.pod("t0", gpus=2)])
    swapped = dict(tasks)
    uid = next(iter(other.tasks.values())).uid
    assert str(uid) in swapped  # the same pod, another record asking 2 GPUs
    record = swapped[str(uid)] = next(iter(other.tasks.values()))
    two = shapes.fields(record, snap.max_gpu_memory)
    assert learned.counts_of(swapped, snap.max_gpu_memory, log, log.end)[two] == 0
    log.add([str(uid)], limit=100)
    assert learned.counts_of(swapped, snap.max_gpu_memory, log, log.end)[two] == 1
    assert learned.counts_of(swapped, snap.max_gpu_memory) == Counter(
        shapes.fields(t, snap.max_gpu_memory) for t in swapped.values()
    )


# --- the kept ranking of learned shapes, and one table for every ranking of the same shapes ------------------


@SETTINGS
@given(
    draws=st.lists(st.lists(st.integers(0, 23), max_size=24), min_size=1, max_size=8),
    weighings=st.lists(st.sampled_from(shapes.WEIGHINGS), min_size=1, max_size=8),
    limit=st.sampled_from([1, 2, 5, 64]),
)
def test_kept_ranking_equals_ranking_every_shape(draws: list[list[int]], weighings: list[str], limit: int) -> None:
    """`carried.Learned.heaviest`, moving only the shapes whose counts changed in a kept order, gives what
    `shapes.heaviest` gives from the counts (weights, ties by shape), whatever records came and went before
    and however the weighing changed between reads."""
    kinds = [_TASK_KINDS[i % len(_TASK_KINDS)] for i in range(24)]
    pods = [pb.pod(f"t{i}", gpus=g, fraction=f, cpu=c, memory=m) for i, (g, f, c, m) in enumerate(kinds)]
    snap = pb.snapshot(nodes=[pb.node("n0", gpus=1)], pods=pods)
    records = [pb.task(snap, f"t{i}") for i in range(24)]
    learned = carried.Learned()
    for n, draw in enumerate(draws):
        weigh_by = weighings[n % len(weighings)]
        counts = learned.counts_of({str(records[i].uid): records[i] for i in draw}, snap.max_gpu_memory)
        assert learned.heaviest(limit, weigh_by) == shapes.heaviest(counts, limit, weigh_by)


_GIVEN = ["1", "0.5", "8", "0", "0.25x2", "2"]


@SETTINGS
@given(
    node_kinds=st.lists(st.integers(0, len(_NODE_KINDS) - 1), min_size=1, max_size=10),
    task_kinds=st.lists(st.integers(0, len(_TASK_KINDS) - 1), min_size=1, max_size=6),
    running=st.lists(st.tuples(st.integers(0, 11), st.integers(0, len(_TASK_KINDS) - 1)), max_size=6),
    first=st.permutations(range(len(_GIVEN))),
    then=st.permutations(range(len(_GIVEN))),
    weights=st.lists(st.integers(1, 9), min_size=2 * len(_GIVEN), max_size=2 * len(_GIVEN)),
)
def test_a_new_ranking_of_the_same_shapes_keeps_the_table_and_weighs_in_rank_order(
    node_kinds: list[int],
    task_kinds: list[int],
    running: list[tuple[int, int]],
    first: list[int],
    then: list[int],
    weights: list[int],
) -> None:
    """The same shapes in another order and with other weights (as learned shapes move in rank) keep the kept
    table (its classes and per-shape values); the session's fragmentation is bit for bit the measure weighed
    over the shapes in rank order, and its scores are those of a session with an empty memo."""
    nodes, pods = _cluster(node_kinds, task_kinds, running)
    texts = [
        ", ".join(f"{_GIVEN[i]}:{weights[n + k]}" for k, i in enumerate(order)) for n, order in ((0, first), (6, then))
    ]
    earlier = GpuFrag.from_args({"shapes": texts[0]})
    ssn = pb.session(pb.snapshot(nodes=nodes, pods=pods), earlier)
    memo = ssn.snapshot.plugin_memo
    table = earlier._table
    later, fresh = GpuFrag.from_args({"shapes": texts[1]}), GpuFrag.from_args({"shapes": texts[1]})
    kept_snapshot, fresh_snapshot = pb.snapshot(nodes=nodes, pods=pods), pb.snapshot(nodes=nodes, pods=pods)
    kept_snapshot.plugin_memo = memo
    kept_ssn, fresh_ssn = pb.session(kept_snapshot, later), pb.session(fresh_snapshot, fresh)
    assert later._table is table, "a new ranking of the same shapes made a new table"
    every = np.arange(len(nodes), dtype=np.intp)
    ranked = shapes.to_shapes(shapes.parse(texts[1]))
    snap = kept_ssn.snapshot
    assert later._eligible is None, "given shapes may run on every node"
    want = measure.expected(
        ranked,
        state.matrix(snap, later._free.shape[1]),
        snap.arrays.free[:, CPU],
        snap.arrays.free[:, MEMORY],
    )
    assert np.array_equal(later.before(every), want), "weighed otherwise than in rank order"
    assert np.array_equal(later.before(every), fresh.before(every))
    for i in range(len(task_kinds)):
        kept = later.growth(pb.task(kept_ssn, f"p{i}"), every)
        assert np.array_equal(kept, fresh.growth(pb.task(fresh_ssn, f"p{i}"), every)), f"p{i} scored"
