"""Invariants of scheduling over random small clusters (hypothesis), after one cycle and after three cycles of
the embedded cluster (binder and kubelet acting between cycles):

1. no node is over-committed in any resource, and nothing new lands on a cordoned node (over-commit also under
   any subset of the plugins, `predicates` left out or not);
2. every job is at or above its minimum, or has nothing allocated;
3. queue limits hold on every queue with a limit, leaf and ancestors (a queue already over its limit gets nothing);
4. the same input, in any object order, gives the same decisions.

Clusters: 2-8 nodes with 0-8 GPUs, 1-4 queues (a parent may have children: a 2-level tree), limits on some,
1-10 jobs of 1-5 pods with a random minMember; some jobs already run (all or some of their pods), some are
being deleted (their pods release resources, so pipelining happens); some are subgroup trees (two leaves,
minSubGroup), some ask for GPU fractions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import priorityclass, quantity
from kai_scheduler.cluster.node_info import GroupState
from kai_scheduler.cluster.pod_status import ALLOCATED, PodStatus
from kai_scheduler.cluster.resources import GPU, QUEUE_AXIS
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import DEFAULT_PLUGINS
from kai_scheduler.plugins.registry import BUILDERS
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b
from tests.property.drawn import Cluster

JSON = dict[str, Any]
EPS = 1e-6
GiB = 2**30
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PRIORITY_CLASSES: list[JSON] = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": pc.name}, "value": pc.value}
    for pc in priorityclass.SHIPPED
]
COUNTED = ALLOCATED | PodStatus.PIPELINED  # what a queue is charged for during a session


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    nodes = []
    free: dict[str, list[float]] = {}
    for i in range(draw(st.integers(2, 8))):
        gpus, cores = draw(st.integers(0, 8)), draw(st.sampled_from([8, 16, 32]))
        cordoned = draw(st.integers(0, 9)) == 0
        nodes.append(
            b.node(f"n{i}", gpus=gpus, cpu=str(cores), memory="64Gi", unschedulable=cordoned, gpu_memory=40000)
        )
        free[f"n{i}"] = [cores * 1000.0, 64.0 * GiB, float(gpus)]

    queues, leaves = _queues(draw)
    jobs: list[JSON] = []
    for j in range(draw(st.integers(1, 10))):
        jobs += _job(draw, f"j{j}", draw(st.sampled_from(leaves)), free)
    objects = PRIORITY_CLASSES + nodes + queues + jobs
    summary = [
        f"{o['kind']} {o['metadata']['name']}"
        + (f" on {o['spec'].get('nodeName')}" if o["kind"] == "Pod" and o["spec"].get("nodeName") else "")
        for o in objects
    ]
    return Cluster(objects, "; ".join(summary))


def _queues(draw: st.DrawFn) -> tuple[list[JSON], list[str]]:
    """1-4 queues; each after the first is top-level or a child of an earlier top-level queue."""
    parents: dict[str, str] = {}
    for i in range(draw(st.integers(1, 4))):
        tops = [q for q, p in parents.items() if not p]
        parents[f"q{i}"] = draw(st.sampled_from(["", *tops])) if tops else ""
    out: list[JSON] = []
    for name, parent in parents.items():
        cpu_limit = draw(st.sampled_from([-1, -1, 8000, 24000]))
        out.append(
            b.queue(
                name,
                parent=parent,
                priority=draw(st.sampled_from([50, 100, 150])),
                gpu_quota=draw(st.sampled_from([0, 1, 2, 4, -1])),
                gpu_limit=draw(st.sampled_from([-1, -1, 0, 2, 4, 8])),
                gpu_weight=draw(st.sampled_from([0, 1, 2])),
                cpu={"quota": -1, "overQuotaWeight": 1, "limit": cpu_limit},
                memory={"quota": -1, "overQuotaWeight": 1, "limit": -1},
                created=float(len(out)),
            )
        )
    leaves = [q for q in parents if q not in parents.values()]
    return out, leaves


def _job(draw: st.DrawFn, name: str, queue: str, free: dict[str, list[float]]) -> list[JSON]:
    shape = draw(st.sampled_from(["gang", "gang", "gang", "subgroups", "fractions"]))
    if shape == "subgroups":
        return _subgroup_job(draw, name, queue)
    if shape == "fractions":
        return _fraction_job(draw, name, queue)
    size = draw(st.integers(1, 5))
    min_member = draw(st.one_of(st.none(), st.integers(0, size)))
    gpus = draw(st.sampled_from([0, 1, 1, 2, 4]))
    cores = draw(st.sampled_from(["500m", "1", "2", "4"]))
    memory = draw(st.sampled_from(["1Gi", "4Gi", "16Gi"]))
    state = draw(st.sampled_from(["pending", "pending", "running", "deleting"]))
    need = min_member if min_member is not None else 1
    running = draw(st.integers(max(need, 1), size)) if state != "pending" else 0
    nodes = _fit(free, running, [float(quantity.to_millicores(cores)), float(quantity.to_bytes(memory)), float(gpus)])
    if nodes is None:
        nodes, state = [], "pending"
    pods = []
    for i in range(size):
        node = nodes[i] if i < len(nodes) else ""
        deleted = b.NOW + 30 if state == "deleting" and node else None
        pods.append(
            b.pod(
                f"{name}-{i}",
                group=name,
                gpus=gpus,
                cpu=cores,
                memory=memory,
                node=node,
                deleted_at=deleted,
                created=float(i),
            )
        )
    if state == "deleting":
        pods = [p for p in pods if p["spec"].get("nodeName")]
    priority_class = draw(st.sampled_from(["train", "build-preemptible", "build", "inference", ""]))
    group = b.podgroup(
        name,
        queue=queue,
        min_member=min_member,
        priority_class=priority_class,
        created=float(draw(st.integers(0, 100))),
    )
    if min_member is None:
        group["spec"].pop("minMember", None)
    return [group, *pods]


def _subgroup_job(draw: st.DrawFn, name: str, queue: str) -> list[JSON]:
    """A pending job of two leaf subgroups a and b, each with its own minimum, and minSubGroup nil, 1 or 2."""
    groups = [b.sub_group(leaf, min_member=draw(st.integers(0, 2))) for leaf in "ab"]
    gpus = draw(st.sampled_from([0, 1, 2]))
    pods = [
        b.pod(f"{name}-{leaf}{i}", group=name, subgroup=leaf, gpus=gpus, created=float(i))
        for leaf in "ab"
        for i in range(draw(st.integers(0, 3)))
    ]
    group = b.podgroup(
        name,
        queue=queue,
        min_member=None,
        min_sub_group=draw(st.sampled_from([None, 1, 2])),
        sub_groups=groups,
        created=float(draw(st.integers(0, 100))),
    )
    return [group, *pods]


def _fraction_job(draw: st.DrawFn, name: str, queue: str) -> list[JSON]:
    """A pending job of 1-3 pods each asking the same fraction of a GPU."""
    size = draw(st.integers(1, 3))
    fraction = draw(st.sampled_from([0.25, 0.5, 1.0]))
    pods = [b.pod(f"{name}-{i}", group=name, fraction=fraction, created=float(i)) for i in range(size)]
    group = b.podgroup(
        name, queue=queue, min_member=draw(st.integers(0, size)), created=float(draw(st.integers(0, 100)))
    )
    return [group, *pods]


def _fit(free: dict[str, list[float]], count: int, request: list[float]) -> list[str] | None:
    """First-fit `count` pods on the nodes' free (cpu, memory, gpu); None (nothing taken) if they do not fit."""
    trial = {n: list(v) for n, v in free.items()}
    placed = []
    for _ in range(count):
        node = next((n for n, v in trial.items() if all(v[r] >= request[r] for r in range(3))), None)
        if node is None:
            return None
        trial[node] = [v - r for v, r in zip(trial[node], request, strict=True)]
        placed.append(node)
    free.update(trial)
    return placed


