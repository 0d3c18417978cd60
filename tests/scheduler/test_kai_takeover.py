"""What NVIDIA's KAI Scheduler wrote, read by this scheduler after it replaced KAI on a running cluster
(docs/kai-users.md, "Replacing KAI on a running cluster"; the end-to-end check is tests/e2e/test_cutover.py).

KAI names the unlabelled node pool `default` in the `UnschedulableOnNodePool` conditions it writes on PodGroups, and
so does this scheduler; an earlier version of it wrote "". Either must be taken as this pool's: cleared when the job is
placed, replaced (not joined by a second one) when it is still unschedulable, and honoured by
`schedulingBackoff: 1`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import format_time
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]


def _kais_condition(message: str = "no node has room for 2 pods of 4 GPUs") -> JSON:
    return {
        "type": "UnschedulableOnNodePool",
        "nodePool": "default",
        "reasons": [{"reason": "Unschedulable", "message": message}],
        "status": "True",
        "transitionID": "3",
        "lastTransitionTime": format_time(b.NOW - 600),
    }


def _with_kais_condition(pg: JSON) -> JSON:
    pg["status"] = {"schedulingConditions": [_kais_condition()]}
    return pg


def _run(objects: list[JSON]) -> MemoryStore:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(objects)
    Scheduler(store, load_config(None), clock).run_once()
    return store


def _conditions(store: MemoryStore, name: str) -> list[JSON]:
    pg = store.get("podgroups", name, b.NAMESPACE)
    return list((pg.get("status") or {}).get("schedulingConditions") or [])


def _bind_requests(store: MemoryStore) -> list[str]:
    return sorted(r["spec"]["podName"] for r in store.list("bindrequests")[0])


def test_kais_condition_is_cleared_when_the_gang_is_placed() -> None:
    store = _run(
        [
            b.queue("q"),
            b.node("n1"),
            b.node("n2"),
            _with_kais_condition(b.podgroup("gang", min_member=2)),
            b.pod("gang-0", group="gang", gpus=4),
            b.pod("gang-1", group="gang", gpus=4),
        ]
    )
    assert _bind_requests(store) == ["gang-0", "gang-1"]
    assert _conditions(store, "gang") == []


def test_kais_condition_is_replaced_not_joined_when_the_gang_still_waits() -> None:
    store = _run(
        [
            b.queue("q"),
            b.node("n1", gpus=2),
            _with_kais_condition(b.podgroup("gang", min_member=2)),
            b.pod("gang-0", group="gang", gpus=4),
            b.pod("gang-1", group="gang", gpus=4),
        ]
    )
    conditions = _conditions(store, "gang")
    assert len(conditions) == 1, conditions
    assert conditions[0]["nodePool"] == "default"
    assert conditions[0]["transitionID"] == "4"  # the next transition of KAI's
    assert conditions[0]["reasons"][0]["message"] != _kais_condition()["reasons"][0]["message"]


def test_a_condition_of_another_node_pool_is_kept() -> None:
    other = _kais_condition()
    other["nodePool"] = "pool-a"
    pg = b.podgroup("gang", min_member=2)
    pg["status"] = {"schedulingConditions": [other]}
    store = _run(
        [
            b.queue("q"),
            b.node("n1"),
            b.node("n2"),
            pg,
            b.pod("gang-0", group="gang", gpus=4),
            b.pod("gang-1", group="gang", gpus=4),
        ]
    )
    assert _bind_requests(store) == ["gang-0", "gang-1"]
    assert [c["nodePool"] for c in _conditions(store, "gang")] == ["pool-a"]


def test_scheduling_backoff_honours_kais_condition() -> None:
    """`schedulingBackoff: 1`: KAI stopped considering the job once it was unschedulable in its pool; after the
    cutover it stays so, as KAI would have kept it (delete the condition, or the PodGroup, to have it tried)."""
    store = _run(
        [
            b.queue("q"),
            b.node("n1"),
            _with_kais_condition(b.podgroup("once", min_member=1, schedulingBackoff=1)),
            b.pod("once-0", group="once", gpus=1),
        ]
    )
    assert _bind_requests(store) == []


_POOLS = st.sampled_from(["", "default", "pool-a", "pool-b"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools=st.lists(_POOLS, max_size=4), fits=st.booleans())
def test_the_unlabelled_pools_scheduler_keeps_one_condition_of_its_own_and_every_other_pools(
    pools: list[str], fits: bool
) -> None:
    """Whatever conditions a PodGroup carries (KAI's `default`, this project's "", other pools', repeated): after a
    cycle of the unlabelled pool's scheduler none of `default` or "" is left beside its own, at most one is its
    own (none when the job was placed), and the other pools' are kept as they were, in their order."""
    conditions = []
    for i, pool in enumerate(pools):
        condition = _kais_condition(f"said by {pool or 'us'} ({i})")
        condition["nodePool"] = pool
        conditions.append(condition)
    pg = b.podgroup("gang", min_member=2)
    pg["status"] = {"schedulingConditions": conditions}
    store = _run(
        [
            b.queue("q"),
            b.node("n1", gpus=8 if fits else 2),
            pg,
            b.pod("gang-0", group="gang", gpus=4),
            b.pod("gang-1", group="gang", gpus=4),
        ]
    )
    after = _conditions(store, "gang")
    others = [c for c in conditions if c["nodePool"] not in ("", "default")]
    if fits:
        assert _bind_requests(store) == ["gang-0", "gang-1"]
        assert after == others
    else:
        assert [c for c in after if c["nodePool"] not in ("", "default")] == others
        assert [c["nodePool"] for c in after if c["nodePool"] in ("", "default")] == ["default"]
