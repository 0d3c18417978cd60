"""Building the fake nodes: names, capacity, labels, topology; creating and adopting them."""

from __future__ import annotations

import re

import pytest

from kai_scheduler.api import Node
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.api.fields import parse_time
from kai_scheduler.fakenodes import fleet
from kai_scheduler.fakenodes.heartbeat import Heartbeat
from kai_scheduler.fakenodes.nodes import (
    LABEL_FAKE_NODE,
    LABEL_RACK,
    LABEL_ZONE,
    FleetSpec,
    build_nodes,
    parse_label,
    parse_taint,
)
from kai_scheduler.store.interface import JSON, NotFound
from kai_scheduler.store.memory import MemoryStore

NOW = parse_time("2026-01-01T00:00:00Z")


def test_nodes_have_gpu_capacity_and_the_labels_kai_reads() -> None:
    spec = FleetSpec(
        count=2,
        gpus=4,
        gpu_memory_mib=40960,
        cpu="64",
        memory="512Gi",
        pods=50,
        node_pool="pool-a",
        labels={"team": "x"},
    )
    nodes = build_nodes(spec, NOW)
    assert [n["metadata"]["name"] for n in nodes] == ["kai-fake-node-0", "kai-fake-node-1"]
    node = nodes[1]
    assert node["status"]["capacity"] == {"cpu": "64", "memory": "512Gi", "pods": "50", "nvidia.com/gpu": "4"}
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.count"] == "4"
    assert labels["nvidia.com/gpu.memory"] == "40960"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert labels["node-role.kubernetes.io/gpu-worker"] == ""
    assert labels["kai.scheduler/node-pool"] == "pool-a"
    assert labels["kubernetes.io/hostname"] == "kai-fake-node-1"
    assert labels["team"] == "x"
    assert labels[LABEL_FAKE_NODE] == "true"
    assert LABEL_RACK not in labels and LABEL_ZONE not in labels
    parsed = Node.from_dict(node)  # the scheduler reads them as intended
    assert parsed.ready and parsed.gpu_memory_mib == 40900  # floored to a multiple of 100 (§6)
    assert parsed.allocatable["nvidia.com/gpu"] == 4


def test_cpu_only_nodes_have_no_gpu_labels() -> None:
    labels = build_nodes(FleetSpec(gpus=0), NOW)[0]["metadata"]["labels"]
    assert "nvidia.com/gpu.count" not in labels
    assert "nvidia.com/gpu" not in build_nodes(FleetSpec(gpus=0), NOW)[0]["status"]["capacity"]


def test_racks_nest_in_zones() -> None:
    nodes = build_nodes(FleetSpec(count=8, rack_size=2, zone_size=4), NOW)
    racks = [n["metadata"]["labels"][LABEL_RACK] for n in nodes]
    zones = [n["metadata"]["labels"][LABEL_ZONE] for n in nodes]
    assert racks == ["rack-0", "rack-0", "rack-1", "rack-1", "rack-2", "rack-2", "rack-3", "rack-3"]
    assert zones == ["zone-0"] * 4 + ["zone-1"] * 4


def test_a_user_label_overrides_a_derived_one_but_not_the_marker() -> None:
    spec = FleetSpec(labels={"nvidia.com/gpu.product": "H100", LABEL_FAKE_NODE: "false"})
    labels = build_nodes(spec, NOW)[0]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "H100"
    assert labels[LABEL_FAKE_NODE] == "true"


