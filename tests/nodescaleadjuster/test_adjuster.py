"""The node-scale-adjuster over a store: scaling pods appear for unschedulable fractional pods, carry their
constraints, and go when the pods are placed or gone; its state survives a restart; a bad pod is one line."""

from __future__ import annotations

import logging

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import JSON
from kai_scheduler.nodescaleadjuster import pods
from kai_scheduler.nodescaleadjuster.adjuster import NodeScaleAdjuster
from kai_scheduler.store.memory import MemoryStore
from tests.builders import NAMESPACE, NOW, node, pod

NS = pods.DEFAULT_NAMESPACE
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no GPU"}


def waiting(name: str, **kwargs: object) -> JSON:
    out = pod(name, **kwargs)  # type: ignore[arg-type]
    out["status"] = {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]}
    return out


def cluster(*objects: JSON, **settings: object) -> tuple[MemoryStore, ManualClock, NodeScaleAdjuster]:
    clock = ManualClock(NOW)
    store = MemoryStore(clock)
    store.add_many([node("n1"), *objects])
    return store, clock, NodeScaleAdjuster(store, clock, pods.Settings(**settings))  # type: ignore[arg-type]


def scaling(store: MemoryStore) -> list[JSON]:
    items, _ = store.list("pods", NS)
    return sorted(items, key=lambda p: p["metadata"]["name"])


def gpus(sp: JSON) -> int:
    return int(sp["spec"]["containers"][0]["resources"]["requests"][constants.RESOURCE_GPU])


def stands_for(sp: JSON) -> set[str]:
    return set(sp["metadata"]["annotations"][pods.ANNOTATION_FOR].split(","))


def test_fractions_of_unschedulable_pods_become_whole_gpu_scaling_pods() -> None:
    store, _, nsa = cluster(
        waiting("a", fraction=0.5),
        waiting("b", fraction=0.5),
        waiting("c", fraction=0.3),
        waiting("m", gpu_memory=2000),  # counts as --gpu-memory-to-fraction-ratio (0.1)
    )
    out = nsa.reconcile()
    made = scaling(store)
    assert len(out.created) == len(made) == 2
    assert sum(gpus(sp) for sp in made) == 2
    assert {frozenset(stands_for(sp)) for sp in made} == {
        frozenset({f"{NAMESPACE}/a", f"{NAMESPACE}/b"}),
        frozenset({f"{NAMESPACE}/c", f"{NAMESPACE}/m"}),
    }
    sp = made[0]
    assert sp["spec"]["schedulerName"] == "default-scheduler"
    assert sp["metadata"]["labels"][pods.APP_LABEL] == pods.APP_LABEL_VALUE
    assert all(k.startswith(pods.MEMBER_LABEL_PREFIX) for k in sp["metadata"]["labels"] if "scaling-pod.kai" in k)
    assert nsa.reconcile().created == []  # nothing more to do


def test_gpu_memory_ratio_is_a_setting() -> None:
    store, _, nsa = cluster(*(waiting(f"m{i}", gpu_memory=1000) for i in range(4)), gpu_memory_to_fraction_ratio=0.5)
    nsa.reconcile()
    assert sum(gpus(sp) for sp in scaling(store)) == 2


def test_only_unschedulable_fractional_pods_of_our_scheduler_count() -> None:
    pending_without_condition = pod("fresh", fraction=0.5)
    pending_without_condition["status"] = {"phase": "Pending"}
    store, _, nsa = cluster(
        pending_without_condition,
        waiting("whole", gpus=1),
        waiting("other", fraction=0.5, scheduler="default-scheduler"),
        pod("running", fraction=0.5, node="n1"),
        waiting("gone", fraction=0.5, deleted_at=NOW + 30),
    )
    nsa.reconcile()
    assert scaling(store) == []


