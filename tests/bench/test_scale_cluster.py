"""bench/scale_cluster.py: the counts it promises, objects the scheduler takes, and no node given more than it has."""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore

BENCH = Path(__file__).resolve().parents[2] / "bench"
NODES = 40


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # scale_cluster imports its sibling `workloads`
    try:
        import scale_cluster
    finally:
        sys.path.remove(str(BENCH))
    return scale_cluster


@pytest.mark.parametrize("free", [True, False])
def test_the_cluster_has_the_counts_in_proportion_and_fits_its_nodes(scale: Any, free: bool) -> None:
    objs = scale.build(NODES, free=free)
    sizes = scale.sizes(NODES)
    kinds = collections.Counter(o["kind"] for o in objs)
    assert kinds["Node"] == NODES and kinds["Pod"] == sizes.pods
    assert kinds["PodGroup"] == sizes.podgroups
    assert kinds["Queue"] == sizes.queues + sizes.departments + 4  # and the idle and starved queues' departments
    gpus: collections.Counter[str] = collections.Counter()
    for pod in (o for o in objs if o["kind"] == "Pod"):
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        fraction = pod["metadata"]["annotations"].get("gpu-fraction")
        gpus[pod["spec"]["nodeName"]] += float(fraction or requests.get("nvidia.com/gpu", 0))
    assert max(gpus.values()) <= 8
    whole = NODES - NODES // scale.FRACTION_EVERY
    assert sum(gpus.values()) == 8 * NODES - (whole * scale.free_per_node(NODES) if free else 0)


def test_the_scheduler_takes_every_object_and_places_nothing(scale: Any) -> None:
    clock = ManualClock(scale.w.EPOCH)
    store = MemoryStore(clock)
    store.add_many(scale.build(NODES, free=True))
    result = Scheduler(store, load_config(None), clock).run_once()
    assert result.problems == [] and result.operations == []
    assert len(result.snapshot.jobs) == scale.sizes(NODES).podgroups