# --- invariants ------------------------------------------------------------------------------------------------


def assert_no_node_over_committed(snap: Snapshot) -> None:
    a = snap.arrays
    pipelined = np.zeros_like(a.used)
    for task in snap.tasks.values():
        if task.status == PodStatus.PIPELINED and not task.placement.holds_idle:
            pipelined[snap.node_by_name[task.node].row] += task.request
    for node in snap.nodes:  # a shared GPU opened by a pipelined task holds a releasing device
        pipelined[node.row, GPU] += sum(1 for g in node.gpu_groups.values() if g.state() is GroupState.PIPELINED)
    over = a.used - pipelined - a.allocatable
    assert (over <= EPS).all(), f"over-committed:\n{over}"
    assert (a.idle >= -EPS).all(), f"negative idle:\n{a.idle}"
    assert (a.idle + np.minimum(a.releasing, 0.0) >= -EPS).all(), f"pipelined beyond releasing:\n{a.releasing}"
    assert np.allclose(a.non_allocated(), a.idle + a.releasing), "derived free arrays out of step"


def assert_new_placements_on_schedulable_nodes(result: CycleResult) -> None:
    snap = result.snapshot
    for op in result.operations:
        if op.after.node and op.after.node != op.before.node:
            assert snap.arrays.schedulable[snap.node_by_name[op.after.node].row], f"{op.task.key} on cordoned node"


def assert_gangs_whole(snap: Snapshot) -> None:
    for job in snap.jobs.values():
        allocated = job.active_allocated()
        assert allocated == 0 or job.is_gang_satisfied(), f"{job.key}: {allocated} allocated, below its minimum"


