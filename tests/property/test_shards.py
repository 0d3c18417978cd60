"""Property: with nodes, queues and jobs spread at random over node pools, and one scheduler shard per pool
running side by side over one embedded cluster, no pod ever lands on (or is evicted from) a node of another
pool, and each queue's GPUs stay in its pool."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import constants
from kai_scheduler.framework.statement import Op
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
KEY = constants.DEFAULT_NODE_POOL_LABEL_KEY
POOLS = ("", "a", "b")

JSON = dict[str, Any]


def _labels(pool: str) -> dict[str, str]:
    return {KEY: pool} if pool else {}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[JSON], dict[str, str], dict[str, str]]:
    """Objects, each node's pool and each job's pool (by PodGroup name)."""
    objects: list[JSON] = [b.priority_class("low", 10), b.priority_class("high", 90)]
    node_pool: dict[str, str] = {}
    for i in range(draw(st.integers(1, 5))):
        pool = draw(st.sampled_from(POOLS))
        node_pool[f"n{i}"] = pool
        objects.append(b.node(f"n{i}", gpus=draw(st.sampled_from((2, 4, 8))), labels=_labels(pool)))
    for pool in POOLS:
        objects.append(b.queue(f"q{pool or 'u'}", labels=_labels(pool), gpu_quota=draw(st.sampled_from((0, 4)))))
    job_pool: dict[str, str] = {}
    for j in range(draw(st.integers(1, 6))):
        pool = draw(st.sampled_from(POOLS))
        name = f"j{j}"
        job_pool[name] = pool
        size = draw(st.integers(1, 3))
        priority = draw(st.sampled_from(("low", "high")))
        queue = f"q{pool or 'u'}"
        objects.append(b.podgroup(name, queue=queue, min_member=size, priority_class=priority, labels=_labels(pool)))
        # Some jobs already run on a node of their pool (victims for reclaim and preempt).
        mine = [n for n, p in node_pool.items() if p == pool]
        running = bool(mine) and draw(st.booleans())
        for k in range(size):
            node = draw(st.sampled_from(mine)) if running else ""
            objects.append(b.pod(f"{name}-{k}", group=name, gpus=1, node=node))
    return objects, node_pool, job_pool


@given(clusters())
@SETTINGS
def test_no_pod_is_ever_placed_on_or_evicted_from_another_pools_node(
    drawn: tuple[list[JSON], dict[str, str], dict[str, str]],
) -> None:
    objects, node_pool, job_pool = drawn
    config = load_config(None)
    shards = [
        (
            pool or "default",
            dataclasses.replace(config, flags=dataclasses.replace(config.flags, partition_label_value=pool)),
        )
        for pool in POOLS
    ]
    cluster = EmbeddedCluster(objects, config, now=b.NOW, shards=shards)
    for i in range(3):
        if i:
            cluster.between_cycles()
        result = cluster.cycle()
        for op in result.operations:
            pool = job_pool[op.task.pod.meta.annotations[constants.ANNOTATION_POD_GROUP_NAME]]
            for node in (op.before.node, op.after.node):
                if node:
                    assert node_pool[node] == pool, f"{op.op.name} of {op.task.key} ({pool!r}) on {node}"
            if op.op in (Op.ALLOCATE, Op.PIPELINE):
                assert cluster.placed_by[op.task.key] == (pool or "default")
    view = cluster.view()
    for task in view.tasks.values():
        if task.is_on_node:
            job = view.jobs[task.job_uid]
            assert node_pool[task.node] == job_pool[job.name]
