"""Scheduling shards (§1.5 partitionLabelValue, §1.3, §8.1): several schedulers, each over its node pool, side by
side over one store. Each rule here fails if a shard reads, places on, evicts or rewrites another pool's objects.
"""

from __future__ import annotations

from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.resources import GPU
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]
KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY


def pool(value: str, key: str = KEY) -> dict[str, str]:
    return {key: value} if value else {}


def _store(*objects: JSON) -> tuple[MemoryStore, ManualClock]:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(list(objects))
    return store, clock


def _shard(store: MemoryStore, clock: ManualClock, value: str, **flags: Any) -> Scheduler:
    raw = {"flags": {"partition-label-value": value, **flags}}
    return Scheduler(store, load_config(raw), clock)


def _gang(name: str, size: int, *, gpus: int, queue: str, pool_value: str, **pg: Any) -> list[JSON]:
    return [
        b.podgroup(name, queue=queue, min_member=size, labels=pool(pool_value), **pg),
        *(b.pod(f"{name}-{i}", group=name, gpus=gpus) for i in range(size)),
    ]


def _two_pools() -> list[JSON]:
    """Pool a: node a1 (4 GPUs), queue qa; pool "" (unlabelled): node u1 (8 GPUs), queue qu."""
    return [
        b.node("a1", gpus=4, labels=pool("a")),
        b.node("u1", gpus=8),
        b.queue("qa", labels=pool("a")),
        b.queue("qu"),
    ]


def _bind_requests(store: MemoryStore) -> dict[str, JSON]:
    items, _ = store.list("bindrequests")
    return {br["metadata"]["name"]: br for br in items}


# --- what a shard sees ------------------------------------------------------------------------------------------


def test_a_snapshot_holds_only_its_pools_nodes_queues_and_podgroups() -> None:
    raw = [*_two_pools(), *_gang("ja", 1, gpus=1, queue="qa", pool_value="a")]
    raw += _gang("ju", 1, gpus=1, queue="qu", pool_value="")
    objects = b.objects(raw)
    a = snapshots.build(objects, snapshots.SnapshotParams(now=b.NOW, partition_label_value="a"))
    assert [n.name for n in a.nodes] == ["a1"]
    assert list(a.queues) == ["qa"]
    assert [j.name for j in a.jobs.values()] == ["ja"]
    # The empty value is the pool of objects without the label.
    u = snapshots.build(objects, snapshots.SnapshotParams(now=b.NOW))
    assert [n.name for n in u.nodes] == ["u1"]
    assert list(u.queues) == ["qu"]
    assert [j.name for j in u.jobs.values()] == ["ju"]


def test_the_kept_snapshot_filters_like_a_build_from_nothing() -> None:
    store, clock = _store(*_two_pools(), *_gang("ja", 1, gpus=1, queue="qa", pool_value="a"))
    store.add_many(_gang("ju", 1, gpus=1, queue="qu", pool_value=""))
    shard = _shard(store, clock, "a")
    for _ in range(2):  # the second build goes through the kept model
        snap = shard.snapshot()
        assert [j.name for j in snap.jobs.values()] == ["ja"]
        assert list(snap.queues) == ["qa"]
        del snap


def test_the_cache_keeps_only_the_pools_nodes_queues_podgroups_and_bind_requests() -> None:
    store, clock = _store(*_two_pools(), *_gang("ja", 1, gpus=1, queue="qa", pool_value="a"))
    store.add_many([*_gang("ju", 1, gpus=1, queue="qu", pool_value=""), b.bind_request("ju-0", "u1")])
    shard = _shard(store, clock, "a")
    shard.cache.sync()
    assert [n.name for n in shard.cache.objects("nodes")] == ["a1"]
    assert [q.name for q in shard.cache.objects("queues")] == ["qa"]
    assert [pg.name for pg in shard.cache.objects("podgroups")] == ["ja"]
    assert shard.cache.objects("bindrequests") == []
    # A node relabelled into the pool arrives; one relabelled out of it leaves.
    u1 = store.get("nodes", "u1")
    u1["metadata"]["labels"][KEY] = "a"
    store.update(u1)
    a1 = store.get("nodes", "a1")
    a1["metadata"]["labels"][KEY] = "b"
    store.update(a1)
    shard.cache.sync()
    assert [n.name for n in shard.cache.objects("nodes")] == ["u1"]