def test_scaling_pods_copy_the_constraints_and_pods_of_different_constraints_never_share() -> None:
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    term = {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]}]}
    store, _, nsa = cluster(
        waiting("a", fraction=0.25, node_selector={"pool": "big"}, tolerations=[toleration]),
        waiting("b", fraction=0.25, node_selector={"pool": "big"}, tolerations=[toleration]),
        waiting("c", fraction=0.25, node_affinity=[term]),
        waiting("d", fraction=0.25),
    )
    nsa.reconcile()
    made = {frozenset(stands_for(sp)): sp for sp in scaling(store)}
    assert set(made) == {
        frozenset({f"{NAMESPACE}/a", f"{NAMESPACE}/b"}),
        frozenset({f"{NAMESPACE}/c"}),
        frozenset({f"{NAMESPACE}/d"}),
    }
    big = made[frozenset({f"{NAMESPACE}/a", f"{NAMESPACE}/b"})]["spec"]
    assert big["nodeSelector"] == {"pool": "big"} and big["tolerations"] == [toleration]
    aff = made[frozenset({f"{NAMESPACE}/c"})]["spec"]["affinity"]["nodeAffinity"]
    assert aff["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [term]
    assert "nodeSelector" not in made[frozenset({f"{NAMESPACE}/d"})]["spec"]


def test_num_devices_asks_that_many_gpus() -> None:
    store, _, nsa = cluster(
        waiting("a", fraction=0.5, annotations={constants.ANNOTATION_GPU_FRACTION_NUM_DEVICES: "2"}),
    )
    nsa.reconcile()
    (sp,) = scaling(store)
    assert gpus(sp) == 2


def test_scaling_pods_vanish_when_their_pods_are_placed_or_gone() -> None:
    store, _, nsa = cluster(waiting("a", fraction=0.5), waiting("b", fraction=0.5), waiting("c", fraction=0.7))
    nsa.reconcile()
    assert len(scaling(store)) == 2
    store.bind(NAMESPACE, "a", "n1")  # one of two placed: its scaling pod still stands for b
    nsa.reconcile()
    assert len(scaling(store)) == 2
    store.bind(NAMESPACE, "b", "n1")
    store.delete("pods", "c", NAMESPACE, grace_period_seconds=0)
    out = nsa.reconcile()
    assert len(out.deleted) == 2 and scaling(store) == []


def test_a_pod_that_turns_schedulable_again_loses_its_scaling_pod() -> None:
    store, _, nsa = cluster(waiting("a", fraction=0.5))
    nsa.reconcile()
    store.patch("pods", "a", NAMESPACE, {"status": {"conditions": []}}, "status")
    nsa.reconcile()
    assert scaling(store) == []


def test_a_new_pod_joins_a_scaling_pod_with_room() -> None:
    store, _, nsa = cluster(waiting("a", fraction=0.5))
    nsa.reconcile()
    store.create(waiting("b", fraction=0.25))
    out = nsa.reconcile()
    (sp,) = scaling(store)
    assert out.extended == [sp["metadata"]["name"]] and out.created == []
    assert stands_for(sp) == {f"{NAMESPACE}/a", f"{NAMESPACE}/b"}
    assert f"{pods.MEMBER_LABEL_PREFIX}pod-{NAMESPACE}-b" in sp["metadata"]["labels"]


def test_a_restarted_adjuster_rebuilds_its_state_from_the_scaling_pods() -> None:
    store, clock, first = cluster(waiting("a", fraction=0.5), waiting("b", fraction=0.25))
    first.reconcile()
    before = scaling(store)
    again = NodeScaleAdjuster(store, clock, pods.Settings())
    out = again.reconcile()
    assert out.created == [] and out.deleted == [] and out.extended == []
    assert scaling(store) == before
    store.bind(NAMESPACE, "a", "n1")
    store.bind(NAMESPACE, "b", "n1")
    assert len(again.reconcile().deleted) == 1 and scaling(store) == []


def test_a_scaling_pod_bound_to_a_node_is_deleted_and_its_pods_cool_down() -> None:
    store, clock, nsa = cluster(waiting("a", fraction=0.5), cool_down_seconds=60)
    nsa.reconcile()
    (sp,) = scaling(store)
    store.bind(NS, sp["metadata"]["name"], "n1")  # the default scheduler placed it on new capacity
    out = nsa.reconcile()
    assert out.deleted == [sp["metadata"]["name"]] and scaling(store) == []
    clock.advance(30)
    assert nsa.reconcile().created == []  # the pod gets its chance on the new node
    clock.advance(31)
    assert len(nsa.reconcile().created) == 1  # still unschedulable after the cool-down: ask again


def test_a_bad_pod_is_one_line_and_the_others_go_on(caplog: pytest.LogCaptureFixture) -> None:
    bad = waiting("bad", annotations={constants.ANNOTATION_GPU_FRACTION: "lots"})
    store, _, nsa = cluster(bad, waiting("good", fraction=0.5))
    with caplog.at_level(logging.WARNING):
        nsa.reconcile()
        nsa.reconcile()
    lines = [r.getMessage() for r in caplog.records if "bad" in r.getMessage()]
    assert len(lines) == 1
    assert f"pod {NAMESPACE}/bad" in lines[0] and "gpu-fraction" in lines[0]
    assert [stands_for(sp) for sp in scaling(store)] == [{f"{NAMESPACE}/good"}]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="--gpu-memory-to-fraction-ratio"):
        pods.Settings(gpu_memory_to_fraction_ratio=0).check()
    with pytest.raises(ValueError, match="--cool-down-seconds"):
        pods.Settings(cool_down_seconds=-1).check()


def test_a_scaling_pod_that_gains_a_member_drops_the_labels_of_those_placed() -> None:
    store, _, nsa = cluster(waiting("a", fraction=0.5), waiting("b", fraction=0.25))
    nsa.reconcile()
    store.bind(NAMESPACE, "a", "n1")
    store.create(waiting("c", fraction=0.5))
    out = nsa.reconcile()
    (sp,) = scaling(store)
    assert out.extended == [sp["metadata"]["name"]]
    members = {k for k in sp["metadata"]["labels"] if k.startswith(pods.MEMBER_LABEL_PREFIX)}
    assert members == {f"{pods.MEMBER_LABEL_PREFIX}pod-{NAMESPACE}-b", f"{pods.MEMBER_LABEL_PREFIX}pod-{NAMESPACE}-c"}
    assert stands_for(sp) == {f"{NAMESPACE}/b", f"{NAMESPACE}/c"}


def test_the_gauges_follow_the_passes() -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    clock = ManualClock(NOW)
    store = MemoryStore(clock)
    store.add_many([node("n1"), waiting("a", fraction=0.5), waiting("b", fraction=0.75)])
    nsa = NodeScaleAdjuster(store, clock, pods.Settings(), registry)
    nsa.reconcile()

    def value(name: str) -> float | None:
        return registry.get_sample_value(f"kai_node_scale_adjuster_{name}")

    assert (value("unschedulable_fractional_pods"), value("scaling_pods"), value("scaling_gpus")) == (2, 2, 2)
    store.bind(NAMESPACE, "a", "n1")
    store.bind(NAMESPACE, "b", "n1")
    nsa.reconcile()
    assert (value("unschedulable_fractional_pods"), value("scaling_pods"), value("scaling_gpus")) == (0, 0, 0)
