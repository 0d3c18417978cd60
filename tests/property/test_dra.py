"""Property: a DRA device is never allocated to two claims (a shared claim is one claim, however many pods use
it), in the session's model after each cycle and in the claims' `status.allocation` the binder writes, over random
small clusters: 1-4 nodes with 0-4 DRA GPUs, a network-attached pool, running pods that hold devices, pending
gangs of 1-4 pods with per-pod claims of 1-2 GPUs (some with selectors, some All), some pods on one shared claim,
some queues over their share (reclaim and preempt evict holders), three cycles with the binder between them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.cluster.resources import GPU, QUEUE_AXIS
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b

JSON = dict[str, Any]
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
QUEUE_GPU = QUEUE_AXIS.index(GPU)
ODD = 'device.attributes["gpu.nvidia.com"].index % 2 == 1'


def _running(draw: st.DrawFn, free: dict[str, list[str]], *, most: int) -> list[JSON]:
    """Up to `most` running pods of queues qa/qb, each holding one free GPU of `free` (taken from it) through a
    per-pod claim made from the template `one`."""
    objects: list[JSON] = []
    for j in range(draw(st.integers(0, most))):
        nodes = [n for n, left in free.items() if left]
        if not nodes:
            break
        node = draw(st.sampled_from(nodes))
        device = free[node].pop(0)
        name = f"run-{j}"
        objects.append(b.podgroup(name, queue=draw(st.sampled_from(["qa", "qb"]))))
        objects.append(b.claim(f"{name}-gpu", for_pod=name, allocated=[(node, device)], reserved_for=[name]))
        objects.append(b.pod(name, node=node, claims={"gpu": "template:one"}, claim_statuses={"gpu": f"{name}-gpu"}))
    return objects


@st.composite
def clusters(draw: st.DrawFn) -> list[JSON]:
    n_nodes = draw(st.integers(1, 4))
    gpus = [draw(st.integers(0, 4)) for _ in range(n_nodes)]
    objects: list[JSON] = [b.device_class(), b.device_class("nic.example.com")]
    objects += [b.node(f"n{i}", gpus=0) for i in range(n_nodes)]
    objects += [b.resource_slice(f"n{i}", gpus=g) for i, g in enumerate(gpus) if g]
    objects.append(
        b.resource_slice(devices=[b.device("nic-0"), b.device("nic-1")], driver="nic.example.com", pool="net")
    )
    objects += [b.queue("qa", gpu_quota=2), b.queue("qb", gpu_quota=1)]
    objects.append(b.claim("shared", labels={"kai.scheduler/queue": "qa"}))
    free = {f"n{i}": [f"gpu-{j}" for j in range(g)] for i, g in enumerate(gpus)}
    objects += _running(draw, free, most=4)
    objects.append(b.claim_template("one"))
    objects.append(b.claim_template("two", count=2))
    objects.append(b.claim_template("odd", selectors=[ODD]))
    objects.append(b.claim_template("all", count=None))
    objects.append(b.claim_template("nic", device_class_name="nic.example.com"))
    for j in range(draw(st.integers(1, 5))):
        name = f"job-{j}"
        size = draw(st.integers(1, 4))
        objects.append(b.podgroup(name, queue=draw(st.sampled_from(["qa", "qb"])), min_member=size, created=j))
        for k in range(size):
            kind = draw(st.sampled_from(["one", "two", "odd", "all", "nic", "shared"]))
            claims = {"gpu": "shared"} if kind == "shared" else {"gpu": f"template:{kind}"}
            objects.append(b.pod(f"{name}-{k}", group=name, claims=claims, created=j))
    return objects


def _double_booked(allocations: dict[str, list[tuple[str, str, str]]]) -> dict[tuple[str, str, str], list[str]]:
    holders: dict[tuple[str, str, str], list[str]] = {}
    for claim, devices in allocations.items():
        for device in devices:
            holders.setdefault(device, []).append(claim)
    return {d: c for d, c in holders.items() if len(c) > 1}


def _store_allocations(cluster: EmbeddedCluster) -> dict[str, list[tuple[str, str, str]]]:
    out = {}
    for claim in cluster.store.list("resourceclaims")[0]:
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation:
            results = allocation["devices"]["results"]
            out[claim["metadata"]["name"]] = [(r["driver"], r["pool"], r["device"]) for r in results]
    return out


@SETTINGS
@given(clusters())
def test_a_device_is_never_allocated_to_two_claims(objects: list[JSON]) -> None:
    config = load_config({"actions": "allocate, reclaim, preempt"})
    cluster = EmbeddedCluster(objects, config, now=b.NOW)
    for cycle in range(3):
        if cycle:
            cluster.between_cycles()
        result = cluster.cycle()
        state = result.snapshot.dra_state()
        assert {d: c for d, c in state.holders().items() if len(c) > 1} == {}
        assert _double_booked(_store_allocations(cluster)) == {}
    cluster.between_cycles()
    assert _double_booked(_store_allocations(cluster)) == {}


@st.composite
def charged_clusters(draw: st.DrawFn) -> list[JSON]:
    """Small clusters where GPUs come through every kind of claim: per-pod claims (ExactCount and All), shared
    claims (ExactCount and All, some running pods already on one), node GPUs and a network-attached GPU pool."""
    n_nodes = draw(st.integers(1, 3))
    gpus = [draw(st.integers(0, 4)) for _ in range(n_nodes)]
    objects: list[JSON] = [b.device_class()]
    objects += [b.node(f"n{i}", gpus=0) for i in range(n_nodes)]
    objects += [b.resource_slice(f"n{i}", gpus=g) for i, g in enumerate(gpus) if g]
    network = draw(st.integers(0, 2))
    if network:
        devices = [b.device(f"rgpu-{i}", type="gpu", index=i) for i in range(network)]
        objects.append(b.resource_slice(devices=devices, pool="net"))
    objects += [b.queue("qa", gpu_quota=2), b.queue("qb", gpu_quota=1)]
    objects.append(b.claim("sa", labels={"kai.scheduler/queue": "qa"}, count=draw(st.integers(1, 2))))
    objects.append(b.claim("sb", labels={"kai.scheduler/queue": "qb"}, count=None))
    free = {f"n{i}": [f"gpu-{j}" for j in range(g)] for i, g in enumerate(gpus)}
    holders = [n for n, left in free.items() if left]
    if holders and draw(st.booleans()):  # two running pods of qa on shared claim "held"
        node = draw(st.sampled_from(holders))
        device = free[node].pop(0)
        users = ["held-0", "held-1"]
        objects.append(b.podgroup("held", queue="qa", min_member=2))
        objects.append(
            b.claim("held", labels={"kai.scheduler/queue": "qa"}, allocated=[(node, device)], reserved_for=users)
        )
        objects += [b.pod(u, group="held", node=node, claims={"gpu": "held"}) for u in users]
    objects += _running(draw, free, most=3)
    objects.append(b.claim_template("one"))
    objects.append(b.claim_template("two", count=2))
    objects.append(b.claim_template("all", count=None))
    for j in range(draw(st.integers(1, 5))):
        name = f"job-{j}"
        size = draw(st.integers(1, 3))
        queue = draw(st.sampled_from(["qa", "qb"]))
        objects.append(b.podgroup(name, queue=queue, min_member=size, created=j))
        for k in range(size):
            kind = draw(st.sampled_from(["one", "two", "all", "sa", "sb"]))
            claims = {"gpu": kind} if kind in ("sa", "sb") else {"gpu": f"template:{kind}"}
            objects.append(b.pod(f"{name}-{k}", group=name, claims=claims, created=j))
    return objects


@SETTINGS
@given(charged_clusters())
def test_queue_gpus_are_the_devices_its_claims_hold(objects: list[JSON]) -> None:
    """After every cycle, each queue's allocated GPUs are the GPU devices held by the claims of its pods, each
    device once (a shared claim once, an All claim by the devices it got), never negative, and all of them
    together within the cluster's GPUs; no device has two claims."""
    config = load_config({"actions": "allocate, reclaim, preempt, consolidation"})
    cluster = EmbeddedCluster(objects, config, now=b.NOW)
    for cycle in range(3):
        if cycle:
            cluster.between_cycles()
        result = cluster.cycle()
        snap = result.snapshot
        state = snap.dra_state()
        assert {d: c for d, c in state.holders().items() if len(c) > 1} == {}
        by_uid = {str(t.uid): t for t in snap.tasks.values()}
        held: dict[str, set[int]] = {}
        for key, claim in state.allocs.items():
            users = [by_uid[uid] for uid in claim.users if uid in by_uid]
            if not claim.held or not users:
                continue
            queue = snap.jobs[users[0].job_uid].queue
            assert all(snap.jobs[u.job_uid].queue == queue for u in users), key
            held.setdefault(queue, set()).update(claim.devices)
        total = snap.total_capacity()[GPU]
        allocated = {name: float(share.allocated[QUEUE_GPU]) for name, share in result.queue_shares.items()}
        for name in ("qa", "qb"):
            assert allocated[name] == pytest.approx(len(held.get(name, ()))), (cycle, name)
            assert allocated[name] >= 0
        assert allocated["qa"] + allocated["qb"] <= total + 1e-9
