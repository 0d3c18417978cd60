"""stalegangeviction over the embedded cluster: the stale timestamp on the PodGroup, the grace period, the eviction.

Rule-by-rule cases are scenario files (tests/scenarios/stale); these check the PodGroup annotation writes.
"""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.actions import stalegangeviction
from kai_scheduler.api import constants
from kai_scheduler.api.fields import format_time
from kai_scheduler.framework.statement import Op
from tests import builders as b
from tests.actions import victim_builders as v

JSON = dict[str, Any]
STALE = constants.ANNOTATION_STALE_TIMESTAMP
CONFIG = {"actions": "allocate, stalegangeviction"}


def broken_gang(*, stale_since: float | None = None, **spec: Any) -> list[JSON]:
    """A 4-pod gang on a 2-GPU node: 2 pods run, 2 can never start."""
    notes = {STALE: format_time(stale_since)} if stale_since is not None else None
    group = b.podgroup("gang", queue="team", min_member=4, priority_class="train", annotations=notes, **spec)
    pods = [b.pod(f"gang-{i}", group="gang", gpus=1, cpu="0", memory="0", node="n1" if i < 2 else "") for i in range(4)]
    return [b.node("n1", gpus=2), v.queue("team", gpu_quota=-1), group, *pods]


def test_first_detection_writes_the_stale_timestamp_and_evicts_nothing() -> None:
    cluster = v.cluster(broken_gang(), config=CONFIG)
    assert cluster.cycle().evictions == 0
    assert v.annotations(cluster, "gang")[STALE] == format_time(b.NOW)


def test_the_timestamp_is_written_once_and_the_gang_evicted_after_the_grace_period() -> None:
    cluster = v.cluster(broken_gang(), config=CONFIG)
    cluster.cycle()
    version = cluster.store.get("podgroups", "gang", b.NAMESPACE)["metadata"]["resourceVersion"]
    cluster.between_cycles(30)
    assert cluster.cycle().evictions == 0
    assert cluster.store.get("podgroups", "gang", b.NAMESPACE)["metadata"]["resourceVersion"] == version
    cluster.between_cycles(31)
    result = cluster.cycle()
    assert sorted(op.task.name for op in result.operations if op.op is Op.EVICT) == ["gang-0", "gang-1"]
    [event, _] = sorted(v.events(cluster, "Evict"), key=lambda e: e["involvedObject"]["name"])
    assert event["message"] == (
        "gang ns/gang is stale: 2 of the 4 pods it needs are running, for 1m1s (grace period 1m)"
    )


def test_one_running_pod_of_a_stale_gang_is_said_in_the_singular() -> None:
    objects = broken_gang(stale_since=b.NOW - 61)
    objects[0] = b.node("n1", gpus=1)
    objects[-3] = b.pod("gang-1", group="gang", gpus=1, cpu="0", memory="0")  # never started: one pod of four runs
    cluster = v.cluster(objects, config=CONFIG)
    cluster.cycle()
    [event] = v.events(cluster, "Evict")
    assert event["message"] == "gang ns/gang is stale: 1 of the 4 pods it needs is running, for 1m1s (grace period 1m)"


def test_a_gang_that_is_no_longer_stale_has_its_timestamp_cleared() -> None:
    objects = broken_gang(stale_since=b.NOW - 10)
    objects[0] = b.node("n1", gpus=4)  # room for the whole gang: allocate places it, no longer stale
    cluster = v.cluster(objects, config=CONFIG)
    result = cluster.cycle()
    assert result.evictions == 0 and result.binds == 2
    assert STALE not in v.annotations(cluster, "gang")


@pytest.mark.parametrize(
    "own, default, want",
    [
        pytest.param(None, 60.0, 60.0, id="the scheduler default"),
        pytest.param(600.0, 60.0, 600.0, id="the PodGroup's own"),
        pytest.param(-1.0, 60.0, -1.0, id="negative: never"),
        pytest.param(0.0, 60.0, 0.0, id="zero: at once"),
    ],
)
def test_grace_period(own: float | None, default: float, want: float) -> None:
    spec = {} if own is None else {"stalenessGracePeriod": f"{own:g}s"}
    snap = b.snapshot(broken_gang(**spec))
    job = next(j for j in snap.jobs.values() if j.name == "gang")
    assert stalegangeviction.grace_period(job, default) == want
