"""MIG instances over random clusters (hypothesis): no instance is ever double-booked and no node over-committed.

Clusters: 1-3 nodes with the mixed strategy, each with 0-4 instances of 1g.10gb, 2g.20gb and 3g.40gb (one may
also have whole GPUs); 2-3 queues with random GPU quotas and weights; running jobs holding instances (some
being deleted, so their instances are releasing and pipelining happens), some non-preemptible; pending jobs
asking one or two profiles, gangs of 1-3 pods, of random priority. Three cycles of allocate, consolidation,
reclaim and preempt on the embedded cluster (its binder and kubelet act between cycles). After every cycle, in
the session's final state and in a fresh view of the cluster:

- on each node, each instance is held by at most one task that is not releasing, and a task holding one with a
  releasing task is pipelined onto it;
- every task on a node holds exactly the instances it asks for, of the profiles it asks for, and only those;
- no node is over-committed in any resource, MIG columns included (the shared invariant of test_invariants).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.cluster.pod_status import BITS, PodStatus
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b
from tests.property.test_invariants import PRIORITY_CLASSES, assert_no_node_over_committed

JSON = dict[str, Any]
PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb")
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CONFIG = load_config({"actions": "allocate, consolidation, reclaim, preempt"})
_RELEASING = PodStatus.RELEASING.value


def _resource(profile: str) -> str:
    return f"nvidia.com/mig-{profile}"


@st.composite
def clusters(draw: st.DrawFn) -> list[JSON]:
    objects: list[JSON] = list(PRIORITY_CLASSES)
    free: dict[str, dict[str, int]] = {}
    for i in range(draw(st.integers(1, 3))):
        counts = {p: draw(st.integers(0, 4)) for p in PROFILES}
        extended = {_resource(p): str(n) for p, n in counts.items() if n}
        labels = {"nvidia.com/mig.strategy": "mixed"}
        objects.append(b.node(f"n{i}", gpus=draw(st.sampled_from([0, 0, 1])), labels=labels, extended=extended))
        free[f"n{i}"] = counts
    queues = [f"q{i}" for i in range(draw(st.integers(2, 3)))]
    for q in queues:
        objects.append(b.queue(q, gpu_quota=draw(st.integers(0, 6)), gpu_weight=draw(st.integers(0, 2))))
    for j in range(draw(st.integers(0, 6))):  # running jobs, placed where their instances are free
        node = draw(st.sampled_from(sorted(free)))
        held = [p for p, n in free[node].items() if n]
        if not held:
            continue
        profile = draw(st.sampled_from(held))
        size = draw(st.integers(1, free[node][profile]))
        free[node][profile] -= size
        deleting = draw(st.integers(0, 3)) == 0
        objects += _job(draw, f"r{j}", draw(st.sampled_from(queues)), {profile: 1}, size, node, deleting)
    for j in range(draw(st.integers(1, 4))):  # pending jobs
        wanted = draw(st.lists(st.sampled_from(PROFILES), min_size=1, max_size=2, unique=True))
        request = {p: draw(st.integers(1, 2)) for p in wanted}
        objects += _job(draw, f"p{j}", draw(st.sampled_from(queues)), request, draw(st.integers(1, 3)), "", False)
    return objects


def _job(
    draw: st.DrawFn, name: str, queue: str, request: dict[str, int], size: int, node: str, deleting: bool
) -> list[JSON]:
    extended = {_resource(p): str(n) for p, n in request.items()}
    pods = [
        b.pod(
            f"{name}-{i}",
            group=name,
            gpus=0,
            extended=extended,
            node=node,
            deleted_at=b.NOW + 30 if deleting else None,
            created=float(i),
        )
        for i in range(size)
    ]
    group = b.podgroup(
        name,
        queue=queue,
        min_member=draw(st.integers(1, size)),
        priority_class=draw(st.sampled_from(["train", "train", "build-preemptible", "build"])),
        created=float(draw(st.integers(0, 100))),
    )
    return [group, *pods]


def assert_no_instance_double_booked(snap: Snapshot) -> None:
    for node in snap.nodes:
        for profile, slots in node.mig_slots.items():
            capacity = int(node.node.allocatable.get(_resource(profile), 0))
            assert len(slots.holders) == capacity, f"{node.name} {profile}: {len(slots.holders)} != {capacity}"
            for index, holders in enumerate(slots.holders):
                active = [uid for uid, s in holders.items() if not BITS[s] & _RELEASING]
                assert len(active) <= 1, f"{node.name} {profile}/{index} held by {sorted(holders)}"
                if active and len(holders) > 1:
                    status = holders[active[0]]
                    assert status == PodStatus.PIPELINED, f"{node.name} {profile}/{index}: {holders}"
        for uid, task in node.tasks.items():
            wanted = dict(task.gpu.mig)
            got: dict[str, int] = {}
            for profile, index in node.mig_held.get(uid, ()):
                got[profile] = got.get(profile, 0) + 1
                assert uid in node.mig_slots[profile].holders[index], f"{task.key}: {profile}/{index} not its own"
            assert got == wanted, f"{task.key} on {node.name} holds {got}, asks {wanted}"
        assert set(node.mig_held) <= set(node.tasks), f"{node.name}: instances held by tasks not on it"


def check(snap: Snapshot) -> None:
    assert_no_instance_double_booked(snap)
    assert_no_node_over_committed(snap)


@SETTINGS
@given(objects=clusters())
def test_no_instance_is_double_booked_across_cycles(objects: list[JSON]) -> None:
    embedded = EmbeddedCluster(objects, CONFIG, now=b.NOW)
    for result in embedded.run(3):
        check(result.snapshot)
    check(embedded.view())


def test_the_generator_covers_evictions_and_pipelining() -> None:
    """A sanity check of the strategy: MIG tasks are allocated, pipelined onto instances being released, and
    evicted by the victim actions."""
    seen: set[str] = set()

    @settings(SETTINGS, max_examples=60)
    @given(objects=clusters())
    def collect(objects: list[JSON]) -> None:
        for result in EmbeddedCluster(objects, CONFIG, now=b.NOW).run(2):
            seen.update(op.op.value for op in result.operations if op.task.gpu.mig)

    collect()
    assert {"allocate", "pipeline", "evict"} <= seen, seen
