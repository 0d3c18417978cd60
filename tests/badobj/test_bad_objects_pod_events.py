"""The pods of a PodGroup the scheduler refused are told why they wait, on the pod, where `kubectl describe pod`
shows it: a `PodScheduled=False` condition and one `Warning Unschedulable` event (KAI's reason for a pod that
waits, BEHAVIOR.md §3.1) whose message names the PodGroup and its bad field; once per pod and message, as every
pod the scheduler tells (the condition on the pod is compared before writing)."""

from __future__ import annotations

from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.scheduler.scheduler import Scheduler, load_config
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

JSON = dict[str, Any]


class CountingStore(MemoryStore):
    """A memory store that counts the events it is asked to create (an event created twice is one object)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.event_writes: list[tuple[str, str]] = []

    def create(self, obj: JSON) -> JSON:
        if obj.get("kind") == "Event":
            self.event_writes.append((obj["involvedObject"]["name"], obj["reason"]))
        return super().create(obj)


def cluster(podgroup: JSON, *, pods: int = 2) -> list[JSON]:
    name = podgroup["metadata"]["name"]
    return [
        b.node("n0", gpus=8),
        b.queue("dept"),
        b.queue("q", parent="dept", gpu_quota=8),
        podgroup,
        *[b.pod(f"{name}-{i}", group=name, gpus=1) for i in range(pods)],
        b.pod("other-scheduler", group=name, scheduler="default-scheduler"),
    ]


def cycles(store: CountingStore, clock: ManualClock, count: int) -> Scheduler:
    scheduler = Scheduler(store, load_config(None), clock)
    for _ in range(count):
        scheduler.run_once()
        clock.advance(1)
    return scheduler


def pod_events(store: MemoryStore, pod: str) -> list[JSON]:
    return [
        e
        for e in store.list("events")[0]
        if e["involvedObject"]["kind"] == "Pod" and e["involvedObject"]["name"] == pod
    ]


def scheduled_condition(store: MemoryStore, pod: str) -> JSON | None:
    conditions = store.get("pods", pod, b.NAMESPACE).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def test_each_pending_pod_of_a_refused_podgroup_gets_one_event_naming_its_problem() -> None:
    clock = ManualClock(b.NOW)
    store = CountingStore(clock)
    store.add_many(cluster(b.podgroup("pg", min_member=-1)))
    cycles(store, clock, 3)
    for pod in ("pg-0", "pg-1"):
        (event,) = pod_events(store, pod)
        assert (event["type"], event["reason"]) == ("Warning", constants.REASON_UNSCHEDULABLE)
        assert event["message"].startswith("podgroup 'pg' is invalid: PodGroup ns/pg spec.minMember: ")
        assert "\n" not in event["message"]
        condition = scheduled_condition(store, pod)
        assert condition is not None and condition["message"] == event["message"]
        assert condition["reason"] == "Unschedulable" and condition["status"] == "False"
        assert store.get("pods", pod, b.NAMESPACE)["spec"].get("nodeName") is None
        # three cycles, one write: the pod's condition says it already
        assert store.event_writes.count((pod, constants.REASON_UNSCHEDULABLE)) == 1
    assert pod_events(store, "other-scheduler") == []  # not ours to tell


def test_a_new_problem_is_told_once_more_and_a_fixed_podgroup_is_scheduled() -> None:
    clock = ManualClock(b.NOW)
    store = CountingStore(clock)
    store.add_many(cluster(b.podgroup("pg", min_member=-1), pods=1))
    scheduler = cycles(store, clock, 2)
    store.patch("podgroups", "pg", b.NAMESPACE, {"spec": {"minMember": None, "minSubGroup": -2}})
    for _ in range(2):
        scheduler.run_once()
        clock.advance(1)
    messages = [e["message"] for e in pod_events(store, "pg-0")]
    assert len(messages) == 2 and "spec.minMember" in messages[0] and "spec.minSubGroup" in messages[1]
    assert store.event_writes.count(("pg-0", constants.REASON_UNSCHEDULABLE)) == 2
    store.patch("podgroups", "pg", b.NAMESPACE, {"spec": {"minSubGroup": None, "minMember": 1}})
    scheduler.run_once()
    assert any(e["reason"] == "Scheduled" for e in pod_events(store, "pg-0"))


def test_the_pods_of_a_podgroup_in_a_refused_queue_are_told_the_queues_problem() -> None:
    clock = ManualClock(b.NOW)
    store = CountingStore(clock)
    objects = cluster(b.podgroup("pg"), pods=1)
    queue = next(o for o in objects if o["kind"] == "Queue" and o["metadata"]["name"] == "q")
    queue["spec"]["priority"] = "high"
    store.add_many(objects)
    cycles(store, clock, 2)
    (event,) = pod_events(store, "pg-0")
    assert event["reason"] == constants.REASON_UNSCHEDULABLE
    assert "queue 'q' is invalid: Queue q spec.priority" in event["message"]
    assert store.event_writes.count(("pg-0", constants.REASON_UNSCHEDULABLE)) == 1