def test_a_whole_cluster_reader_keeps_every_pool() -> None:
    store, clock = _store(*_two_pools())
    reader = Scheduler(store, load_config({"flags": {"partition-label-value": "a"}}), clock, whole_cluster=True)
    reader.cache.sync()
    assert sorted(n.name for n in reader.cache.objects("nodes")) == ["a1", "u1"]


def test_a_whole_cluster_readers_kept_snapshot_takes_no_other_pools_changes() -> None:
    """The cache's change feed names every pool's PodGroups: a kept snapshot of pool a must not take them in."""
    store, clock = _store(*_two_pools(), *_gang("ja", 1, gpus=1, queue="qa", pool_value="a"))
    reader = Scheduler(store, load_config({"flags": {"partition-label-value": "a"}}), clock, whole_cluster=True)
    snap = reader.snapshot()
    assert [j.name for j in snap.jobs.values()] == ["ja"]
    del snap
    store.add_many(_gang("ju", 1, gpus=1, queue="qu", pool_value=""))
    snap = reader.snapshot()  # through the kept model
    assert [j.name for j in snap.jobs.values()] == ["ja"]
    assert list(snap.queues) == ["qa"]


# --- where a shard places ---------------------------------------------------------------------------------------


def test_a_job_of_pool_a_waits_for_its_pool_while_another_pool_has_room() -> None:
    """8 GPUs asked, pool a has 4; the unlabelled node has 8 but belongs to the other shard."""
    store, clock = _store(*_two_pools(), *_gang("big", 1, gpus=8, queue="qa", pool_value="a"))
    for value in ("a", ""):
        _shard(store, clock, value).run_once()
    assert _bind_requests(store) == {}


def test_each_shard_places_its_own_jobs_on_its_own_nodes() -> None:
    raw = [*_two_pools(), *_gang("ja", 2, gpus=2, queue="qa", pool_value="a")]
    raw += _gang("ju", 2, gpus=4, queue="qu", pool_value="")
    store, clock = _store(*raw)
    a, u = _shard(store, clock, "a"), _shard(store, clock, "")
    ra, ru = a.run_once(), u.run_once()
    assert {op.task.name: op.after.node for op in ra.operations} == {"ja-0": "a1", "ja-1": "a1"}
    assert {op.task.name: op.after.node for op in ru.operations} == {"ju-0": "u1", "ju-1": "u1"}


def test_fair_share_is_per_pool() -> None:
    """Two queues with no quota and equal weight: each gets its whole pool, not half of both."""
    raw = [*_two_pools(), *_gang("ja", 4, gpus=1, queue="qa", pool_value="a")]
    raw += _gang("ju", 8, gpus=1, queue="qu", pool_value="")
    store, clock = _store(*raw)
    ra = _shard(store, clock, "a").run_once()
    ru = _shard(store, clock, "").run_once()
    assert set(ra.queue_shares) == {"qa"} and set(ru.queue_shares) == {"qu"}
    assert ra.queue_shares["qa"].fair_share[GPU] == 4
    assert ru.queue_shares["qu"].fair_share[GPU] == 8


# --- what a shard writes ----------------------------------------------------------------------------------------


def test_bind_requests_and_pods_carry_the_configured_node_pool_label() -> None:
    key = "example.com/pool"
    raw = [b.node("a1", gpus=4, labels=pool("a", key)), b.queue("qa", labels=pool("a", key))]
    raw += [b.podgroup("ja", queue="qa", labels=pool("a", key)), b.pod("ja-0", group="ja", gpus=1)]
    store, clock = _store(*raw)
    _shard(store, clock, "a", **{"nodepool-label-key": key}).run_once()
    br = _bind_requests(store)["ja-0"]
    assert br["metadata"]["labels"][key] == "a"
    assert KEY not in br["metadata"]["labels"]
    assert store.get("pods", "ja-0", b.NAMESPACE)["metadata"]["labels"][key] == "a"