def test_taints() -> None:
    spec = FleetSpec(taints=(parse_taint("gpu=true:NoSchedule"), parse_taint("dedicated:NoExecute")))
    assert build_nodes(spec, NOW)[0]["spec"]["taints"] == [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (FleetSpec(cpu="lots"), "--cpu: invalid quantity 'lots' (want e.g. 128, 500m, 1Ti)"),
        (FleetSpec(memory="1TB"), "--memory: invalid quantity '1TB' (did you mean 1Ti or 1T?)"),
        (FleetSpec(memory="-1Gi"), "--memory: must not be negative"),
        (FleetSpec(count=-1), "--count: must be at least 0"),
        (FleetSpec(prefix="Bad_Prefix"), "--prefix"),
        (FleetSpec(node_pool="not ok"), "--node-pool: invalid value 'not ok'"),
        (FleetSpec(rack_size=4, zone_size=6), "--zone-size: must be a multiple of --rack-size (4)"),
    ],
)
def test_bad_specs_are_one_line_naming_the_flag(spec: FleetSpec, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        spec.check()


@pytest.mark.parametrize("text", ["novalue", "bad key=v", "k=" + "x" * 64, "/k=v"])
def test_bad_labels(text: str) -> None:
    with pytest.raises(ValueError, match="--label"):
        parse_label(text)


@pytest.mark.parametrize("text", ["k=v", "k=v:Sometimes", ":NoSchedule"])
def test_bad_taints(text: str) -> None:
    with pytest.raises(ValueError, match="--taint"):
        parse_taint(text)


def test_labels_may_have_a_prefix_and_an_empty_value() -> None:
    assert parse_label("example.com/role=") == ("example.com/role", "")


def test_a_restart_adopts_the_nodes_and_leaves_real_nodes_alone() -> None:
    store = MemoryStore(ManualClock(NOW))
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kai-fake-node-2"}, "status": {}})
    first = fleet.ensure(store, build_nodes(FleetSpec(count=2), NOW))
    assert first.created == ["kai-fake-node-0", "kai-fake-node-1"] and not first.adopted
    store.patch("nodes", "kai-fake-node-0", "", {"metadata": {"labels": {"kept": "yes"}}})
    again = fleet.ensure(store, build_nodes(FleetSpec(count=3, gpus=2), NOW))
    assert again.created == [] and again.adopted == ["kai-fake-node-0", "kai-fake-node-1"]
    assert again.foreign == ["kai-fake-node-2"]
    node = store.get("nodes", "kai-fake-node-0")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["labels"]["kept"] == "yes"
    assert node["metadata"]["uid"] == again.uids["kai-fake-node-0"]
    assert LABEL_FAKE_NODE not in store.get("nodes", "kai-fake-node-2")["metadata"].get("labels", {})


def test_delete_removes_the_nodes_and_their_leases() -> None:
    store = MemoryStore(ManualClock(NOW))
    result = fleet.ensure(store, build_nodes(FleetSpec(count=2), NOW))
    store.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kai-fake-node-0", "namespace": "kube-node-lease"},
            "spec": {},
        }
    )
    assert fleet.delete(store, result.played, "kube-node-lease") == 2
    assert store.list("nodes")[0] == [] and store.list("leases")[0] == []
    with pytest.raises(NotFound):
        store.get("nodes", "kai-fake-node-1")


NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


class TaintingStore(MemoryStore):
    """A store that taints every new Node not-ready, as the API server's TaintNodesByCondition admission does."""

    def create(self, obj: JSON) -> JSON:
        if obj.get("kind") == "Node":
            spec = obj.setdefault("spec", {})
            spec["taints"] = [*(spec.get("taints") or []), NOT_READY]
        return super().create(obj)


def _taint_keys(store: MemoryStore, name: str) -> list[str]:
    return [t["key"] for t in store.get("nodes", name).get("spec", {}).get("taints") or []]


def test_a_ready_fake_node_drops_the_not_ready_taint_the_api_server_put_on_it() -> None:
    store = TaintingStore(ManualClock(NOW))
    spec = FleetSpec(count=2, taints=(parse_taint("dedicated=gpu:NoSchedule"),))
    fleet.ensure(store, build_nodes(spec, NOW))
    assert _taint_keys(store, "kai-fake-node-0") == ["dedicated"]
    assert _taint_keys(store, "kai-fake-node-1") == ["dedicated"]


def test_a_node_without_condition_taints_is_not_written_again() -> None:
    store = MemoryStore(ManualClock(NOW))
    fleet.ensure(store, build_nodes(FleetSpec(count=1), NOW))
    node = store.get("nodes", "kai-fake-node-0")
    assert fleet.clear_condition_taints(store, node) is node
    assert store.get("nodes", "kai-fake-node-0")["metadata"]["resourceVersion"] == node["metadata"]["resourceVersion"]


def test_clearing_a_taint_from_a_stale_copy_keeps_a_taint_added_meanwhile() -> None:
    store = MemoryStore(ManualClock(NOW))
    fleet.ensure(store, build_nodes(FleetSpec(count=1), NOW))
    stale = store.patch("nodes", "kai-fake-node-0", "", {"spec": {"taints": [NOT_READY]}})
    store.patch(
        "nodes",
        "kai-fake-node-0",
        "",
        {"spec": {"taints": [NOT_READY, {"key": "maintenance", "effect": "NoSchedule"}]}},
    )
    fleet.clear_condition_taints(store, stale)
    assert _taint_keys(store, "kai-fake-node-0") == ["maintenance"]


def test_a_heartbeat_clears_a_not_ready_taint_added_after_creation() -> None:
    clock = ManualClock(NOW)
    store = MemoryStore(clock)
    fleet.ensure(store, build_nodes(FleetSpec(count=1), NOW))
    store.patch("nodes", "kai-fake-node-0", "", {"spec": {"taints": [NOT_READY]}})
    Heartbeat(store, clock, ["kai-fake-node-0"]).beat()
    assert _taint_keys(store, "kai-fake-node-0") == []
