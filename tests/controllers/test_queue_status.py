"""Queue status (own PodGroups + children, childQueues) and the kai_queue_* gauges."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.controllers.podgroup_status import PodGroupStatusController
from kai_scheduler.controllers.queue_status import LABELS, MetricLabels, QueueStatusController
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, claim, claim_template, node, pod, podgroup, queue, resource_slice

ZERO = {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}


def with_status(
    pg: JSON,
    allocated: dict[str, str],
    requested: dict[str, str] | None = None,
    non_preemptible: dict[str, str] | None = None,
) -> JSON:
    pg["status"] = {
        "resourcesStatus": {
            "allocated": allocated,
            "requested": requested or allocated,
            "allocatedNonPreemptible": non_preemptible or ZERO,
        }
    }
    return pg


def cluster(*objects: JSON) -> tuple[MemoryStore, QueueStatusController, CollectorRegistry]:
    store = MemoryStore(ManualClock(NOW))
    store.add_many(objects)
    registry = CollectorRegistry()
    return store, QueueStatusController(store, registry), registry


def queue_status(store: MemoryStore, name: str) -> JSON:
    out: JSON = store.get("queues", name).get("status", {})
    return out


def test_a_parent_sums_its_children_and_its_own_podgroups() -> None:
    store, ctl, _ = cluster(
        queue("org"),
        queue("team-a", parent="org"),
        queue("team-b", parent="org"),
        queue("solo"),
        with_status(podgroup("a1", queue="team-a"), {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1.5"}),
        with_status(
            podgroup("a2", queue="team-a"),
            {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
            requested={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
        ),
        with_status(
            podgroup("b1", queue="team-b"),
            {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"},
            non_preemptible={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"},
        ),
        with_status(podgroup("o1", queue="org"), {"cpu": "1", "memory": "0", "nvidia.com/gpu": "0"}),
    )
    assert ctl.reconcile() == ["org", "solo", "team-a", "team-b"]
    assert queue_status(store, "team-a") == {
        "allocated": {"cpu": "2500m", "memory": "5Gi", "nvidia.com/gpu": "2.5"},
        "allocatedNonPreemptible": ZERO,
        "requested": {"cpu": "3", "memory": "5Gi", "nvidia.com/gpu": "3.5"},
    }
    org = queue_status(store, "org")
    assert org["childQueues"] == ["team-a", "team-b"]
    assert org["allocated"] == {"cpu": "4500m", "memory": "6Gi", "nvidia.com/gpu": "6.5"}
    assert org["allocatedNonPreemptible"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}
    assert queue_status(store, "solo") == {"allocated": ZERO, "allocatedNonPreemptible": ZERO, "requested": ZERO}


def test_status_is_written_only_when_it_changes() -> None:
    store, ctl, _ = cluster(
        queue("q"), with_status(podgroup("g", queue="q"), {"cpu": "1", "memory": "0", "nvidia.com/gpu": "1"})
    )
    assert ctl.reconcile() == ["q"]
    _, version = store.list("queues")
    assert ctl.reconcile() == []
    assert store.list("queues")[1] == version
    store.delete("podgroups", "g", NAMESPACE)
    assert ctl.reconcile() == ["q"]
    assert queue_status(store, "q")["allocated"] == ZERO


def test_a_parent_cycle_does_not_loop() -> None:
    store, ctl, _ = cluster(
        queue("x", parent="y"),
        queue("y", parent="x"),
        with_status(podgroup("g", queue="x"), {"cpu": "1", "memory": "0", "nvidia.com/gpu": "1"}),
    )
    ctl.reconcile()
    assert queue_status(store, "x")["allocated"]["nvidia.com/gpu"] == "1"
    assert queue_status(store, "y")["allocated"]["nvidia.com/gpu"] in ("0", "1")


def test_queue_metrics() -> None:
    team = queue(
        "team-a",
        gpu_quota=4,
        cpu={"quota": 8000, "overQuotaWeight": 1, "limit": -1},
        memory={"quota": 32000, "overQuotaWeight": 1, "limit": -1},
    )
    team["spec"]["displayName"] = "Team A"
    store, ctl, registry = cluster(
        team,
        queue("open", gpu_quota=-1),
        with_status(podgroup("g", queue="team-a"), {"cpu": "2500m", "memory": "2Gi", "nvidia.com/gpu": "1.5"}),
    )
    ctl.reconcile()
    # KAI's queue controller: queue_name is the Queue's name, whatever its display name
    labels = {"queue_name": "team-a", "queue_metadata_name": "team-a", "queue_display_name": "Team A"}

    def value(metric: str, which: dict[str, str] = labels) -> float | None:
        return registry.get_sample_value(metric, which)

    assert value("kai_queue_info") == 1
    assert value("kai_queue_deserved_gpus") == 4
    assert value("kai_queue_quota_cpu_cores") == 8
    assert value("kai_queue_quota_memory_bytes") == 32e9
    assert value("kai_queue_allocated_gpus") == 1.5
    assert value("kai_queue_allocated_cpu_cores") == 2.5
    assert value("kai_queue_allocated_memory_bytes") == 2 * 2**30
    open_labels = {"queue_name": "open", "queue_metadata_name": "open", "queue_display_name": ""}
    assert value("kai_queue_deserved_gpus", open_labels) == -1
    store.delete("queues", "open")
    ctl.reconcile()
    assert value("kai_queue_info", open_labels) is None


def test_queue_labels_become_metric_labels_as_kai_s_queue_controller_flags_say() -> None:
    """--queue-label-to-metric-label priority=queue_priority,team=queue_team and
    --queue-label-to-default-metric-value priority=normal: the labels follow KAI's three, in queue label key order;
    a queue without the label gets the default, else ""; a label changed on the Queue moves its series."""
    store = MemoryStore(ManualClock(NOW))
    store.add_many([queue("a", labels={"priority": "high", "team": "ml", "other": "x"}), queue("b")])
    registry = CollectorRegistry()
    extra = MetricLabels({"team": "queue_team", "priority": "queue_priority"}, {"priority": "normal"})
    ctl = QueueStatusController(store, registry, metric_labels=extra)
    ctl.reconcile()

    def info(name: str, priority: str, team: str) -> float | None:
        labels = {"queue_name": name, "queue_metadata_name": name, "queue_display_name": ""}
        return registry.get_sample_value("kai_queue_info", {**labels, "queue_priority": priority, "queue_team": team})

    assert info("a", "high", "ml") == 1
    assert info("b", "normal", "") == 1
    families = {m.name: m for m in registry.collect()}
    [sample] = [s for s in families["kai_queue_deserved_gpus"].samples if s.labels["queue_name"] == "a"]
    assert list(sample.labels) == [*LABELS, "queue_priority", "queue_team"]
    relabelled = store.get("queues", "a")
    relabelled["metadata"]["labels"]["priority"] = "low"
    store.update(relabelled)
    ctl.reconcile()
    assert info("a", "high", "ml") is None
    assert info("a", "low", "ml") == 1


@pytest.mark.parametrize(
    ("to_metric", "message"),
    [
        ({"team": "queue-team"}, "queue label 'team': 'queue-team' is not a label name"),
        ({"team": "__team"}, "queue label 'team': '__team' is not a label name"),
        ({"team": "queue_name"}, "queue label 'team': 'queue_name' is already a label of every queue series"),
        ({"a": "x", "b": "x"}, "queue label 'b': 'x' is already the metric label of queue label 'a'"),
    ],
)
def test_a_metric_label_prometheus_would_refuse_is_refused(to_metric: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricLabels(to_metric)


@pytest.mark.parametrize("registries", [1, 2])
def test_each_controller_has_its_own_registry(registries: int) -> None:
    controllers = [cluster(queue("q"))[1] for _ in range(registries)]
    for ctl in controllers:
        ctl.reconcile()
    assert len({id(ctl.registry) for ctl in controllers}) == registries


def test_the_controllers_together_follow_pods_to_queues() -> None:
    store = MemoryStore(ManualClock(NOW))
    store.add_many(
        [
            node("n1"),
            queue("org"),
            queue("team", parent="org"),
            podgroup("g", queue="team"),
            pod("p0", group="g", gpus=2, cpu="1", memory="1Gi", node="n1"),
            pod("p1", group="g", gpus=2, cpu="1", memory="1Gi"),
        ]
    )
    podgroups, queues = PodGroupStatusController(store), QueueStatusController(store)
    podgroups.reconcile()
    queues.reconcile()
    assert queue_status(store, "org")["allocated"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}
    assert queue_status(store, "org")["requested"] == {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "4"}
    store.bind(NAMESPACE, "p1", "n1")
    podgroups.reconcile()
    assert queues.reconcile() == ["org", "team"]
    assert queue_status(store, "org")["allocated"]["nvidia.com/gpu"] == "4"


def test_a_queue_counts_the_gpus_of_its_pods_dra_claims() -> None:
    """Through the PodGroup statuses: a per-pod claim's GPUs and a shared claim's, once."""
    store = MemoryStore(ManualClock(NOW))
    store.add_many(
        [
            node("n1"),
            queue("team"),
            podgroup("g", queue="team"),
            resource_slice("n1", gpus=3),
            claim_template("one"),
            claim(
                "pair", labels={"kai.scheduler/queue": "team"}, count=2, allocated=[("n1", "gpu-1"), ("n1", "gpu-2")]
            ),
            pod("p0", group="g", node="n1", claims={"gpu": "template:one"}),
            pod("p1", group="g", node="n1", claims={"gpu": "pair"}),
            pod("p2", group="g", node="n1", claims={"gpu": "pair"}),
        ]
    )
    podgroups, queues = PodGroupStatusController(store), QueueStatusController(store)
    podgroups.reconcile()
    queues.reconcile()
    assert queue_status(store, "team")["allocated"]["nvidia.com/gpu"] == "3"
    assert queue_status(store, "team")["requested"]["nvidia.com/gpu"] == "3"