def queue_allocation(snap: Snapshot) -> dict[str, np.ndarray[Any, Any]]:
    totals = {name: np.zeros(len(QUEUE_AXIS)) for name in snap.queues}
    for job in snap.jobs.values():
        if job.queue not in snap.queues:
            continue
        held = sum((t.queue_request() for t in job.tasks if t.status & COUNTED), np.zeros(len(QUEUE_AXIS)))
        name = job.queue
        while name:
            totals[name] = totals[name] + held
            name = snap.queues[name].parent
    return totals


def assert_limits_hold(snap: Snapshot, before: dict[str, np.ndarray[Any, Any]]) -> None:
    for name, allocated in queue_allocation(snap).items():
        limit = snap.queues[name].limit
        for r in range(len(QUEUE_AXIS)):
            if limit[r] == -1:
                continue
            ceiling = max(limit[r], before[name][r])
            assert allocated[r] <= ceiling + EPS, f"queue {name} resource {r}: {allocated[r]} > limit {limit[r]}"


def check(result: CycleResult, before: dict[str, np.ndarray[Any, Any]]) -> None:
    assert_no_node_over_committed(result.snapshot)
    assert_new_placements_on_schedulable_nodes(result)
    assert_gangs_whole(result.snapshot)
    assert_limits_hold(result.snapshot, before)


def decisions(results: list[CycleResult]) -> list[list[tuple[Any, ...]]]:
    return [
        [
            (
                op.op.value,
                op.task.key,
                op.before.status.label,
                op.after.status.label,
                op.after.node,
                op.after.gpu_groups,
            )
            for op in r.operations
        ]
        + [("fit", key, tuple(e.message for e in errors)) for key, errors in sorted(r.fit_errors.items())]
        for r in results
    ]


def _embedded(objects: list[JSON]) -> EmbeddedCluster:
    return EmbeddedCluster(objects, load_config(None), now=b.NOW)


# --- properties ------------------------------------------------------------------------------------------------


@SETTINGS
@given(cluster=clusters())
def test_one_cycle(cluster: Cluster) -> None:
    embedded = _embedded(cluster.objects)
    before = queue_allocation(embedded.scheduler.snapshot())
    check(embedded.cycle(), before)


@settings(SETTINGS, max_examples=60)
@given(cluster=clusters())
def test_three_cycles_with_the_embedded_binder(cluster: Cluster) -> None:
    embedded = _embedded(cluster.objects)
    before = queue_allocation(embedded.scheduler.snapshot())
    for result in embedded.run(3):
        check(result, before)
    view = embedded.view()
    assert_no_node_over_committed(view)
    assert_gangs_whole(view)


@settings(SETTINGS, max_examples=60)
@given(cluster=clusters(), data=st.data())
def test_decisions_are_deterministic(cluster: Cluster, data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(cluster.objects), label="shuffled objects")
    first = decisions(_embedded(cluster.objects).run(2))
    assert decisions(_embedded(cluster.objects).run(2)) == first, "two runs on the same input differ"
    assert decisions(_embedded(list(shuffled)).run(2)) == first, "the object order changed a decision"


def test_the_generator_covers_the_interesting_cases() -> None:
    """A sanity check of the strategy: placements, pipelining, gangs that wait and limits that bite all occur."""
    seen: set[str] = set()

    @settings(SETTINGS, max_examples=60)
    @given(cluster=clusters())
    def collect(cluster: Cluster) -> None:
        result = _embedded(cluster.objects).cycle()
        for op in result.operations:
            seen.add(op.op.value)
        for errors in result.fit_errors.values():
            seen.update(e.reason for e in errors)

    collect()
    assert {"allocate", "pipeline", "Unschedulable", "OverLimit"} <= seen, seen


PLUGINS = [name for name, _ in DEFAULT_PLUGINS if name in BUILDERS] + ["gpuspread"]


@settings(SETTINGS, max_examples=60)
@given(cluster=clusters(), data=st.data())
def test_no_over_commit_under_any_plugin_configuration(cluster: Cluster, data: st.DataObject) -> None:
    """The resource fit is the allocation's own (KAI's FittingNode), not a plugin's: any subset of the plugins,
    `predicates` and `proportion` included or not, never over-commits a node, in any action."""
    chosen = data.draw(st.lists(st.sampled_from(PLUGINS), unique=True, max_size=len(PLUGINS)), label="plugins")
    config = load_config({"tiers": [{"plugins": [{"name": name} for name in chosen]}]})
    embedded = EmbeddedCluster(cluster.objects, config, now=b.NOW)
    for result in embedded.run(3):
        assert_no_node_over_committed(result.snapshot)
    assert_no_node_over_committed(embedded.view())
