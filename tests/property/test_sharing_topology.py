"""Invariants of GPU sharing and topology over random small clusters (hypothesis), after one cycle and after
three cycles of the embedded cluster (binder and kubelet acting between cycles):

1. the memory of the tasks sharing one GPU never exceeds it (sharers still to be released aside: a pipelined
   sharer may count on their memory), and every fractional task on a node holds one group per device;
2. a required topology level is never violated: every pod of a constrained job (or subgroup) that holds a
   node sits in one domain of that level, inside the topology.

Clusters: 2-6 nodes of 1-4 GPUs with 2 GPU-memory sizes, in 2 zones x 2 racks (a node may miss its rack
label), some fractional pods already sharing GPUs (some being deleted); 1-6 pending jobs of fractions, memory
requests, multi-device fractions or whole GPUs, with a random required and preferred level.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import constants
from kai_scheduler.cluster.job_info import JobInfo, Member
from kai_scheduler.cluster.pod_status import ON_NODE
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b
from tests.property.drawn import Cluster

JSON = dict[str, Any]
EPS = 1e-6
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ZONE, RACK = "topology/zone", "topology/rack"
LEVELS = ["", "zone", "rack", constants.LABEL_HOSTNAME]
TOPOLOGY: JSON = {
    "apiVersion": constants.TOPOLOGY_API_VERSION,
    "kind": "Topology",
    "metadata": {"name": "t"},
    "spec": {
        "levels": [
            {"nodeLabel": ZONE, "alias": "zone"},
            {"nodeLabel": RACK, "alias": "rack"},
            {"nodeLabel": constants.LABEL_HOSTNAME},
        ]
    },
}


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    objects: list[JSON] = [TOPOLOGY, b.queue("q")]
    for i in range(draw(st.integers(2, 6))):
        labels = {ZONE: f"z{i % 2}"}
        if draw(st.integers(0, 5)):
            labels[RACK] = f"r{draw(st.integers(0, 1))}"
        gpus = draw(st.integers(1, 4))
        objects.append(b.node(f"n{i}", gpus=gpus, labels=labels, gpu_memory=draw(st.sampled_from([40000, 80000]))))
        objects += _sharers(draw, f"n{i}", gpus)
    for j in range(draw(st.integers(1, 6))):
        objects += _job(draw, f"j{j}")
    summary = [f"{o['kind']} {o['metadata']['name']}" for o in objects]
    return Cluster(objects, "; ".join(summary))


def _sharers(draw: st.DrawFn, node: str, gpus: int) -> list[JSON]:
    """0-3 running fractional pods on one GPU group of the node (fractions that fit together)."""
    out: list[JSON] = []
    used = 0.0
    for k in range(draw(st.integers(0, 3))):
        fraction = draw(st.sampled_from([0.25, 0.5]))
        if used + fraction > 1:
            break
        used += fraction
        name = f"{node}-s{k}"
        deleted = b.NOW + 30 if draw(st.integers(0, 3)) == 0 else None
        out += [
            b.podgroup(name),
            b.pod(name, fraction=fraction, node=node, gpu_groups=[f"{node}-g"], deleted_at=deleted),
        ]
    return out


def _job(draw: st.DrawFn, name: str) -> list[JSON]:
    size = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["fraction", "memory", "devices", "whole"]))
    required = draw(st.sampled_from(LEVELS))
    preferred = draw(st.sampled_from(["", *LEVELS[LEVELS.index(required) + 1 :]] if required else LEVELS))
    constraint: JSON = {"topology": "t"}
    if required:
        constraint["requiredTopologyLevel"] = required
    if preferred:
        constraint["preferredTopologyLevel"] = preferred
    pods = []
    for i in range(size):
        annotations: dict[str, str] = {}
        if kind == "fraction":
            annotations["gpu-fraction"] = str(draw(st.sampled_from([0.1, 0.25, 0.5, 0.75])))
        elif kind == "memory":
            annotations["gpu-memory"] = str(draw(st.sampled_from([5000, 20000, 45000])))
        elif kind == "devices":
            annotations.update({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"})
        pods.append(
            b.pod(
                f"{name}-{i}", group=name, gpus=1 if kind == "whole" else 0, annotations=annotations, created=float(i)
            )
        )
    spec: JSON = {"topologyConstraint": constraint} if len(constraint) > 1 else {}
    if draw(st.integers(0, 3)) == 0:  # two subgroups, each with its own required level
        leaves = [b.sub_group(leaf, min_member=1) for leaf in "ab"]
        for leaf in leaves:
            level = draw(st.sampled_from(LEVELS[LEVELS.index(required) if required else 1 :]))
            if level:
                leaf["topologyConstraint"] = {"topology": "t", "requiredTopologyLevel": level}
        for i, p in enumerate(pods):
            p["metadata"]["labels"][constants.LABEL_SUBGROUP_NAME] = "ab"[i % 2]
        return [b.podgroup(name, min_member=None, sub_groups=leaves, **spec), *pods]
    return [b.podgroup(name, min_member=draw(st.integers(1, size)), **spec), *pods]


# --- invariants ------------------------------------------------------------------------------------------------


def assert_shared_gpus_hold_their_sharers(snap: Snapshot) -> None:
    for node in snap.nodes:
        total = node.gpu_memory_mib
        for group in node.gpu_groups.values():
            staying = sum(mib for uid, mib in group.sharers.items() if uid not in group.releasing)
            assert staying <= total + EPS, f"{node.name} group {group.id}: {staying} MiB of {total}"
        for task in node.tasks.values():
            if task.gpu.is_shared and task.status & ON_NODE:
                assert len(set(task.placement.gpu_groups)) == task.gpu.num_devices, f"{task.key} groups"


def assert_required_levels_hold(snap: Snapshot) -> None:
    labels = {n.name: n.labels for n in snap.nodes}
    for job in snap.jobs.values():
        for member, constraint_level in _constrained(job):
            nodes = {t.node for ps in member.pod_sets() for t in ps.tasks if t.is_active_allocated and t.node}
            if not nodes:
                continue
            key = [ZONE, RACK, constants.LABEL_HOSTNAME][: LEVELS.index(constraint_level)]
            domains = set()
            for node in nodes:
                assert all(k in labels[node] for k in (ZONE, RACK)), f"{job.key} on {node}, outside the topology"
                domains.add(tuple(labels[node][k] for k in key))
            assert len(domains) == 1, f"{job.key} ({member.name or 'root'}) spans {constraint_level}s {domains}"


def _constrained(job: JobInfo) -> list[tuple[Member, str]]:
    """The job's root and subgroups that have a required level, with that level."""
    level = job.podgroup.topology_constraint.required_level
    out: list[tuple[Member, str]] = [(job.root, level)] if level else []
    for leaf in job.pod_sets.values():
        if leaf.topology_constraint is not None and leaf.topology_constraint.required_level:
            out.append((leaf, leaf.topology_constraint.required_level))
    return out


def _check(snap: Snapshot) -> None:
    assert_shared_gpus_hold_their_sharers(snap)
    assert_required_levels_hold(snap)


@SETTINGS
@given(cluster=clusters())
def test_one_cycle(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(None), now=b.NOW)
    _check(embedded.cycle().snapshot)


@SETTINGS
@given(cluster=clusters())
def test_three_cycles_with_the_embedded_binder(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(None), now=b.NOW)
    for result in embedded.run(3):
        _check(result.snapshot)
    _check(embedded.view())
