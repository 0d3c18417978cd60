"""The fake kubelet over a MemoryStore on a ManualClock: start, finish, deletion, bad pods, heartbeats."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import format_time, parse_time
from kai_scheduler.fakenodes import fleet
from kai_scheduler.fakenodes.heartbeat import Heartbeat, HeartbeatConfig
from kai_scheduler.fakenodes.kubelet import FakeKubelet
from kai_scheduler.fakenodes.lifecycle import ANNOTATION_FAKE_DURATION, ANNOTATION_GPU_INDEX
from kai_scheduler.fakenodes.nodes import FleetSpec, build_nodes
from kai_scheduler.store.interface import JSON, NotFound, StoreError
from kai_scheduler.store.memory import MemoryStore

NOW = parse_time("2026-01-01T00:00:00Z")
NODES = ["kai-fake-node-0", "kai-fake-node-1"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    store = MemoryStore(clock)
    fleet.ensure(store, build_nodes(FleetSpec(count=2), clock.now()))
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real-node"}, "status": {}})
    return store


def pod(name: str, node: str | None = NODES[0], duration: str | None = None, **meta: Any) -> JSON:
    annotations = {ANNOTATION_FAKE_DURATION: duration} if duration is not None else {}
    spec: JSON = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team", "annotations": annotations, **meta},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def status(store: MemoryStore, name: str, namespace: str = "team") -> JSON:
    result: JSON = store.get("pods", name, namespace)["status"]
    return result


def test_a_bound_pod_starts_running_with_one_write(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    got = status(store, "p")
    assert got["phase"] == "Running"
    assert got["startTime"] == format_time(NOW)
    assert {c["type"]: c["status"] for c in got["conditions"]} == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert got["containerStatuses"][0]["name"] == "main"
    assert got["containerStatuses"][0]["state"] == {"running": {"startedAt": format_time(NOW)}}
    kubelet.step()
    kubelet.step()
    assert kubelet.stats.writes == 1 and kubelet.stats.started == 1 and kubelet.stats.running == 1


def test_pods_of_other_nodes_and_unbound_pods_are_left_alone(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("elsewhere", node="real-node"))
    store.create(pod("unbound", node=None))
    FakeKubelet(store, clock, NODES).step()
    assert status(store, "elsewhere")["phase"] == "Pending"
    assert status(store, "unbound")["phase"] == "Pending"


def test_a_pod_bound_later_is_started_from_the_watch(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p", node=None))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    store.bind("team", "p", NODES[1])
    kubelet.step()
    assert status(store, "p")["phase"] == "Running"


def test_a_pod_succeeds_once_its_duration_has_elapsed(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p", duration="1m30s"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    clock.advance(89)
    kubelet.step()
    assert status(store, "p")["phase"] == "Running"
    clock.advance(1)
    kubelet.step()
    got = status(store, "p")
    assert got["phase"] == "Succeeded"
    terminated = got["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["finishedAt"] == format_time(NOW + 90)
    assert {c["type"]: c["status"] for c in got["conditions"]}["Ready"] == "False"
    clock.advance(1000)
    kubelet.step()
    assert kubelet.stats.writes == 2 and kubelet.stats.finished == 1 and kubelet.stats.running == 0


def test_a_zero_duration_finishes_at_the_next_step(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p", duration="0s"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    kubelet.step()
    assert status(store, "p")["phase"] == "Succeeded"


def test_without_a_duration_a_pod_runs_forever(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    clock.advance(365 * 86400)
    kubelet.step()
    assert status(store, "p")["phase"] == "Running"


def test_a_deleted_pod_goes_once_its_grace_period_has_passed(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    clock.advance(5)
    store.delete("pods", "p", "team", grace_period_seconds=30)
    kubelet.step()
    clock.advance(29)
    kubelet.step()
    assert store.get("pods", "p", "team")["metadata"]["deletionTimestamp"]
    clock.advance(1)
    kubelet.step()
    with pytest.raises(NotFound):
        store.get("pods", "p", "team")
    assert kubelet.stats.removed == 1 and kubelet.stats.running == 0


def _evict_after_grace(store: MemoryStore, clock: ManualClock) -> None:
    """A running pod with a 10 s grace period is evicted, and the kubelet looks again 10 s later."""
    store.create({**pod("p"), "spec": {**pod("p")["spec"], "terminationGracePeriodSeconds": 10}})
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    store.evict("team", "p")
    clock.advance(10)
    kubelet.step()


def test_an_evicted_pod_goes_after_its_own_grace_period(store: MemoryStore, clock: ManualClock) -> None:
    _evict_after_grace(store, clock)
    assert store.list("pods")[0] == []


class _Recording(MemoryStore):
    """Records the pod writes in order: ("status", phase) and ("delete", grace period)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.writes: list[tuple[str, object]] = []

    def patch(self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", **kw: Any) -> JSON:
        if resource == "pods" and subresource == "status":
            self.writes.append(("status", patch["status"].get("phase")))
        return super().patch(resource, name, namespace, patch, subresource, **kw)

    def delete(self, resource: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        if resource == "pods":
            self.writes.append(("delete", grace_period_seconds))
        super().delete(resource, name, namespace, grace_period_seconds)


def test_an_evicted_pod_is_failed_before_it_goes(clock: ManualClock) -> None:
    """As a kubelet: the killed pod's terminal phase is written, then it is deleted. A Job's pod keeps the Job
    controller's job-tracking finalizer until its phase is terminal; without the phase, evicted Job pods stayed
    terminating on a real control plane until the scheduler counted them stuck (2 minutes)."""
    store = _Recording(clock)
    fleet.ensure(store, build_nodes(FleetSpec(count=2), clock.now()))
    _evict_after_grace(store, clock)
    assert store.writes == [("status", "Running"), ("status", "Failed"), ("delete", 0)]
    assert store.list("pods")[0] == []


class _Refusing(_Recording):
    """Refuses the pods' status writes with 500 while `refusing` (recording each attempt)."""

    refusing = True

    def patch(self, resource: str, name: str, namespace: str, patch: JSON, subresource: str = "", **kw: Any) -> JSON:
        if self.refusing and subresource == "status":
            self.writes.append(("refused", patch["status"].get("phase")))
            raise StoreError(
                f"patch pod {namespace}/{name} status: Internal error occurred: etcdserver: leader changed"
            )
        return super().patch(resource, name, namespace, patch, subresource, **kw)


def test_a_refused_pod_write_is_made_again_after_a_backoff_not_at_every_step(clock: ManualClock) -> None:
    """Steps come at every pod change: a status write the API server refused is made again 1, 2, 4 … s later
    (store/retries.py), not at each of them, a busy loop while the server refuses."""
    store = _Refusing(clock)
    fleet.ensure(store, build_nodes(FleetSpec(count=2), clock.now()))
    store.create(pod("p"))
    kubelet = FakeKubelet(store, clock, NODES)
    for _ in range(5):
        kubelet.step()
    clock.advance(1.0)
    for _ in range(5):
        kubelet.step()
    assert store.writes == [("refused", "Running"), ("refused", "Running")]
    store.refusing = False
    clock.advance(1.0)
    kubelet.step()
    assert store.writes[-1] == ("refused", "Running")  # 2 s after the second refusal, not 1
    clock.advance(1.0)
    kubelet.step()
    assert store.writes[-1] == ("status", "Running") and status(store, "p")["phase"] == "Running"


def test_a_bad_duration_is_logged_once_and_the_pod_runs_on(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    store.create(pod("p", duration="soon"))
    kubelet = FakeKubelet(store, clock, NODES)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            kubelet.step()
            clock.advance(3600)
    assert status(store, "p")["phase"] == "Running"
    warnings = [r for r in caplog.records if "bad duration" in r.getMessage()]
    assert len(warnings) == 1
    assert "kai.scheduler/fake-duration" in warnings[0].__dict__["error"]


def test_an_unreadable_pod_is_logged_once_and_skipped(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    store.create({**pod("bad"), "spec": {"nodeName": NODES[0], "containers": "main"}})
    store.create(pod("good"))
    kubelet = FakeKubelet(store, clock, NODES)
    with caplog.at_level(logging.WARNING):
        kubelet.step()
        store.patch("pods", "bad", "team", {"metadata": {"labels": {"touched": "yes"}}})
        kubelet.step()
    assert status(store, "bad")["phase"] == "Pending"
    assert status(store, "good")["phase"] == "Running"
    skipped = [r for r in caplog.records if "cannot read" in r.getMessage()]
    assert len(skipped) == 1 and "spec.containers" in skipped[0].__dict__["error"]


def test_a_restarted_kubelet_finishes_running_pods_on_time(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p", duration="10m"))
    FakeKubelet(store, clock, NODES).step()
    clock.advance(300)
    assert fleet.ensure(store, build_nodes(FleetSpec(count=2), clock.now())).adopted == NODES
    again = FakeKubelet(store, clock, NODES)
    again.step()
    assert again.stats.writes == 0 and status(store, "p")["phase"] == "Running"
    clock.advance(300)
    again.step()
    assert status(store, "p")["phase"] == "Succeeded"


def test_a_recreated_pod_of_the_same_name_starts_again(store: MemoryStore, clock: ManualClock) -> None:
    store.create(pod("p", duration="1s"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    store.delete("pods", "p", "team", grace_period_seconds=0)
    store.create(pod("p"))
    kubelet.step()
    assert status(store, "p")["phase"] == "Running"
    assert kubelet.stats.started == 2


def test_reservation_pods_get_distinct_gpu_indices(store: MemoryStore, clock: ManualClock) -> None:
    labels = {"app": "kai-resource-reservation", "runai-gpu-group": "g"}
    for name, node in (("r1", NODES[0]), ("r2", NODES[0]), ("r3", NODES[1])):
        store.create(
            {
                **pod(name, node=node, labels=labels),
                "metadata": {"name": name, "namespace": "kai-resource-reservation", "labels": labels},
            }
        )
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    indices = {
        p["metadata"]["name"]: p["metadata"]["annotations"][ANNOTATION_GPU_INDEX]
        for p in store.list("pods", "kai-resource-reservation")[0]
    }
    assert indices == {"r1": "0", "r2": "1", "r3": "0"}
    assert status(store, "r2", "kai-resource-reservation")["phase"] == "Running"


def test_heartbeats_renew_the_leases_and_the_ready_condition(store: MemoryStore, clock: ManualClock) -> None:
    config = HeartbeatConfig(lease_period=10, status_period=60)
    uid = store.get("nodes", NODES[0])["metadata"]["uid"]
    kubelet = FakeKubelet(store, clock, NODES, Heartbeat(store, clock, NODES, config, {NODES[0]: uid}))
    kubelet.step()
    lease = store.get("leases", NODES[0], "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == NODES[0]
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert parse_time(lease["spec"]["renewTime"].replace(".000000", "")) == NOW
    assert lease["metadata"]["ownerReferences"][0]["uid"] == uid
    clock.advance(9)
    kubelet.step()
    assert store.get("leases", NODES[0], "kube-node-lease")["spec"]["renewTime"] == lease["spec"]["renewTime"]
    clock.advance(1)
    kubelet.step()
    renewed = store.get("leases", NODES[1], "kube-node-lease")["spec"]["renewTime"]
    assert renewed == "2026-01-01T00:00:10.000000Z"
    clock.advance(50)
    kubelet.step()
    ready = store.get("nodes", NODES[1])["status"]["conditions"][0]
    assert ready["type"] == "Ready" and ready["status"] == "True"
    assert ready["lastHeartbeatTime"] == format_time(NOW + 60)
    assert ready["lastTransitionTime"] == format_time(NOW)


def test_a_heartbeat_takes_over_a_previous_runs_lease_and_recreates_a_lost_one(
    store: MemoryStore, clock: ManualClock
) -> None:
    store.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NODES[0], "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": NODES[0], "renewTime": "2025-01-01T00:00:00.000000Z"},
        }
    )
    beat = Heartbeat(store, clock, NODES)
    beat.beat()
    assert store.get("leases", NODES[0], "kube-node-lease")["spec"]["renewTime"].startswith("2026-01-01")
    store.delete("leases", NODES[1], "kube-node-lease")
    clock.advance(10)
    beat.beat()
    assert store.get("leases", NODES[1], "kube-node-lease")["spec"]["holderIdentity"] == NODES[1]


def test_pods_with_malformed_binding_fields_are_ignored(store: MemoryStore, clock: ManualClock) -> None:
    store.create({**pod("list-node"), "spec": {"nodeName": [NODES[0]], "containers": []}})
    store.create(pod("good"))
    kubelet = FakeKubelet(store, clock, NODES)
    kubelet.step()
    assert status(store, "good")["phase"] == "Running"


def test_a_heartbeat_that_keeps_failing_is_said_once_and_once_more_when_it_works_again(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A node deleted by hand: its status write fails at every beat (NotFound). One warning, not one per beat."""
    beat = Heartbeat(store, clock, NODES)
    beat.beat()
    [node] = [n for n in store.list("nodes")[0] if n["metadata"]["name"] == NODES[1]]
    store.delete("nodes", NODES[1])
    with caplog.at_level(logging.INFO, logger="kai_scheduler.fakenodes.heartbeat"):
        for _ in range(20):
            clock.advance(60)
            beat.beat()
        failed = [r for r in caplog.records if r.getMessage().startswith("node heartbeat failed")]
        assert [(r.levelname, r.__dict__["node"], r.__dict__["heartbeat"]) for r in failed] == [
            ("WARNING", NODES[1], "status")
        ]
        node["metadata"].pop("resourceVersion", None)
        store.create(node)
        clock.advance(60)
        beat.beat()
    again = [r.__dict__["node"] for r in caplog.records if r.getMessage() == "node heartbeat works again"]
    assert again == [NODES[1]]
