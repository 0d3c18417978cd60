"""reflectjoborder: the allocate order of pending, ready jobs as KAI's `/get-job-order` reports it."""

from __future__ import annotations

import json

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler import job_order
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

PLUGINS = [{"name": n} for n in ("predicates", "proportion", "priority", "nodeplacement", "reflectjoborder")]


def cluster() -> list[b.JSON]:
    """Two queues; in q-a a high and a low priority job, a running one and one whose pod is gated; in q-b one."""
    return [
        b.node("n1"),
        b.queue("q-a"),
        b.queue("q-b"),
        b.priority_class("high", 200),
        b.priority_class("low", 50),
        b.podgroup("a-low", queue="q-a", priority_class="low", created=1),
        b.pod("a-low-0", group="a-low", gpus=1),
        b.podgroup("a-high", queue="q-a", priority_class="high", created=2),
        b.pod("a-high-0", group="a-high", gpus=1),
        b.podgroup("a-running", queue="q-a", priority_class="high"),
        b.pod("a-running-0", group="a-running", gpus=1, node="n1"),
        b.podgroup("a-gated", queue="q-a", priority_class="high"),
        b.pod("a-gated-0", group="a-gated", gpus=1, gated=True),
        b.podgroup("b-only", queue="q-b", priority_class="low"),
        b.pod("b-only-0", group="b-only", gpus=1),
    ]


def reflect(depth: int | None = None) -> job_order.JobOrder:
    raw: dict[str, object] = {"actions": "allocate", "tiers": [{"plugins": PLUGINS}]}
    if depth is not None:
        raw["queueDepthPerAction"] = {"allocate": depth}
    return job_order.reflect(b.session(b.snapshot(cluster()), config=load_config(raw)))


def test_pending_ready_jobs_in_allocate_order_by_queue() -> None:
    order = reflect()
    high, low, only = ({"id": n, "priority": p} for n, p in (("a-high", 200), ("a-low", 50), ("b-only", 50)))
    assert order["queue_order"] == {"q-a": [high, low], "q-b": [only]}
    assert sorted(order["global_order"], key=str) == sorted([high, low, only], key=str)
    assert order["global_order"][0] == high  # the higher priority job of the queue goes first


def test_the_allocate_queue_depth_bounds_each_queue() -> None:
    order = reflect(depth=1)
    assert order["queue_order"] == {
        "q-a": [{"id": "a-high", "priority": 200}],
        "q-b": [{"id": "b-only", "priority": 50}],
    }
    assert len(order["global_order"]) == 2


def test_encoded_as_kai_s_go_encoder_writes_it() -> None:
    text = job_order.encode(
        {"global_order": [{"id": "j", "priority": 5}], "queue_order": {"q": [{"id": "j", "priority": 5}]}}
    )
    assert text.endswith(b"}\n") and b'\n  "global_order": [\n    {\n      "id": "j",' in text
    assert json.loads(text) == {
        "global_order": [{"id": "j", "priority": 5}],
        "queue_order": {"q": [{"id": "j", "priority": 5}]},
    }
    assert (
        job_order.encode({"global_order": [], "queue_order": {}})
        == b'{\n  "global_order": [],\n  "queue_order": {}\n}\n'
    )


def test_a_cycle_keeps_the_order_its_session_opened_with() -> None:
    clock = ManualClock(b.NOW)
    store = MemoryStore(clock)
    store.add_many(cluster())
    scheduler = Scheduler(store, load_config({"actions": "allocate", "tiers": [{"plugins": PLUGINS}]}), clock)
    assert scheduler.job_order is None
    scheduler.run_once()
    assert scheduler.job_order is not None
    # taken before allocate ran: the jobs it then placed are still listed
    assert {e["id"] for e in scheduler.job_order["global_order"]} == {"a-high", "a-low", "b-only"}
    without = Scheduler(store, load_config({"actions": "allocate"}), clock)
    without.run_once()
    assert without.job_order is None  # not configured: nothing computed