def test_the_unlabelled_pool_writes_no_node_pool_label() -> None:
    store, clock = _store(*_two_pools(), *_gang("ju", 1, gpus=1, queue="qu", pool_value=""))
    _shard(store, clock, "").run_once()
    assert KEY not in _bind_requests(store)["ju-0"]["metadata"]["labels"]
    assert KEY not in (store.get("pods", "ju-0", b.NAMESPACE)["metadata"].get("labels") or {})


def test_a_shard_leaves_another_pools_bind_requests_alone() -> None:
    """Another pool's BindRequest names a node this shard does not have: it is not stale here, never deleted."""
    br = b.bind_request("ja-0", "a1")
    br["metadata"]["labels"][KEY] = "a"
    failed = b.bind_request("ja-1", "a1", phase="Failed")
    failed["metadata"]["labels"][KEY] = "a"
    store, clock = _store(*_two_pools(), *_gang("ja", 2, gpus=1, queue="qa", pool_value="a"), br, failed)
    before = _bind_requests(store)
    _shard(store, clock, "").run_once()
    after = _bind_requests(store)
    assert after == before  # not deleted, not written again (same resource versions)
    _shard(store, clock, "a").run_once()  # its own failed one is its to delete
    assert "ja-1" not in _bind_requests(store) or _bind_requests(store)["ja-1"].get("status") is None


def test_conditions_of_another_pool_are_kept_when_a_shard_writes_and_clears_its_own() -> None:
    raw = [*_two_pools(), *_gang("j", 1, gpus=16, queue="qa", pool_value="a")]
    store, clock = _store(*raw)
    pg = store.get("podgroups", "j", b.NAMESPACE)
    other = {"type": "UnschedulableOnNodePool", "nodePool": "b", "status": "True", "transitionID": "3", "reasons": []}
    pg["status"] = {"schedulingConditions": [other]}
    store.update_status(pg)
    _shard(store, clock, "a").run_once()
    conditions = store.get("podgroups", "j", b.NAMESPACE)["status"]["schedulingConditions"]
    assert [c["nodePool"] for c in conditions] == ["b", "a"]
    # Now it fits: pool a clears its own condition only.
    node = b.node("a2", gpus=16, labels=pool("a"))
    store.add_many([node])
    _shard(store, clock, "a").run_once()
    conditions = store.get("podgroups", "j", b.NAMESPACE)["status"]["schedulingConditions"]
    assert [c["nodePool"] for c in conditions] == ["b"]


def test_no_shard_reports_another_pools_bound_pods() -> None:
    """A pod of pool a running on a1 is not 'on a node not in this node pool' for the unlabelled shard."""
    running = b.pod("ja-0", group="ja", gpus=1, node="a1", labels=pool("a"))
    store, clock = _store(*_two_pools(), b.podgroup("ja", queue="qa", labels=pool("a")), running)
    result = _shard(store, clock, "").run_once()
    assert [p for p in result.problems if p.reason == "NodeDoesNotExist"] == []
    items, _ = store.list("events")
    assert [e for e in items if e["reason"] == "NodeDoesNotExist"] == []


# --- evictions stay in the pool ---------------------------------------------------------------------------------


def test_preempt_of_one_shard_never_evicts_another_pools_pods() -> None:
    """Pool a's high-priority job needs 4 GPUs; both pools run low-priority 4-GPU jobs on identical nodes. Only
    pool a's may go (a queue named alike in both pools changes nothing)."""
    raw: list[JSON] = [
        b.priority_class("low", 10),
        b.priority_class("high", 90),
        b.node("a1", gpus=4, labels=pool("a")),
        b.node("u1", gpus=4),
        b.queue("qa", labels=pool("a"), gpu_quota=4),
        b.queue("qu", gpu_quota=4),
        b.podgroup("low-a", queue="qa", priority_class="low", labels=pool("a")),
        b.pod("low-a-0", group="low-a", gpus=4, node="a1"),
        b.podgroup("low-u", queue="qu", priority_class="low"),
        b.pod("low-u-0", group="low-u", gpus=4, node="u1"),
        *_gang("high", 1, gpus=4, queue="qa", pool_value="a", priority_class="high"),
    ]
    store, clock = _store(*raw)
    result = _shard(store, clock, "a").run_once()
    assert {op.task.name for op in result.operations if op.op.name == "EVICT"} == {"low-a-0"}
    assert store.get("pods", "low-u-0", b.NAMESPACE).get("metadata", {}).get("deletionTimestamp") is None


def test_stale_gang_eviction_of_one_shard_never_touches_another_pools_gang() -> None:
    stale_since = b.NOW - 600
    stale = {constants.ANNOTATION_STALE_TIMESTAMP: b.format_time(stale_since)}
    raw = [*_two_pools()]
    raw += [b.podgroup("ga", queue="qa", min_member=2, labels=pool("a"), annotations=stale)]
    raw += [b.pod("ga-0", group="ga", gpus=1, node="a1")]
    raw += [b.podgroup("gu", queue="qu", min_member=2, annotations=stale)]
    raw += [b.pod("gu-0", group="gu", gpus=1, node="u1")]
    store, clock = _store(*raw)
    result = _shard(store, clock, "a").run_once()
    assert {op.task.name for op in result.operations if op.op.name == "EVICT"} == {"ga-0"}
    result = _shard(store, clock, "").run_once()
    assert {op.task.name for op in result.operations if op.op.name == "EVICT"} == {"gu-0"}


# --- a job naming another pool's queue ----------------------------------------------------------------------------


def _reasons(store: MemoryStore, podgroup: str) -> list[JSON]:
    conditions = store.get("podgroups", podgroup, b.NAMESPACE).get("status", {}).get("schedulingConditions", [])
    return [r for c in conditions for r in c["reasons"]]


def test_a_job_naming_another_pools_queue_is_told_the_queue_is_in_another_pool() -> None:
    """The shard's cache drops other pools' queues: without their names it said "does not exist" of a queue
    that `kubectl get queues` shows (a pod of pool a without a queue label lands in the unlabelled
    default-queue)."""
    store, clock = _store(*_two_pools(), b.queue("qb", labels=pool("b")))
    store.add_many(_gang("ju", 1, gpus=1, queue="qu", pool_value="a"))
    store.add_many(_gang("jb", 1, gpus=1, queue="qb", pool_value="a"))
    shard = _shard(store, clock, "a")
    shard.run_once()
    assert _reasons(store, "ju") == [
        {
            "reason": "QueueDoesNotExist",
            "message": "queue 'qu' is not in node pool 'a', which schedules this job: the queue has no "
            f"{KEY} label (label the queue and the job alike)",
        }
    ]
    assert _reasons(store, "jb")[0]["message"] == (
        f"queue 'qb' is not in node pool 'a', which schedules this job: the queue is labelled {KEY}=b "
        "(label the queue and the job alike)"
    )
    # Deleted, the queue no longer exists anywhere; labelled into the pool, the job runs.
    store.delete("queues", "qb", "")
    store.patch("queues", "qu", "", {"metadata": {"labels": pool("a")}})
    clock.advance(1)
    shard.run_once()
    assert _reasons(store, "jb") == [{"reason": "QueueDoesNotExist", "message": "queue 'qb' does not exist"}]
    assert _reasons(store, "ju") == []
    assert "ju-0" in _bind_requests(store)


def test_the_unlabelled_pools_shard_names_a_labelled_queue_so() -> None:
    store, clock = _store(*_two_pools(), *_gang("ju", 1, gpus=1, queue="qa", pool_value=""))
    shard = _shard(store, clock, "")
    shard.run_once()
    assert _reasons(store, "ju")[0]["message"] == (
        f"queue 'qa' is not in the node pool of objects without {KEY}, which schedules this job: the queue is "
        f"labelled {KEY}=a (label the queue and the job alike)"
    )
